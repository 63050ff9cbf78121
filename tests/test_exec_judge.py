"""The exec judge: expected results, checks run in a fresh sandbox, bad checks contained, the cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sabench.checks import (
    CheckCache,
    ExpectedError,
    Outcome,
    cache_key,
    match_expected,
    parse_expected,
    run_check,
    tree_digest,
)
from sabench.contracts import UNREACHED_CAP, Evidence
from sabench.errors import UserError
from sabench.execute import arm_trace, snapshot
from sabench.faults import Fault
from sabench.judges.exec_judge import judge_exec, resolve_exec_settings
from sabench.sandbox import get_backend

MODEL = """
import numpy as np

def loss(X, y, w, lam):
    return np.mean((X @ w - y) ** 2) + lam * np.sum(w ** 2)

def stub(x):
    raise NotImplementedError("todo")
"""
GOOD_CHECK = """
import numpy as np
from model import loss
rng = np.random.default_rng(0)
X, y, w = rng.normal(size=(9, 3)), rng.normal(size=9), rng.normal(size=3)
assert np.isclose(loss(X, y, w, 0.1), np.mean((X @ w - y) ** 2) + 0.1 * np.sum(w ** 2))
print("loss ok")
"""
L1_CHECK = GOOD_CHECK.replace("np.sum(w ** 2))", "np.sum(np.abs(w)))")


def sau(sau_id: str, check: str | None = None, expected: Any = None, dim: str = "D2") -> dict:
    return {
        "sau_id": sau_id,
        "dimension": dim,
        "claim": "c",
        "check": check,
        "expected": json.dumps(expected) if expected is not None else None,
    }


def execution(status: str = "ok", **metrics: Any) -> dict:
    return {"status": status, "metrics": metrics, "files_created": ["results.json"]}


class NoSandbox:
    """A backend that must not be used (cached or sandbox-free paths)."""

    name = "none"
    needs_python_env = False

    def run(self, spec, log_path):  # pragma: no cover - failing is the point
        raise AssertionError("a sandbox was started")


# --------------------------------------------------------------------------- expected results


def test_expected_forms_and_default_tolerance() -> None:
    (one,) = parse_expected({"metric": "rmse", "value": 0.597, "tolerance": 0.005})
    assert (one.metric, one.value, one.tolerance) == ("rmse", 0.597, 0.005)
    rel, plain = parse_expected(
        [{"metric": "a", "value": 80.0, "tolerance": "2.5%"}, {"metric": "b", "value": 0.597}]
    )
    assert rel.tolerance == pytest.approx(2.0)
    assert plain.tolerance == pytest.approx(0.0005)  # half a unit of the last written digit
    assert parse_expected({"metric": "n", "value": 12})[0].tolerance == 0.5
    assert parse_expected(json.dumps({"metric": "x", "value": 1.0e-4}))[0].tolerance == 5e-5


@pytest.mark.parametrize(
    ("raw", "field", "message"),
    [
        ({"metric": "a", "value": "high"}, ".value", "is not a number"),
        ({"metric": "a", "value": "1e-4"}, ".value", "write 1.0e-4"),
        ({"metric": "a", "value": True}, ".value", "is not a number"),
        ({"metric": "a", "value": 1, "tolerance": "5 percent"}, ".tolerance", "not a tolerance"),
        ({"metric": "a", "value": 1, "tolerance": "±0.1"}, ".tolerance", "not a tolerance"),
        ({"metric": "a", "value": 1, "tolerance": -0.1}, ".tolerance", ">= 0"),
        ({"value": 1}, ".metric", "metric name"),
        ([{"metric": "a", "value": 1}, {"metric": "b", "value": [1]}], "[1].value", "not a"),
        ([], "", "empty list"),
    ],
)
def test_bad_expected_is_refused(raw: Any, field: str, message: str) -> None:
    with pytest.raises(ExpectedError) as info:
        parse_expected(raw)
    assert info.value.field == field and message in info.value.message


def test_match_expected_reports_both_numbers() -> None:
    (exp,) = parse_expected({"metric": "rmse", "value": 0.597, "tolerance": 0.005})
    assert match_expected(exp, {"rmse": 0.5991}).kind == "pass"
    out = match_expected(exp, {"rmse": 0.549})
    assert out.kind == "fail" and "0.549" in out.detail and "0.597" in out.detail
    assert match_expected(exp, {"rmse": "nan"}).kind == "fail"
    missing = match_expected(exp, {"a.rmse": 1.0})
    assert missing.kind == "missing" and "a.rmse" in missing.detail


def test_expected_verdicts_follow_the_execution(tmp_path: Path) -> None:
    saus = [
        sau("s-D3-001", expected={"metric": "acc", "value": 0.9, "tolerance": 0.01}, dim="D3"),
        sau("s-D3-002", expected=[{"metric": "acc", "value": 0.9}, {"metric": "f1", "value": 1}]),
        sau("s-D1-001", dim="D1"),  # neither check nor expected: no row
    ]
    executed = tmp_path / "executed"
    executed.mkdir()
    (executed / "results.json").write_text('{\n  "acc": 0.905\n}\n')

    def verdicts(record: dict | None) -> dict[str, tuple[str, str | None]]:
        rows = judge_exec(tmp_path, saus, record, executed=executed, backend=NoSandbox())
        return {j.sau_id: (j.verdict, j.failure_mode) for j in rows}

    assert verdicts(execution(acc=0.905)) == {
        "s-D3-001": ("aligned", None),
        "s-D3-002": ("missing", "omission"),  # f1 not reported
    }
    assert verdicts(execution(acc=0.5, f1=1))["s-D3-001"] == ("drifted", "implementation_mismatch")
    assert verdicts(execution(acc=0.5, f1=1))["s-D3-002"] == ("drifted", "implementation_mismatch")
    # a run that failed reports nothing, even where it left numbers behind
    assert set(verdicts(execution("failed", acc=0.905)).values()) == {("missing", "omission")}
    assert set(verdicts(None).values()) == {("missing", "omission")}
    (row,) = judge_exec(tmp_path, saus[:1], execution(acc=0.905), executed=executed)
    assert row.evidence[0].file == "results.json" and row.evidence[0].start == 2


def test_settings_are_checked() -> None:
    assert resolve_exec_settings({"time_limit_s": 5})["time_limit_s"] == 5
    with pytest.raises(UserError, match=r"judge_settings\.exec\.timeout"):
        resolve_exec_settings({"timeout": 5})
    with pytest.raises(UserError, match="positive"):
        resolve_exec_settings({"mem_mb": 0})


# --------------------------------------------------------------------------- hashes and cache


def test_tree_digest_ignores_bytecode_and_bookkeeping(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    first = tree_digest(tmp_path)
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    (tmp_path / ".snakemake_timestamp").write_text("")
    assert tree_digest(tmp_path) == first
    (tmp_path / "a.py").write_text("x = 2\n")
    assert tree_digest(tmp_path) != first
    assert tree_digest(tmp_path / "absent") is None


def test_cache_key_and_store(tmp_path: Path) -> None:
    env = {"backend": "bwrap", "python_env": "/env", "requirements": "abc"}
    limits = {"time_limit_s": 60, "mem_mb": 1024}
    key = cache_key("assert 1", "sub", env, limits)
    assert key != cache_key("assert 2", "sub", env, limits)
    assert key != cache_key("assert 1", "sub2", env, limits)
    assert key != cache_key("assert 1", "sub", {**env, "requirements": "def"}, limits)
    assert key != cache_key("assert 1", "sub", {**env, "backend": "docker"}, limits)
    assert key != cache_key("assert 1", "sub", env, {**limits, "time_limit_s": 30})
    cache = CheckCache(tmp_path)
    assert cache.get(key) is None
    cache.put(key, Outcome("fail", "AssertionError", tail="tb", where=("m.py", 3)))
    got = cache.get(key)
    assert got is not None and got.cached and got.kind == "fail" and got.where == ("m.py", 3)
    cache.put("e" * 64, Outcome("error", "timeout"))
    assert cache.get("e" * 64) is None, "errors (possibly transient) are never cached"
    (tmp_path / key[:2] / f"{key}.json").write_text("{broken")
    assert cache.get(key) is None


def test_empty_submission_is_missing_without_a_sandbox(tmp_path: Path) -> None:
    executed = tmp_path / "executed"
    executed.mkdir()
    (executed / ".snakemake_timestamp").write_text("")
    rows = judge_exec(
        tmp_path, [sau("s-D2-001", GOOD_CHECK)], None, executed=executed, backend=NoSandbox()
    )
    assert [(r.verdict, r.failure_mode) for r in rows] == [("missing", "omission")]


def test_no_sandbox_available_is_a_fault(tmp_path: Path, monkeypatch) -> None:
    import sabench.sandbox

    def broken(name: str):
        raise ModuleNotFoundError("No module named 'sabench.sandbox.podman'")

    monkeypatch.setattr(sabench.sandbox, "get_backend", broken)
    (tmp_path / "model.py").write_text(MODEL)
    saus = [
        sau("s-D2-001", GOOD_CHECK),
        sau("s-D3-001", GOOD_CHECK, {"metric": "acc", "value": 1.0}),
    ]
    with pytest.raises(Fault, match=r"sabench\.sandbox\.podman") as fault:
        judge_exec(
            tmp_path, saus, execution(acc=1.0), executed=tmp_path, runtime={"python_env": "/x"}
        )
    assert fault.value.cause == "sandbox_error"  # never a verdict: the run is redone


# --------------------------------------------------------------------------- in the sandbox


@pytest.fixture
def executed(tmp_path: Path) -> Path:
    folder = tmp_path / "executed"
    (folder / "pkg").mkdir(parents=True)
    (folder / "model.py").write_text(MODEL)
    (folder / "pkg" / "__init__.py").write_text("")
    (folder / "results.json").write_text('{"acc": 0.9}\n')
    return folder


def check(text: str, executed: Path, runtime: dict, **limits: Any) -> Outcome:
    return run_check(text, executed, runtime, {"time_limit_s": 20, **limits})


@pytest.mark.bwrap
@pytest.mark.parametrize(
    ("text", "kind", "words"),
    [
        (GOOD_CHECK, "pass", "loss ok"),
        ("import sys\nsys.exit(0)\nraise SystemExit(1)", "pass", ""),
        (L1_CHECK, "fail", "AssertionError"),
        ("import sys\nprint('bad value')\nsys.exit(3)", "fail", "the check exited with status 3"),
        ("raise ValueError('no')", "fail", "ValueError: no"),
        ("from model import stub\nstub(1)", "placeholder", "NotImplementedError"),
        ("import optimizer", "missing", "no module 'optimizer'"),
        ("from model import fit", "missing", "cannot import name 'fit'"),
        ("import pkg.trainer", "missing", "pkg.trainer"),
    ],
)
def test_check_outcomes(executed: Path, runtime: dict, text: str, kind: str, words: str) -> None:
    out = check(text, executed, runtime)
    assert out.kind == kind, (out.detail, out.tail)
    assert words in out.detail + out.tail


@pytest.mark.bwrap
@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("does not parse", "def f(:\n    pass\n", "does not parse"),
        ("has a null byte", "x = 1\x00\n", "does not parse"),
        ("a bug in the check", "import model\nassert modle.loss", "a bug in the check"),
        ("hangs", "while True:\n    pass\n", "did not finish within 2 s"),
        (
            "tries the network",
            "import socket\nsocket.create_connection(('pypi.org', 443), timeout=3)",
            "network",
        ),
        (
            "tries an address",
            "import socket\nsocket.create_connection(('127.0.0.1', 9), timeout=3)",
            "network",
        ),
        ("writes to the paper", "open('/paper/notes.md', 'w').write('x')", "outside"),
        ("writes to the system", "open('/etc/sabench-x', 'w').write('x')", "outside"),
        ("writes to the repo", f"open({str(Path.cwd() / 'x.txt')!r}, 'w')", "outside"),
        ("reads the SAUs", f"open({str(Path.cwd() / 'resources/papers')!r})", "outside"),
        ("the check itself exits 0", "import os\nos._exit(0)", "before any code under test"),
        (
            "fills the disk",
            "f = open('big', 'wb')\nfor _ in range(40):\n    f.write(b'x' * (1 << 20))\nf.flush()",
            "wrote more than",
        ),
    ],
)
def test_bad_checks_are_errors(
    executed: Path, runtime: dict, name: str, text: str, words: str
) -> None:
    if name in ("writes to the repo", "reads the SAUs") and str(Path.cwd()).startswith("/tmp/"):
        pytest.skip("the repository lies under /tmp, which checks may use as their scratch space")
    before = snapshot(executed)
    out = check(
        text, executed, runtime, time_limit_s=2 if name == "hangs" else 20, output_limit_mb=8
    )
    assert out.kind == "error", (name, out.kind, out.detail, out.tail)
    assert words in out.detail, (name, out.detail)
    assert snapshot(executed) == before, "executed/ must never change"


@pytest.mark.bwrap
def test_flood_is_capped_and_the_verdict_stands(executed: Path, runtime: dict) -> None:
    text = "import sys\nfor i in range(100000):\n    print('x' * 100)\nprint('END')\n"
    out = check(text, executed, runtime, log_limit_kb=16)
    assert out.kind == "pass" and out.detail == "END"
    assert len(out.tail) <= 1500


@pytest.mark.bwrap
def test_submission_exit_during_import_is_not_a_pass(executed: Path, runtime: dict) -> None:
    (executed / "runner.py").write_text("import sys\nprint('running')\nsys.exit(0)\n")
    out = check("import runner\nassert False", executed, runtime)
    assert out.kind == "crash" and "exited with status 0" in out.detail
    (executed / "runner.py").write_text("import sys\nsys.exit(2)\n")
    out = check("import runner", executed, runtime)
    assert out.kind == "fail" and "code under test exited with status 2" in out.detail
    assert out.where == ("runner.py", 2)


SPY_CHECK = """
import main

