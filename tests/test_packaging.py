"""The package as `pip install .` gives it: every third-party import of sabench/ is a declared
dependency, both locks pin exactly what is installed, and the wheel runs outside the checkout."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pandas as pd
from openai_server import ScriptedServer

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)$")


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared(requirements: list[str]) -> set[str]:
    return {norm(re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0]) for r in requirements}


#: Modules that run inside the sandbox, with the sandbox's Python (envs/sandbox.txt), not sabench's.
SANDBOX_SIDE = (
    "sabench/sandbox/trace_site.py",
    "sabench/sandbox/trace_wrapping.py",
    "sabench/sandbox/trace_join.py",
)


def third_party_imports(folder: Path, only: tuple[str, ...] = ()) -> dict[str, str]:
    """Top-level module -> the first file importing it, for every non-stdlib absolute import
    (of the files named in ``only``, else of all but the sandbox-side ones)."""
    found: dict[str, str] = {}
    for path in sorted(folder.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if (rel not in only) if only else (rel in SANDBOX_SIDE):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "sabench":
                    found.setdefault(top, str(path.relative_to(REPO)))
    return found


def lock(name: str) -> dict[str, str]:
    pins = {}
    for line in (REPO / name).read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = PIN.match(line)
        assert match, f"{name}: not an exact pin: {line!r}"
        pins[norm(match.group(1))] = match.group(2)
    return pins


def test_every_import_of_the_package_is_a_dependency() -> None:
    runtime = declared(PYPROJECT["project"]["dependencies"])
    distributions = importlib.metadata.packages_distributions()
    missing = {
        module: where
        for module, where in third_party_imports(REPO / "sabench").items()
        if not runtime & {norm(d) for d in distributions.get(module, [module])}
    }
    assert not missing, f"imported but not in [project] dependencies: {missing}"
    assert {"litellm", "snakemake", "jinja2", "pyyaml", "pandas", "pyarrow", "docker"} <= runtime


def test_sandbox_side_imports_are_in_the_sandbox_environment() -> None:
    """What runs inside the sandbox imports only the standard library and envs/sandbox.txt."""
    pinned = {norm(name) for name in lock("envs/sandbox.txt")}
    imported = third_party_imports(REPO / "sabench", only=SANDBOX_SIDE)
    assert imported, "the trace site imports coverage: the scan found nothing"
    assert {norm(m) for m in imported} <= pinned, (imported, pinned)


def test_extras() -> None:
    """dev covers what the tests, scripts and benchmarks import; slurm is the executor plugin."""
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert {"pytest", "ruff", "snakefmt"} <= declared(extras["dev"])
    assert declared(extras["slurm"]) == {"snakemake-executor-plugin-slurm"}
    everything = declared(PYPROJECT["project"]["dependencies"]) | declared(extras["dev"])
    distributions = importlib.metadata.packages_distributions()
    folders = [REPO / "tests", REPO / "scripts", REPO / "benchmarks"]
    local = {p.stem for folder in folders for p in folder.rglob("*.py")}  # helpers they import
    missing = {
        module: where
        for folder in folders
        for module, where in third_party_imports(folder).items()
        if module not in local
        and not everything & {norm(d) for d in distributions.get(module, [module])}
    }
    assert not missing, f"imported but in neither dependencies nor the dev extra: {missing}"


def test_locks_pin_pyproject_and_agree() -> None:
    runtime, dev = lock("requirements.lock"), lock("requirements-dev.lock")
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert declared(PYPROJECT["project"]["dependencies"]) | declared(extras["slurm"]) <= set(
        runtime
    )
    assert declared(extras["dev"]) <= set(dev)
    assert not declared(extras["dev"]) & set(runtime)  # development tools stay out of runtime
    assert {k: dev[k] for k in runtime} == runtime


def test_the_environment_is_the_lock() -> None:
    """`make setup` installs the locks: what runs the tests is what they pin."""
    wrong = {}
    for name, version in lock("requirements-dev.lock").items():
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            installed = None
        if installed != version:
            wrong[name] = (version, installed)
    assert not wrong, f"pinned vs installed (rerun make setup): {wrong}"


def test_licence() -> None:
    assert PYPROJECT["project"]["license"] == "MIT"
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("MIT License") and "the sabench authors" in text


def test_wheel_judges_with_an_llm_outside_the_checkout(tmp_path: Path) -> None:
    """The built wheel, installed without the checkout, imports SAUs and judges a run with an
    llm: judge over real HTTP; its dependencies come from this environment, after the wheel."""
    pip = [sys.executable, "-m", "pip"]
    built = subprocess.run(
        [*pip, "wheel", "-q", "--no-deps", str(REPO), "-w", str(tmp_path / "dist")],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("sabench-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
    assert any(n.startswith("sabench/templates/judge_") for n in names)
    assert {"sabench/templates/report/run.html.j2", "sabench/templates/report/report.js"} <= set(
        names
    )
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    requires = declared(re.findall(r"^Requires-Dist: (.+)$", metadata.decode(), re.M))
    assert declared(PYPROJECT["project"]["dependencies"]) <= requires
    target = tmp_path / "site"
    subprocess.run(
        [*pip, "install", "-q", "--no-deps", "--target", str(target), str(wheel)], check=True
    )
    # -S: no site dir, so neither the venv's editable hook nor the checkout is on sys.path
    deps = next(p for p in sys.path if p.endswith("site-packages"))
    env = {"PYTHONPATH": f"{target}:{deps}", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PATH": ""}

    def installed(*argv: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-S", *argv], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
        return proc.stdout

    where = "import sabench, sabench.judges.llm_judge; print(sabench.__file__)"
    assert installed("-c", where).startswith(str(target))
    paper = REPO / "resources" / "papers" / "ridge-gd"
    installed("-m", "sabench.saus", str(paper), "--out", str(tmp_path / "saus.parquet"))
    run = tmp_path / "runs" / "drifted" / "ridge-gd" / "0"
    shutil.copytree(REPO / "resources" / "submissions" / "drifted" / "ridge-gd", run / "submission")
    agent = {"agent": "drifted", "paper": "ridge-gd", "seed": 0, "status": "replayed"}
    (run / "agent.json").write_text(json.dumps(agent))
    judge = "llm:openai/scripted"
    answer = {"reasoning": "ok", "evidence": [], "verdict": "aligned", "score": 1}
    with ScriptedServer([{"replies": [{"json": answer}]}]) as server:
        out = installed(
            "-m",
            "sabench.judges.run",
            str(run),
            "--saus",
            str(tmp_path / "saus.parquet"),
            "--judge",
            judge,
            "--settings",
            json.dumps({"cache_dir": str(tmp_path / "cache")}),
            "--operational",
            json.dumps({judge: {"api_base": server.url, "max_retries": 0}}),
            "-q",
        )
        requests = server.count
    judged = pd.read_parquet(run / "judge" / "llm-openai_scripted.parquet")
    assert len(judged) == requests > 0 and set(judged["verdict"]) == {"aligned"}, out


def test_snakefile_asks_for_the_snakemake_it_declares() -> None:
    """The Snakefile's min_version is pyproject's lower bound, and the lock satisfies it."""
    wanted = re.search(r'^min_version\("([\d.]+)"\)', (REPO / "Snakefile").read_text(), re.M)
    assert wanted, "Snakefile: no min_version"
    bound = next(r for r in PYPROJECT["project"]["dependencies"] if declared([r]) == {"snakemake"})
    major = wanted.group(1).split(".")[0]
    assert bound == f"snakemake>={major}" and lock("requirements.lock")["snakemake"].startswith(
        f"{major}."
    )
