"""The apptainer backend. Apptainer cannot be installed here (not in Debian 12, not on PyPI): the
backend is tested by the exact command lines it builds, and end to end through the execute step
with a stand-in ``apptainer`` that records its argv and runs the command (no isolation of its
own: it checks the backend's plumbing, statuses and limits, not apptainer)."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import pytest
from sandbox_access import assert_outputs_follow, assert_read_and_written, paper_agent_execute

from sabench.execute import execute_run
from sabench.sandbox import Mount, SandboxSpec, get_backend
from sabench.sandbox.apptainer import (
    DEFINITION,
    ApptainerSandbox,
    build_argv,
    build_default_image,
    image_source,
    pull_argv,
    sif_name,
)
from sabench.sandbox.apptainer import main as apptainer_main

REPO = Path(__file__).resolve().parents[1]

FAKE = r"""#!PYTHON
# A stand-in for apptainer: logs its argv, then runs `exec`'s command in the /submission bind
# with only the --env variables (what --cleanenv leaves).
import json, os, sys
args = sys.argv[1:]
with open(os.path.join(os.path.dirname(sys.argv[0]), "argv.jsonl"), "a") as fh:
    fh.write(json.dumps(args) + "\n")
if args[:1] == ["--version"]:
    print("apptainer version 1.3.4"); sys.exit(0)
if args[:1] == ["pull"]:
    open(args[-2], "w").write("SIF of " + args[-1]); sys.exit(0)
if args[:1] == ["build"]:  # from a definition file, whose %files are relative to the cwd
    if not os.path.isfile("envs/sandbox.txt"):
        print("FATAL:   envs/sandbox.txt: no such file", file=sys.stderr); sys.exit(255)
    open(args[-2], "w").write("SIF of " + open(args[-1]).read()); sys.exit(0)
assert args[0] == "exec", args
with_value = {"--pwd", "--bind", "--network", "--memory", "--memory-swap", "--pids-limit", "--env"}
i, binds, env = 1, {}, {"PATH": "/usr/local/bin:/usr/bin:/bin"}
while args[i].startswith("--"):
    if args[i] in with_value:
        if args[i] == "--bind":
            src, dst, _mode = args[i + 1].split(":")
            binds[dst] = src
        if args[i] == "--env":
            k, v = args[i + 1].split("=", 1); env[k] = v
        i += 2
    else:
        i += 1
image, command = args[i], args[i + 1:]
if "FATAL" in image:
    print("FATAL:   could not open image " + image, file=sys.stderr); sys.exit(255)