calls = []
real = main.gen


def spy(*args):
    calls.append(args)
    return real(*args)


main.gen = spy
assert main.main() == 3
assert calls == [(1,)], calls
"""


@pytest.mark.bwrap
def test_a_check_finds_its_target_where_the_submission_defines_it(
    executed: Path, runtime: dict
) -> None:
    """The check names ``main.gen``; main reaches ``gen`` as an attribute of a module it loads
    (``importlib``): the check gets that module's ``gen``, and its spy is called where main calls
    it. Defined in two other files, the check cannot tell which is the paper's (an error, never
    drift); defined nowhere, the look-up fails as before."""
    (executed / "main.py").write_text(
        "import importlib\n\ndata = importlib.import_module('data')\n\n\n"
        "def main():\n    return data.gen(1)\n"
    )
    (executed / "data.py").write_text("def gen(x):\n    return x + 2\n")
    out = check(SPY_CHECK, executed, runtime)
    assert out.kind == "pass", (out.detail, out.tail)
    (executed / "data.py").write_text("def gen(x):\n    return x + 1\n")
    out = check(SPY_CHECK, executed, runtime)
    assert out.kind == "fail" and "AssertionError" in out.detail, (out.detail, out.tail)
    (executed / "old.py").write_text("def gen(x):\n    return x + 2\n")
    out = check(SPY_CHECK, executed, runtime)
    assert out.kind == "error" and "data.py, old.py" in out.detail, (out.detail, out.tail)
    out = check("import main\nmain.nowhere()", executed, runtime)
    assert out.kind == "fail" and "nowhere" in out.detail, (out.detail, out.tail)


@pytest.mark.bwrap
def test_a_module_the_submission_lacks_stands_in_for_its_definitions(
    executed: Path, runtime: dict
) -> None:
    """A notebook flattened into one script has no module ``main``: the check's ``main.main`` and
    ``main.gen`` are the script's, spied where the script calls them; a name the submission
    defines nowhere is still an omission."""
    (executed / "notebook.py").write_text(
        "def gen(x):\n    return x + 2\n\n\ndef main():\n    return gen(1)\n\n\nprint(main())\n"
    )
    out = check(SPY_CHECK, executed, runtime)
    assert out.kind == "pass", (out.detail, out.tail)
    out = check("from main import nowhere", executed, runtime)
    assert out.kind == "missing", (out.detail, out.tail)
    # a package the submission lacks, and its submodule (the import binds one on the other)
    out = check("from mylib.model import gen\nassert gen(1) == 3", executed, runtime)
    assert out.kind == "pass", (out.detail, out.tail)


@pytest.mark.bwrap
def test_threads_of_the_code_under_test_each_call_the_checks_spy_on_their_own_channel(
    executed: Path, runtime: dict
) -> None:
    """A thread pool of the code under test calls the check's spy from several threads at once:
    each thread calls back over a connection of its own, and every call is seen."""
    (executed / "main.py").write_text(
        "from concurrent.futures import ThreadPoolExecutor\n\n\n"
        "def gen(x):\n    return x + 2\n\n\n"
        "def main():\n"
        "    with ThreadPoolExecutor(8) as pool:\n"
        "        return sum(pool.map(lambda x: gen(x), [1] * 64))\n"
    )
    text = SPY_CHECK.replace("main.main() == 3", "main.main() == 192").replace(
        "calls == [(1,)]", "calls == [(1,)] * 64"
    )
    out = check(text, executed, runtime)
    assert out.kind == "pass", (out.detail, out.tail)


def _pool_main(context: str) -> str:
    return (
        "import multiprocessing\n\n\n"
        "def gen(x):\n    return x + 2\n\n\n"
        "def job(x):\n    return gen(x)\n\n\n"
        "def main():\n"
        f"    with multiprocessing.get_context({context!r}).Pool(2) as pool:\n"
        "        return sum(pool.map(job, [1, 1], chunksize=1))\n"
    )


WORKER_MAINS = {
    **{f"pool-{c}": _pool_main(c) for c in ("fork", "spawn", "forkserver")},
    "process-pool": "from concurrent.futures import ProcessPoolExecutor\n\n\n"
    "def gen(x):\n    return x + 2\n\n\n"
    "def job(x):\n    return gen(x)\n\n\n"
    "def main():\n"
    "    with ProcessPoolExecutor(2) as pool:\n"
    "        return sum(pool.map(job, [1, 1]))\n",
    "subprocess": "import subprocess\nimport sys\n\n\n"
    "def gen(x):\n    return x + 2\n\n\n"
    "def main():\n"
    "    run = [sys.executable, 'job.py', '1']\n"
    "    return sum(int(subprocess.run(run, capture_output=True, text=True, check=True).stdout)\n"
    "               for _ in range(2))\n",
}

WORKER_CHECK = """
import threading

