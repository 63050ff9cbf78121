"""The run record belongs to the sandbox (sabench.runtrace): every shape honest research code
takes to run its work in other processes or threads is traced whole, through the project's execute
stage under bwrap; a run that deletes or rewrites what it can leaves the record intact; a run that
speaks on the channel where it should not, or starts a Python the record cannot see, is
``untraced`` and every judge caps it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sabench.contracts import UNREACHED_CAP, Judgment
from sabench.execute import execute_run
from sabench.judges.run import cap_by_record, run_judge
from sabench.runtrace import CHANNEL_TARGET, SITE_TARGET, read_trace, trace_path
from sabench.sandbox import get_backend

#: The work a run hands to other processes: the parent process never calls it itself.
WORK = """def square(x):
    y = x * x
    return y
"""
WORKED = frozenset({2, 3})  # square's body: only a worker runs it

RESULTS = 'json.dump({"sum": sum(out)}, open("results.json", "w"))\n'

#: main.py of each shape (its results: the sum of squares of 0..3, 14), and its reproduce.sh.
SHAPES = {
    # leaving the with block terminates the workers (SIGTERM): each still sends its record
    "fork Pool": (
        "import json, multiprocessing as mp\nfrom work import square\n"
        'if __name__ == "__main__":\n'
        '    with mp.get_context("fork").Pool(2) as pool:\n'
        "        out = pool.map(square, range(4))\n"
        "    " + RESULTS
    ),
    "spawn ProcessPoolExecutor": (
        "import json, multiprocessing as mp\nfrom concurrent.futures import ProcessPoolExecutor\n"
        "from work import square\n"
        'if __name__ == "__main__":\n'
        '    with ProcessPoolExecutor(2, mp_context=mp.get_context("spawn")) as ex:\n'
        "        out = list(ex.map(square, range(4)))\n"
        "    " + RESULTS
    ),
    "forkserver Pool": (
        "import json, multiprocessing as mp\nfrom work import square\n"
        'if __name__ == "__main__":\n'
        '    with mp.get_context("forkserver").Pool(2) as pool:\n'
        "        out = pool.map(square, range(4))\n"
        "    " + RESULTS
    ),
    "Pool.terminate": (
        "import json, multiprocessing as mp\nfrom work import square\n"
        'if __name__ == "__main__":\n'
        '    pool = mp.get_context("fork").Pool(2)\n'
        "    out = pool.map(square, range(4))\n"
        "    pool.terminate()\n"
        "    pool.join()\n"
        "    " + RESULTS
    ),
    "threads": (
        "import json, threading\nfrom concurrent.futures import ThreadPoolExecutor\n"
        "from work import square\n"
        "with ThreadPoolExecutor(2) as ex:\n"
        "    out = list(ex.map(square, range(4)))\n"
        "t = threading.Thread(target=square, args=(5,))\nt.start()\nt.join()\n" + RESULTS
    ),
    "subprocess Python": (
        "import json, subprocess, sys\n"
        "code = 'from work import square; print(sum(map(square, range(4))))'\n"
        "done = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True)\n"
        "out = [int(done.stdout)]\n" + RESULTS
    ),
    "importlib": (
        "import importlib.util, json\n"
        'spec = importlib.util.spec_from_file_location("helpers", "work.py")\n'
        "helpers = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(helpers)\n"
        "out = [helpers.square(i) for i in range(4)]\n" + RESULTS
    ),
}


@pytest.fixture(scope="module")
def bwrap_ok() -> None:
    ok, why = get_backend("bwrap").available()
    if not ok:
        pytest.skip(f"bwrap unavailable: {why}")


def _execute(
    tmp_path: Path, env: Path, files: dict[str, str], script: str, time_limit_s: float = 60
) -> tuple[dict, Path]:
    sub = tmp_path / "submission"
    for name, text in {**files, "reproduce.sh": script}.items():
        (sub / name).parent.mkdir(parents=True, exist_ok=True)
        (sub / name).write_text(text)
    run = tmp_path / "run"
    record = execute_run(
        sub,
        run / "executed",
        run / "execution.json",
        run / "execution.log",
        {"backend": "bwrap", "python_env": env, "time_limit_s": time_limit_s, "mem_mb": 2048},
    )
    return record, run / "executed"


def _log(executed: Path) -> str:
    return (executed.parent / "execution.log").read_text()


@pytest.mark.bwrap
@pytest.mark.parametrize("shape", list(SHAPES))
def test_honest_shapes_are_traced_whole(
    sandbox_env: Path, bwrap_ok: None, tmp_path: Path, shape: str
) -> None:
    files = {"work.py": WORK, "main.py": SHAPES[shape]}
    record, executed = _execute(tmp_path, sandbox_env, files, "set -e\npython main.py\n")
    assert record["status"] == "ok", (record, _log(executed))
    assert json.loads((executed / "results.json").read_text()) == {"sum": 14}
    trace = read_trace(executed)
    assert trace is not None and trace.problems == (), trace
    assert trace.lines["work.py"] >= WORKED, trace.lines
    assert trace.lines["main.py"]


#: Pools terminated at once, their workers barely started: a SIGTERM that reaches a forked child
#: before its interpreter is ready must still end it (and its record must still come).
TERMINATED_AT_ONCE = """import multiprocessing as mp
from work import square