os.chdir(binds["/submission"])
os.execvpe(command[0], command, env)
"""


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    exe = tmp_path / "bin" / "apptainer"
    exe.parent.mkdir()
    exe.write_text(FAKE.replace("PYTHON", sys.executable))
    exe.chmod(0o755)
    log = exe.parent / "argv.jsonl"  # the stand-in writes its argv beside itself
    monkeypatch.setenv("SABENCH_APPTAINER", str(exe))
    monkeypatch.setenv("SABENCH_IMAGE_CACHE", str(tmp_path / "cache"))
    return log


def spec_for(tmp_path: Path, **kw: object) -> SandboxSpec:
    paper = tmp_path / "paper"
    paper.mkdir(exist_ok=True)
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return SandboxSpec(
        command=["bash", "reproduce.sh"],
        workdir=work,
        ro_mounts=[Mount(paper, "/paper")],
        mem_mb=2048,
        pids=256,
        **kw,  # type: ignore[arg-type]
    )


def test_exec_argv_is_contained_clean_and_offline(tmp_path: Path) -> None:
    spec = spec_for(tmp_path, env={"SEED": "1"})
    argv = ApptainerSandbox(apptainer="/opt/bin/apptainer").build_argv(spec, "/sif/py.sif")
    root = ["--no-privs"] if os.geteuid() == 0 else []
    assert argv == [
        "/opt/bin/apptainer", "exec", "--containall", "--cleanenv", *root,
        "--pwd", "/submission",
        "--bind", f"{tmp_path}/work:/submission:rw",
        "--bind", f"{tmp_path}/paper:/paper:ro",
        "--net", "--network", "none",
        "--memory", "2048M", "--memory-swap", "2048M", "--pids-limit", "256",
        "--env", "TMPDIR=/tmp", "--env", "LANG=C.UTF-8", "--env", "SEED=1",
        "/sif/py.sif", "bash", "reproduce.sh",
    ]  # fmt: skip


def test_gpu_argv_has_nv_and_the_allocated_devices(tmp_path: Path) -> None:
    spec = spec_for(tmp_path, gpus=["1", "3"])
    argv = ApptainerSandbox(apptainer="apptainer").build_argv(
        spec, "/sif/cuda.sif", gpu_ids=["1", "3"]
    )
    assert "--nv" in argv and argv[argv.index("--nv") + 1 :].count("--env") == 3
    assert "CUDA_VISIBLE_DEVICES=1,3" in argv
    assert argv[-3:] == ["/sif/cuda.sif", "bash", "reproduce.sh"]


def test_site_settings_relax_what_the_site_forbids(tmp_path: Path) -> None:
    spec = spec_for(
        tmp_path,
        network="full",
        isolation={"read_only_paper": False},
        options={"apptainer_limits": False},
    )
    backend = ApptainerSandbox(apptainer="apptainer")
    argv = backend.build_argv(spec, "x.sif")
    assert "--net" not in argv and "--memory" not in argv and "--pids-limit" not in argv
    assert f"{tmp_path}/paper:/paper:rw" in argv
    spec = spec_for(tmp_path, options={"apptainer_net": False})
    assert "--net" not in backend.build_argv(spec, "x.sif")
    iso = backend.describe(spec)["isolation"]
    assert "WEAKENED: network NOT isolated (apptainer_net: false)" in iso


def test_images_sif_files_and_registry_refs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SABENCH_IMAGE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SABENCH_APPTAINER_IMAGE", raising=False)
    assert image_source("docker://python:3.11-slim") == ("docker://python:3.11-slim", False)
    assert image_source("python:3.11-slim") == ("docker://python:3.11-slim", False)
    assert image_source("oras://ghcr.io/x/y:1") == ("oras://ghcr.io/x/y:1", False)
    sif = tmp_path / "img.sif"
    assert image_source(str(sif)) == (str(sif), True)
    with pytest.raises(ValueError, match=r"needs runtime\.image"):
        image_source(None)
    name = sif_name("docker://python:3.11-slim")
    assert name.startswith("python_3.11-slim-") and name.endswith(".sif")
    assert name != sif_name("docker://python:3.12-slim")
    assert pull_argv("apptainer", "docker://a/b:1", tmp_path / "b.sif") == [
        "apptainer", "pull", "--disable-cache", str(tmp_path / "b.sif"), "docker://a/b:1",
    ]  # fmt: skip


def test_auto_passes_over_apptainer_without_a_default_image(
    fake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """auto cannot see runtime.image: apptainer counts only with an image it can find."""
    monkeypatch.delenv("SABENCH_APPTAINER_IMAGE", raising=False)
    ok, why = ApptainerSandbox().available()
    assert not ok and "has no default image" in why and "sabench-python.sif" in why
    sif = tmp_path / "cache" / "apptainer" / "sabench-python.sif"
    sif.parent.mkdir(parents=True)
    sif.write_text("fake")
    assert ApptainerSandbox().available() == (True, "")
    assert image_source(None) == (str(sif), True)


def test_the_image_is_built_without_docker(
    fake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`python -m sabench.sandbox.apptainer build`: `apptainer build` (--fakeroot without root)
    of images/python/sabench-python.def, run from the repository root, into the place where
    `auto` and `runtime.image: null` find the project's image."""
    monkeypatch.delenv("SABENCH_APPTAINER_IMAGE", raising=False)
    monkeypatch.chdir(tmp_path)  # wherever the user is, the build runs in the checkout
    assert apptainer_main(["build"]) == 0
    sif = tmp_path / "cache" / "apptainer" / "sabench-python.sif"
    assert capsys.readouterr().out.strip() == str(sif)
    assert "%files" in sif.read_text()  # built from the definition file
    (argv,) = [json.loads(line) for line in fake.read_text().splitlines() if '"build"' in line]
    fakeroot = ["--fakeroot"] if os.geteuid() != 0 else []
    assert argv[:-2] == ["build", *fakeroot] and argv[-1] == "images/python/sabench-python.def"
    assert not list(sif.parent.glob("*.partial"))
    assert ApptainerSandbox().available() == (True, "")
    assert image_source(None) == (str(sif), True)
    assert build_argv("apptainer", sif)[-1] == str(DEFINITION)