import main


class Done(Exception):
    pass


calls = {}  # caller -> its calls
real = main.gen


def spy(x):
    calls.setdefault(threading.get_ident(), []).append(x)
    return real(x)


main.gen = spy
assert main.main() == 6
assert sorted(x for seen in calls.values() for x in seen) == [1, 1], calls
assert threading.get_ident() not in calls, "called from the child's main thread"


def stop(x):
    raise Done


main.gen = stop
try:
    main.main()
except Done:
    print("the worker's Done reached the check")
else:
    raise AssertionError("main.main returned although the check's function raised")
"""


@pytest.mark.bwrap
@pytest.mark.parametrize("shape", sorted(WORKER_MAINS))
def test_workers_of_the_code_under_test_call_the_checks_spy(
    executed: Path, runtime: dict, shape: str
) -> None:
    """Workers that import the submission anew (spawn, forkserver, a subprocess Python) get the
    check's patches, forked ones leave the child's channel alone: each calls the spy back over a
    connection of its own, from a thread of the check's that stands for it, with the real function
    it wraps computed in the worker; an exception the spy raises there is the one the check sees."""
    (executed / "main.py").write_text(WORKER_MAINS[shape])
    (executed / "job.py").write_text(
        "import sys\n\nimport main\n\nprint(main.gen(int(sys.argv[1])))\n"
    )
    out = check(WORKER_CHECK, executed, runtime, time_limit_s=60)
    assert out.kind == "pass", (out.detail, out.tail)
    assert "the worker's Done reached the check" in out.detail, out.detail


@pytest.mark.bwrap
def test_idle_workers_cost_the_check_no_thread(executed: Path, runtime: dict) -> None:
    """A pool of 90 workers of which two run tasks, under the check's 128 pids (threads count):
    a worker holds a connection, and the runner a thread for it, only once it calls back."""
    (executed / "main.py").write_text(
        _pool_main("fork").replace("Pool(2)", "Pool(90)").replace(", chunksize=1", "")
    )
    out = check(WORKER_CHECK, executed, runtime, time_limit_s=60, pids=128)
    assert out.kind == "pass", (out.detail, out.tail)


@pytest.mark.bwrap
def test_what_a_check_sees(executed: Path, runtime: dict) -> None:
    """cwd and sys.path[0] are the submission copy; no check, runner, paper or SAU anywhere the
    code under test could look (files, mounts, environment); a submission file named like a
    stdlib module shadows nothing of the runner's; writes stay in the copy."""
    (executed / "traceback.py").write_text("raise RuntimeError('shadowed')\n")
    (executed / "json.py").write_text("raise RuntimeError('shadowed')\n")
    (executed / "look.py").write_text(
        "import os, sys\n"
        "def around():\n"
        "    return {'cwd': os.getcwd(), 'files': sorted(os.listdir('.')),\n"
        "            'env': {k: v for k, v in os.environ.items()},\n"
        "            'mounts': [p for p in ('/sabench-check', '/paper') if os.path.exists(p)]}\n"
    )
    text = """
import os, sys
import look
assert os.getcwd() == "/submission", os.getcwd()
assert sys.path[0] == "/submission", sys.path
seen = look.around()
assert seen["cwd"] == "/submission", seen
files = [f for f in seen["files"] if f != "__pycache__"]
assert files == ["json.py", "look.py", "model.py", "pkg", "results.json", "traceback.py"], seen
assert seen["mounts"] == [], seen
assert seen["env"]["PYTHONPATH"] == RUN_ENV["PYTHONPATH"], seen
marked = {k: v for k, v in seen["env"].items() if "sabench-check" in v or "sabench" in k.lower()}
assert marked == {}, marked
assert not os.path.exists("/paper") and not os.path.exists("/sabench-check")
os.remove("model.py")
open("new.txt", "w").write("x")
open("/tmp/scratch", "w").write("x")
print("seen")
"""
    # the run's own environment (the trace site), exactly as the execution stage sets it
    with arm_trace("bwrap", Path("/submission")) as (_, run_env, _):
        pass
    text = text.replace("RUN_ENV", repr(run_env))
    before = snapshot(executed)
    out = check(text, executed, runtime)
    assert out.kind == "pass", (out.detail, out.tail)
    assert snapshot(executed) == before