if __name__ == "__main__":
    for _ in range(20):
        pool = mp.get_context("fork").Pool(4)
        pool.terminate()
        pool.join()
    print(square(3))
"""


@pytest.mark.bwrap
def test_pools_terminated_at_once_end_and_are_traced(
    sandbox_env: Path, bwrap_ok: None, tmp_path: Path
) -> None:
    files = {"work.py": WORK, "main.py": TERMINATED_AT_ONCE}
    record, executed = _execute(tmp_path, sandbox_env, files, "python main.py\n", 40)
    assert record["status"] == "ok", (record, _log(executed))
    trace = read_trace(executed)
    assert trace is not None and trace.problems == () and trace.processes == 81


@pytest.mark.bwrap
def test_python_dash_m_is_traced(sandbox_env: Path, bwrap_ok: None, tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/work.py": WORK,
        "pkg/main.py": "from pkg.work import square\n\nprint(square(3))\n",
    }
    record, executed = _execute(tmp_path, sandbox_env, files, "python -m pkg.main\n")
    assert record["status"] == "ok", (record, _log(executed))
    trace = read_trace(executed)
    assert trace is not None and trace.problems == () and trace.processes == 1
    assert trace.lines["pkg/work.py"] >= WORKED and {1, 3} <= trace.lines["pkg/main.py"]


TAMPER = f"""python main.py
# everything the run can reach of its folder, and what it cannot (read-only mounts)
rm -rf /submission/* /submission/.[!.]* 2>/dev/null
rm -rf {CHANNEL_TARGET}/* {SITE_TARGET}/* 2>/dev/null
echo '{{"version": 2, "processes": []}}' > {CHANNEL_TARGET}/trace.json 2>/dev/null
echo 'raise SystemExit' > {SITE_TARGET}/sitecustomize.py 2>/dev/null
echo '{{"version": 2, "processes": []}}' > /submission/../trace.json 2>/dev/null
echo '{{"acc": 1}}' > /submission/results.json
exit 0
"""


@pytest.mark.bwrap
def test_a_run_that_deletes_or_rewrites_what_it_can_leaves_the_record(
    sandbox_env: Path, bwrap_ok: None, tmp_path: Path
) -> None:
    files = {"work.py": WORK, "main.py": "from work import square\n\nsquare(2)\n"}
    record, executed = _execute(tmp_path, sandbox_env, files, TAMPER)
    assert record["status"] == "ok", (record, _log(executed))
    assert sorted(p.name for p in executed.iterdir()) == ["results.json"]  # all else gone
    trace = read_trace(executed)
    assert trace is not None and trace.problems == () and trace.processes == 1
    assert trace.lines == {"main.py": frozenset({1, 3}), "work.py": frozenset({1, 2, 3})}
    assert json.loads(trace_path(executed).read_text())["version"] == 2


#: What a run could send on the channel itself, from a Python process the trace does see.
SPEAK = f"""import json, socket, sys

sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect("{CHANNEL_TARGET}/trace.sock")
hello = {{"hello": {{"pid": 4242, "ppid": 1, "argv": ["main.py"], "recorder": "sys.monitoring"}}}}
bye = {{"bye": {{"how": "exit", "lines": {{"work.py": [1, 2, 3]}}, "calls": []}}}}
record = (json.dumps(hello) + "\\n" + json.dumps(bye) + "\\n").encode()
sock.sendall(b"junk\\n" if sys.argv[1] == "junk" else record)
sock.close()
"""


@pytest.mark.bwrap
@pytest.mark.parametrize(
    ("what", "problem"),
    [("junk", "not the trace's"), ("a second hello", "second connection")],
)
def test_a_run_that_speaks_on_the_channel_is_untraced(
    sandbox_env: Path, bwrap_ok: None, tmp_path: Path, what: str, problem: str
) -> None:
    files = {"work.py": WORK, "speak.py": SPEAK}
    script = f"python speak.py '{what}'\necho '{{\"acc\": 1}}' > results.json\n"
    record, executed = _execute(tmp_path, sandbox_env, files, script)
    assert record["status"] == "untraced", (record, _log(executed))
    assert problem in record["message"], record["message"]
    trace = read_trace(executed)
    assert trace is not None and trace.problems and record["trace"] == trace.summary()


@pytest.mark.bwrap
def test_a_python_the_record_cannot_see_makes_the_run_untraced(
    sandbox_env: Path, bwrap_ok: None, tmp_path: Path
) -> None:
    """``python -S`` skips both PYTHONPATH's sitecustomize and the sandbox env's ``.pth``, so the
    trace's site never runs in it: the process that started it says so, and what it computed is
    nowhere in the record. (``-I`` is traced: tests/test_record.py.)"""
    main = "import subprocess, sys\nsubprocess.run([sys.executable, '-S', 'work.py'], check=True)\n"
    files = {"work.py": WORK, "main.py": main}
    record, executed = _execute(tmp_path, sandbox_env, files, "python main.py\n")
    assert record["status"] == "untraced", (record, _log(executed))
    assert "started a Python that sent no trace" in record["message"]
    assert "-S" in record["message"]


TRAIN = """import numpy as np

LEARNING_RATE = 0.05


def train(X, y, lr, epochs):
    w = np.zeros(X.shape[1])
    for _ in range(epochs):
        w = w - lr * X.T @ (X @ w - y) / len(y)
    return w


X = np.eye(3)
train(X, np.ones(3), LEARNING_RATE, 10)
"""


def _judgment(verdict: str, score: float | None = None) -> Judgment:
    return Judgment("p-D2-001", "D2", verdict, score, reasoning="read off the code")


def test_an_untraced_run_is_capped_by_every_judge(tmp_path: Path) -> None:
    judged = [_judgment("aligned"), _judgment("partial", 0.75), _judgment("partial", 0.25)]
    judged += [_judgment("drifted"), _judgment("error")]
    assert cap_by_record(judged, {"status": "ok"}) == judged
    assert cap_by_record(judged, None) == judged
    capped = cap_by_record(judged, {"status": "untraced"})
    assert [(j.verdict, j.score) for j in capped] == [
        ("partial", UNREACHED_CAP),
        ("partial", UNREACHED_CAP),
        ("partial", 0.25),
        ("drifted", 0.0),
        ("error", None),  # a fault stays a fault
    ]
    assert "untraced" in capped[0].reasoning and capped[2] is judged[2]
    # through the judge step's own entry: the static judge's aligned claim, capped
    (sub := tmp_path / "submission").mkdir()
    (sub / "train.py").write_text(TRAIN)
    claim = "Gradient descent uses a learning rate of 0.05."
    sau = {"paper": "p", "sau_id": "p-D1-001", "dimension": "D1", "claim": claim}
    execution = {"status": "ok", "lines_run": {"train.py": list(range(1, 15))}}
    (ok,) = run_judge("static", {}, sub, [sau], execution)
    (untraced,) = run_judge("static", {}, sub, [sau], {**execution, "status": "untraced"})
    assert ok.verdict == "aligned", ok.reasoning
    assert (untraced.verdict, untraced.score) == ("partial", UNREACHED_CAP)


#: Runs past any time limit; saves its work when asked to stop (SIGTERM), as a program may.
SPIN = """import signal
import sys


def save(signum, frame):
    open("saved.txt", "w").write("saved")
    sys.exit(1)


def spin():
    n = 0
    while True:
        n += 1


signal.signal(signal.SIGTERM, save)
print("spinning", flush=True)
spin()
"""


@pytest.mark.bwrap
@pytest.mark.parametrize("backend", ["bwrap", "local"])
def test_a_timed_out_run_is_stopped_with_its_record(
    sandbox_env: Path, bwrap_ok: None, tmp_path: Path, backend: str
) -> None:
    """At the time limit: SIGTERM to the run's processes, TERM_GRACE_S to end as they would (this
    one saves its work), then SIGKILL; the run is a timeout, and its trace has what ran."""
    from sabench.sandbox.common import TERM_GRACE_S

    sub = tmp_path / "submission"
    sub.mkdir()
    (sub / "main.py").write_text(SPIN)
    (sub / "reproduce.sh").write_text("set -e\npython main.py\necho never > after.txt\n")
    run = tmp_path / "run"
    settings = {"backend": backend, "python_env": sandbox_env, "time_limit_s": 3}
    record = execute_run(
        sub, run / "executed", run / "execution.json", run / "execution.log", settings
    )
    log = (run / "execution.log").read_text()
    assert record["status"] == "timeout", (record, log)
    assert record["wall_s"] < 3 + TERM_GRACE_S + 5, record
    assert "spinning" in log and "SIGTERM" in record["isolation"]
    executed = run / "executed"
    assert (executed / "saved.txt").read_text() == "saved"  # it ended as it would
    assert not (executed / "after.txt").exists()  # the shell went no further
    trace = read_trace(executed)
    assert trace is not None
    # spin's loop, and save's body, which ran after the time limit
    assert {5, 6, 10, 11, 12, 13, 16, 17, 18} <= trace.lines["main.py"], trace.lines


HELPER = """def same(value):
    if isinstance(value, int):
        return value
    return value * 1.0
"""


@pytest.mark.bwrap
def test_the_same_helper_in_two_files_is_traced_in_each(
    sandbox_env: Path, bwrap_ok: None, tmp_path: Path
) -> None:
    """Code objects compare by value, file aside: a helper pasted into two modules (at the same
    line) must not pass for one already traced when the second runs."""
    files = {
        "a.py": HELPER,
        "b.py": HELPER,
        "main.py": "import a\nimport b\n\na.same(1)\nb.same(2.0)\n",
    }
    record, executed = _execute(tmp_path, sandbox_env, files, "python main.py\n")
    assert record["status"] == "ok", (record, _log(executed))
    trace = read_trace(executed)
    assert trace is not None
    assert trace.lines["a.py"] == frozenset({1, 2, 3})
    assert trace.lines["b.py"] == frozenset({1, 2, 4})
    assert {c["module"] for c in trace.calls if c["function"] == "same"} == {"a", "b"}