def test_a_failed_build_leaves_no_image(fake: Path, tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="not found: run this from a sabench checkout"):
        build_default_image(tmp_path, tmp_path / "out.sif")
    # a checkout whose envs/sandbox.txt is missing: apptainer fails, and no SIF is left
    (tmp_path / DEFINITION).parent.mkdir(parents=True)
    (tmp_path / DEFINITION).write_text((REPO / DEFINITION).read_text())
    with pytest.raises(RuntimeError, match="apptainer build exited 255"):
        build_default_image(tmp_path, tmp_path / "out.sif")
    assert not list(tmp_path.glob("out.sif*"))


def test_the_definition_file_is_the_dockerfile_s_environment() -> None:
    """The apptainer image and the docker image run reproduce.sh with the same Python: the same
    base, the same pinned packages (envs/sandbox.txt, copied in at build time), the same venv
    first on PATH."""
    definition = (REPO / DEFINITION).read_text()
    dockerfile = (REPO / "images" / "python" / "Dockerfile").read_text()
    base = re.search(r"^ARG BASE=(\S+)", dockerfile, re.MULTILINE).group(1)
    assert re.search(rf"^Bootstrap: docker\nFrom: {re.escape(base)}$", definition, re.MULTILINE)
    assert re.search(r"^\s+envs/sandbox.txt /opt/sabench/requirements.txt$", definition, re.M)
    assert "-r /opt/sabench/requirements.txt" in definition
    docker_path = re.search(r"ENV PATH=(\S+)", dockerfile).group(1)
    assert f"export PATH={docker_path}" in definition
    assert "/opt/sabench-env" in docker_path