@pytest.mark.bwrap
def test_judge_runs_checks_once_then_from_the_cache(
    executed: Path, runtime: dict, tmp_path: Path
) -> None:
    saus = [
        sau("s-D2-001", GOOD_CHECK),
        sau("s-D2-002", L1_CHECK),
        sau("s-D2-003", "from model import stub\nstub(0)"),
        sau("s-D2-004", "import socket\nsocket.create_connection(('pypi.org', 443))"),
        sau(
            "s-D3-001",
            GOOD_CHECK + "# 2\n",
            {"metric": "acc", "value": 0.8, "tolerance": 0.01},
            "D3",
        ),
        sau("s-D3-002", "import nothing_here", {"metric": "acc", "value": 0.9}, "D3"),
        sau("s-D3-003", "def f(:", {"metric": "acc", "value": 0.9}, "D3"),
        sau("s-D4-001", dim="D4"),
    ]
    settings = {"cache_dir": str(tmp_path / "cache"), "time_limit_s": 20}
    runs = []

    class Counting:
        def __init__(self) -> None:
            self.inner = get_backend("bwrap")
            self.name = self.inner.name

        def run(self, spec, log_path):
            runs.append(spec.command)
            return self.inner.run(spec, log_path)

    def judge() -> dict[str, Any]:
        rows = judge_exec(
            executed.parent,
            saus,
            execution(acc=0.9),
            executed=executed,
            runtime=runtime,
            settings=settings,
            backend=Counting(),
        )
        return {r.sau_id: r for r in rows}

    first = judge()
    got = {k: (r.verdict, r.failure_mode) for k, r in first.items()}
    assert got == {
        "s-D2-001": ("aligned", None),
        "s-D2-002": ("drifted", "implementation_mismatch"),
        "s-D2-003": ("placeholder", "placeholder"),
        "s-D2-004": ("error", None),  # tries the network: contained, the run goes on
        "s-D3-001": ("drifted", "implementation_mismatch"),  # the check passes, the number not
        "s-D3-002": ("missing", "omission"),
        "s-D3-003": ("error", None),  # an unusable check leaves the SAU undecided
    }
    assert "acc = 0.9, outside the paper's 0.8" in first["s-D3-001"].reasoning
    assert first["s-D2-004"].score is None
    assert not any(r.cached for r in first.values())
    assert len(runs) == 6  # the check that does not parse never starts a sandbox
    second = judge()
    assert len(runs) == 7, "only the error (not cached) ran again"
    assert [second[k].cached for k in ("s-D2-001", "s-D2-002", "s-D2-003", "s-D3-002")] == [
        True
    ] * 4
    for key, row in first.items():
        assert (row.verdict, row.failure_mode) == (second[key].verdict, second[key].failure_mode)
    (executed / "model.py").write_text(MODEL.replace("w ** 2", "abs(w)"))
    third = judge()
    assert third["s-D2-001"].verdict == "drifted" and not third["s-D2-001"].cached
    assert third["s-D2-002"].verdict == "aligned"


@pytest.mark.bwrap
def test_a_check_passing_on_code_nothing_runs_is_missing(
    executed: Path, runtime: dict, tmp_path: Path
) -> None:
    """The check imports `loss` and it works, but the submission's script never calls it: the
    claim's code is there, the pipeline does not use it, so it implements nothing."""
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "model.py").write_text(MODEL)
    run = "from model import stub\n\n\ndef main():\n    return 0\n\n\n"
    run += 'if __name__ == "__main__":\n    main()\n'
    (submission / "run.py").write_text(run)

    def judge() -> Any:
        (row,) = judge_exec(
            submission,
            [sau("s-D2-001", GOOD_CHECK)],
            execution(),
            executed=executed,
            runtime=runtime,
            settings={"cache": False, "time_limit_s": 20},
        )
        return row

    row = judge()
    assert (row.verdict, row.score, row.failure_mode) == ("missing", 0.0, "omission")
    assert "loss ok" in row.reasoning and "`loss` (model.py:4)" in row.reasoning, row.reasoning
    (submission / "run.py").write_text(
        run.replace("import stub", "import loss").replace("return 0", "return loss")
    )
    row = judge()
    assert (row.verdict, row.score) == ("aligned", 1.0), row.reasoning


@pytest.mark.bwrap
def test_a_check_passing_on_code_a_failed_run_never_reached_is_at_most_partial(
    executed: Path, runtime: dict, tmp_path: Path
) -> None:
    """The run died at an import before it called `loss`: the check shows the code works, but
    nothing shows the run uses it, so the claim keeps the capped doubt, as with the static judge.
    Where the failed run did run `loss` before it stopped, the pass stands."""
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "model.py").write_text(MODEL)
    (submission / "run.py").write_text("import not_installed\nfrom model import loss\n")

    def judge(lines_run: dict) -> Any:
        (row,) = judge_exec(
            submission,
            [sau("s-D2-001", GOOD_CHECK)],
            {**execution("failed"), "lines_run": lines_run},
            executed=executed,
            runtime=runtime,
            settings={"cache": False, "time_limit_s": 20},
        )
        return row

    row = judge({"run.py": [1]})
    assert (row.verdict, row.score) == ("partial", UNREACHED_CAP), row.reasoning
    assert "never reached `loss` (model.py:4)" in row.reasoning, row.reasoning
    row = judge({"run.py": [1, 2], "model.py": [2, 4, 5, 7]})
    assert (row.verdict, row.score) == ("aligned", 1.0), row.reasoning