def test_listed_apptainer_needs_no_image_yet(fake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Named in a list (the slurm profile), apptainer pulls or builds its image in the run."""
    monkeypatch.delenv("SABENCH_APPTAINER_IMAGE", raising=False)
    assert not ApptainerSandbox().available()[0]
    assert get_backend(["apptainer", "bwrap"]).name == "apptainer"


def test_a_registry_image_is_pulled_once_into_the_cache(fake: Path, tmp_path: Path) -> None:
    backend = get_backend("apptainer")
    spec = spec_for(tmp_path, image="docker://python:3.11-slim", options={"image_cache": None})
    first = backend.ensure_image(spec)  # type: ignore[attr-defined]
    second = backend.ensure_image(spec)  # type: ignore[attr-defined]
    assert first == second and first.startswith(str(tmp_path / "cache" / "apptainer"))
    pulls = [json.loads(line) for line in fake.read_text().splitlines() if '"pull"' in line]
    assert len(pulls) == 1 and pulls[0][-1] == "docker://python:3.11-slim"


def test_not_installed_is_unavailable_and_a_sandbox_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SABENCH_APPTAINER", str(tmp_path / "nope"))
    backend = ApptainerSandbox()
    ok, why = backend.available()
    assert not ok and "not installed" in why
    assert get_backend("apptainer").name == "apptainer"
    res = backend.run(spec_for(tmp_path, image="x.sif"), tmp_path / "log")
    assert res.status == "sandbox_error" and "apptainer unavailable" in res.message


def _run(tmp_path: Path, script: str, **settings: object) -> dict:
    sub = tmp_path / "submission"
    sub.mkdir(parents=True)
    (sub / "reproduce.sh").write_text(script)
    sif = tmp_path / "py.sif"
    sif.write_text("fake")
    run = tmp_path / "run"
    return execute_run(
        sub,
        run / "executed",
        run / "execution.json",
        run / "execution.log",
        {"backend": "apptainer", "image": str(sif), "time_limit_s": 30, **settings},
    )


def test_through_the_execute_step(
    fake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-for-test")
    record = _run(tmp_path, 'echo "{\\"acc\\": 1}" > results.json\nenv > env.txt\n')
    assert record["status"] == "ok", record
    assert record["backend"] == "apptainer" and record["metrics"] == {"acc": 1}
    assert record["image"].endswith("py.sif")
    env = (tmp_path / "run" / "executed" / "env.txt").read_text()
    assert "sk-secret" not in env and "TMPDIR=/tmp" in env
    argv = [json.loads(line) for line in fake.read_text().splitlines() if '"exec"' in line][-1]
    assert argv[:3] == ["exec", "--containall", "--cleanenv"]
    assert "--network" in argv and argv[argv.index("--network") + 1] == "none"


def test_statuses_failed_timeout_and_engine_fatal(fake: Path, tmp_path: Path) -> None:
    assert _run(tmp_path / "a", "exit 3\n")["status"] == "failed"
    t0 = time.monotonic()
    record = _run(tmp_path / "b", "sleep 10000\n", time_limit_s=2)
    assert record["status"] == "timeout" and time.monotonic() - t0 < 10
    (tmp_path / "c").mkdir()
    sif = tmp_path / "FATAL.sif"
    sif.write_text("")
    record = _run(tmp_path / "c", "true\n", image=str(sif))
    assert record["status"] == "sandbox_error" and "could not open image" in record["message"]


def test_gpus_on_a_host_without_gpus_fail_fast(
    fake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SABENCH_NVIDIA_SMI", str(tmp_path / "absent"))
    t0 = time.monotonic()
    record = _run(tmp_path, "sleep 100\n", gpus=1)
    assert record["status"] == "sandbox_error" and time.monotonic() - t0 < 5
    assert "asks for GPUs but this host has none" in record["message"]


#: The stand-in's last step made a container as apptainer makes one for the calling user: only
#: its binds over a read-only system, no capabilities (``--no-privs`` as root), in bwrap.
CONTAINED = r"""
bw = ["bwrap", "--unshare-all", "--unshare-user", "--uid", str(os.geteuid()),
      "--gid", str(os.getegid()), "--cap-drop", "ALL", "--die-with-parent", "--clearenv"]
for k, v in env.items():
    bw += ["--setenv", k, v]
for d in ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc"):
    if os.path.islink(d):
        bw += ["--symlink", os.readlink(d), d]
    elif os.path.isdir(d):
        bw += ["--ro-bind", d, d]
bw += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
for dst, src in binds.items():
    bw += ["--ro-bind" if modes[dst] == "ro" else "--bind", src, dst]
os.execvp("bwrap", bw + ["--chdir", "/submission", "--", *command])
"""


@pytest.mark.bwrap
def test_the_calling_user_reads_the_ingested_paper_and_writes_its_submission(
    fake: Path, tmp_path: Path
) -> None:
    """The command lines bind ingest's view read-only at /paper and the agent's (then the
    executed) folder read-write at /submission, for the calling user without capabilities; run
    so (the stand-in contains them in bwrap), the agent and reproduce.sh read and write them."""
    from sabench.sandbox.common import which

    if which("bwrap") is None:
        pytest.skip("bwrap is not installed")
    exe = fake.with_name("apptainer")
    text = exe.read_text()
    for old, new in (
        ("binds[dst] = src", "binds[dst] = src; modes[dst] = _mode"),
        ("i, binds, env = 1, {}, ", "modes = {}\ni, binds, env = 1, {}, "),
        ("os.execvpe(command[0], command, env)\n", CONTAINED),
    ):
        assert old in text
        text = text.replace(old, new)
    exe.write_text(text)
    sif = tmp_path / "agent.sif"
    sif.write_text("fake")
    out = paper_agent_execute(
        tmp_path,
        0o022,
        {"backend": "apptainer", "image": str(sif)},
        agent={"image": str(sif)},
    )
    assert_read_and_written(out)
    assert_outputs_follow(out, 0o022)
    runs = [json.loads(line) for line in fake.read_text().splitlines() if '"exec"' in line]
    assert len(runs) == 3  # the agent, then reproduce.sh, then its re-seeded run (sabench.reseed)
    view = out["view"].resolve()
    for argv, target in zip(runs[:2], ("submission", "executed"), strict=True):
        binds = [argv[i + 1] for i, a in enumerate(argv) if a == "--bind"]
        # the agent reads the paper; reproduce.sh is shown none (docs/checks.md, threat model)
        assert (f"{view}:/paper:ro" in binds) == (target == "submission"), argv
        assert not any(b.split(":")[1] == "/paper" for b in binds if target == "executed"), argv
        (work,) = [b for b in binds if b.endswith(":/submission:rw")]
        assert Path(work.split(":")[0]).parent == out["run"].resolve(), work
        assert Path(work.split(":")[0]).name.startswith((f".{target}.tmp-", target)), work
        assert ("--no-privs" in argv) == (os.geteuid() == 0)
        assert not {"--fakeroot", "--userns", "--keep-privs"} & set(argv), argv