@pytest.mark.bwrap
def test_a_verdict_cites_the_submissions_own_lines(executed: Path, runtime: dict) -> None:
    """The frame of the submission that raised, else the definition the check tests: a failed
    assertion is the check's own line, and the harness's runner beside the code is no evidence
    (every verdict cited `.sabench-runner.py:728`, a file the run folder does not keep)."""
    saus = [
        sau("s-D2-001", GOOD_CHECK),
        sau("s-D2-002", L1_CHECK),
        sau("s-D2-003", "from model import stub\nstub(0)"),
    ]
    rows = judge_exec(executed, saus, execution(), executed=executed, runtime=runtime)
    cited = {r.sau_id: r.evidence for r in rows}
    loss_def = Evidence("model.py", 4, 5)
    assert cited == {
        "s-D2-001": [loss_def],
        "s-D2-002": [loss_def],
        "s-D2-003": [Evidence("model.py", 8, 8)],  # the stub's raise
    }


@pytest.mark.bwrap
def test_time_budget_turns_the_rest_into_errors(executed: Path, runtime: dict) -> None:
    saus = [sau(f"s-D2-00{i}", "import time\ntime.sleep(1.2)") for i in range(1, 4)]
    rows = judge_exec(
        executed.parent,
        saus,
        execution(),
        executed=executed,
        runtime=runtime,
        settings={"cache": False, "total_time_s": 1},
    )
    assert [r.verdict for r in rows] == ["aligned", "error", "error"]
    assert "time budget" in rows[1].reasoning


@pytest.mark.bwrap
@pytest.mark.parametrize("as_the_rule_gives_it", [False, True])
def test_run_judge_dispatch_and_cli(
    executed: Path,
    runtime: dict,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    as_the_rule_gives_it: bool,
) -> None:
    """``python -m sabench.judges.run RUN --judge exec`` on a run folder, and with the judge as one
    ``--spec`` word, as the workflow's judge rule calls it."""
    import pandas as pd

    from sabench.grid import JsonWord
    from sabench.judges.run import main
    from sabench.saus import write_saus

    run = executed.parent
    (run / "submission").mkdir()
    (run / "agent.json").write_text(
        json.dumps({"agent": "a", "paper": "p", "seed": "0", "submission_hash": "h"})
    )
    (run / "execution.json").write_text(json.dumps(execution(acc=0.9)))
    rows = [
        {**sau("p-D2-001", GOOD_CHECK), "paper": "p", "source": "s", "weight": 1.0}
        | {"origin": "curated", "category": None, "parent": None, "grounded": True},
        {**sau("p-D1-001", dim="D1"), "paper": "p", "source": "s", "weight": 1.0}
        | {"origin": "curated", "category": None, "parent": None, "grounded": True},
    ]
    write_saus(rows, tmp_path / "saus.parquet")
    out = tmp_path / "exec.parquet"
    monkeypatch.setenv("SABENCH_EXEC_CACHE", str(tmp_path / "cache"))
    sandbox = json.dumps({"backend": "bwrap", "python_env": runtime["python_env"]})
    judge = ["--judge", "exec", "--runtime", sandbox]
    if as_the_rule_gives_it:
        spec = JsonWord(name="exec", settings_json="{}", fingerprint="f", runtime_json=sandbox)
        judge = ["--spec", str(spec)]
    main(
        [
            str(run),
            "--saus",
            str(tmp_path / "saus.parquet"),
            "--out",
            str(out),
            *judge,
            "--quiet",
        ]
    )
    frame = pd.read_parquet(out)
    assert list(frame["sau_id"]) == ["p-D2-001"] and list(frame["verdict"]) == ["aligned"]
    assert set(frame["judge"]) == {"exec"}
    assert any((tmp_path / "cache").rglob("*.json"))
