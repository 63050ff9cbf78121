"""The execution trace: what a run's own Python processes record (sandbox/trace_site.py) and how
the host merges it (sabench.runtrace)."""

from __future__ import annotations

import base64
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sabench.execute import RECORD_KEYS, execute_run
from sabench.runtrace import (
    RunTrace,
    TraceChannel,
    install_site,
    read_trace,
    trace_path,
    with_lines,
)
from sabench.sandbox import get_backend

METRICS = """import numpy as np


def rmse(a, b):
    d = a - b
    return float(np.sqrt(np.mean(d * d)))


def never_called(x):
    y = x + 1
    return y


def scale(model, factor=2):
    return factor
"""

MAIN = """import subprocess
import sys

import numpy as np

from esl.metrics import rmse, scale


def pick(flag):
    if flag:
        return "taken"
    return "not taken"


print(rmse(np.arange(4.0), np.zeros(4)))
rmse(np.ones(3), np.ones(3))
rmse(np.ones(3), np.zeros(3))
scale(object(), factor=3)
pick(True)
subprocess.run([sys.executable, "child.py"], check=True)
"""

CHILD = """def child_only():
    return 7


child_only()
"""

CRASH = """def before_crash(n):
    return n * 2


before_crash(21)
raise SystemExit("boom" if before_crash(1) else "never")
"""

IMAGE_SITE = """import os
with open("/submission/chained.txt", "w") as fh:
    fh.write("image sitecustomize ran")
"""

SCRIPT = """set -e
python main.py
PYTHONPATH="$PYTHONPATH:/submission/imgsite" python -c "print('chain')"
python crash.py || true
echo '{"acc": 1}' > results.json
"""


@pytest.fixture(scope="module")
def bwrap_ok() -> None:
    ok, why = get_backend("bwrap").available()
    if not ok:
        pytest.skip(f"bwrap unavailable: {why}")


def _submission(root: Path) -> Path:
    sub = root / "submission"
    (sub / "esl").mkdir(parents=True)
    (sub / "imgsite").mkdir()
    (sub / "esl" / "__init__.py").write_text("")
    (sub / "esl" / "metrics.py").write_text(METRICS)
    (sub / "main.py").write_text(MAIN)
    (sub / "child.py").write_text(CHILD)
    (sub / "crash.py").write_text(CRASH)
    (sub / "imgsite" / "sitecustomize.py").write_text(IMAGE_SITE)
    (sub / "reproduce.sh").write_text(SCRIPT)
    return sub


def _run(
    tmp_path: Path, env: Path, backend: str, sub: Path | None = None, status: str = "ok"
) -> tuple[dict, Path]:
    sub = sub or _submission(tmp_path)
    run = tmp_path / "run"
    record = execute_run(
        sub,
        run / "executed",
        run / "execution.json",
        run / "execution.log",
        {"backend": backend, "python_env": env, "time_limit_s": 60, "mem_mb": 1024},
    )
    assert record["status"] == status, (record, (run / "execution.log").read_text())
    return record, run / "executed"


def _recorder(env: Path) -> str:
    """The recorder the trace uses in the sandbox env (a prefix): sys.monitoring from Python 3.12
    on, coverage's tracer before."""
    done = subprocess.run(
        [str(env / "bin" / "python"), "-c", "import sys; print(sys.version_info >= (3, 12))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return "sys.monitoring" if done.stdout.strip() == "True" else "coverage "


def _array(value: dict) -> np.ndarray:
    dtype, shape, data = value["__nd__"]
    return np.frombuffer(base64.b64decode(data), dtype=dtype).reshape(shape)


@pytest.mark.bwrap
def test_bwrap_run_records_lines_and_calls(
    sandbox_env: Path, bwrap_ok: None, tmp_path: Path
) -> None:
    record, executed = _run(tmp_path, sandbox_env, "bwrap")
    assert tuple(sorted(record)) == tuple(sorted(RECORD_KEYS))
    trace = read_trace(executed)
    assert trace is not None and trace.recorder.startswith(_recorder(sandbox_env))
    # main.py, child.py, crash.py, and the chained -c process (it imports the image's site file)
    assert trace.processes == 4 and trace.problems == ()
    assert record["trace"] == trace.summary() and record["trace"]["processes"] == 4
    # the trace is kept beside the executed copy: neither a file the run made nor a metric
    assert not (executed / "trace.json").exists() and trace_path(executed).is_file()
    made = [f for f in record["files_created"] if "__pycache__" not in f]
    assert made == ["chained.txt", "results.json"]
    assert record["metrics"] == {"acc": 1}
    metrics = trace.lines["esl/metrics.py"]
    assert {1, 4, 5, 6, 9, 14, 15} <= metrics  # imports, defs, rmse's body, scale's body
    assert not {10, 11} & metrics  # never_called's body
    main = trace.lines["main.py"]
    assert {10, 11} <= main and 12 not in main  # the branch not taken
    assert trace.lines["child.py"] == frozenset({1, 2, 5})  # a child process's own file
    assert trace.lines["crash.py"] == frozenset({1, 2, 5, 6})  # it raised, and still wrote
    assert trace.lines["imgsite/sitecustomize.py"] == frozenset({1, 2, 3})  # the chain ran
    assert (executed / "chained.txt").read_text() == "image sitecustomize ran"

    calls = [c for c in trace.calls if c["function"] == "rmse"]
    assert len(calls) == 2  # the first two of three
    assert calls[0]["module"] == "esl.metrics" and calls[0]["kwargs"] == {}
    np.testing.assert_array_equal(_array(calls[0]["args"]["a"]), np.arange(4.0))
    np.testing.assert_array_equal(_array(calls[0]["args"]["b"]), np.zeros(4))
    assert calls[0]["result"] == pytest.approx(np.sqrt(3.5)) and calls[1]["result"] == 0.0
    by_name = {c["function"]: c for c in trace.calls}
    assert "scale" not in by_name  # an argument that is not data: nothing recorded
    assert "never_called" not in by_name
    assert "numpy" in by_name["pick"].pop("rng")  # the global random states it began with
    assert by_name["pick"] == {
        "module": "main",
        "function": "pick",
        "args": {"flag": True},
        "kwargs": {},
        "result": "taken",
    }
    assert by_name["child_only"]["result"] == 7
    assert [c["args"] for c in trace.calls if c["function"] == "before_crash"] == [
        {"n": 21},
        {"n": 1},
    ]

    execution = json.loads((tmp_path / "run" / "execution.json").read_text())
    seen = with_lines(execution, executed)
    assert seen is not None and seen["lines_run"]["child.py"] == [1, 2, 5]
    assert "lines_run" not in execution


def test_local_backend_traces_the_workdir(sandbox_env: Path, tmp_path: Path) -> None:
    record, executed = _run(tmp_path, sandbox_env, "local")
    trace = read_trace(executed)
    # four: each process says hello, the -c one too, though /submission/imgsite is no path outside
    # a sandbox, so it chains no site file
    assert trace is not None and record["trace"]["processes"] == 4 and trace.problems == ()
    assert not (executed / "chained.txt").exists()
    assert trace.lines["child.py"] == frozenset({1, 2, 5})
    assert all(not rel.startswith("/") for rel in trace.lines)


def test_an_uncaught_exception_records_the_statements_it_ended(
    sandbox_env: Path, tmp_path: Path
) -> None:
    """The frames the exception went through, in the submission's files: statements that ran but
    never completed (a failed run's judge reads what only they take as reaching nothing)."""
    sub = tmp_path / "submission"
    (sub / "pkg").mkdir(parents=True)
    (sub / "pkg" / "__init__.py").write_text("")
    (sub / "pkg" / "seed.py").write_text(
        "import numpy as np\n\n\ndef pick(rng, p):\n    return rng.choice(3, p=p)\n"
    )
    (sub / "main.py").write_text(
        "import numpy as np\nfrom pkg.seed import pick\n\n\ndef main():\n"
        "    probs = np.array([0.5, 0.5, np.nan])\n    chosen = pick(np.random.default_rng(0), probs)\n"
        "    print(chosen)\n\n\nmain()\n"
    )
    (sub / "reproduce.sh").write_text("python main.py\n")
    record, executed = _run(tmp_path, sandbox_env, "bwrap", sub, status="failed")
    trace = read_trace(executed)
    assert trace is not None
    assert trace.raised == {"main.py": frozenset({7, 11}), "pkg/seed.py": frozenset({5})}
    seen = with_lines(record, executed)
    assert seen["lines_raised"] == {"main.py": [7, 11], "pkg/seed.py": [5]}
    assert 8 not in seen["lines_run"]["main.py"]  # the print after it never ran


# --- wrapping (Python < 3.12 records calls by wrapping functions, not sys.setprofile) -----------

LIB = """import functools


def twice(x):
    \"\"\"Doubles.\"\"\"
    return x * 2


@functools.lru_cache(maxsize=None)
def cached(x):
    return x + 1


def deco(fn):
    def inner(*args):
        return fn(*args)

    return inner


@deco
def decorated(x):
    return x


class Box:
    def get(self, x):
        return x


def counted(n):
    yield n
"""

CYCLE_A = """def early(x):
    return x + 1


import cyc.b  # b takes early by name while this module is not done
"""

CYCLE_B = """from cyc.a import early

DURING = early(0)  # before cyc.a finished: not wrapped yet, not recorded


def use():
    return early(5)
"""

WRAP_MAIN = """import pickle
import sys

import cyc.a
import cyc.b
from pkg.lib import Box, cached, counted, decorated, twice

assert [twice(i) for i in range(5)] == [0, 2, 4, 6, 8]  # recorded twice, then plain
assert twice.__name__ == "twice" and twice.__qualname__ == "twice"
assert twice.__doc__ == "Doubles." and twice.__wrapped__.__module__ == "pkg.lib"
assert twice.__code__ is twice.__wrapped__.__code__  # after the cap: no wrapper left to call
assert pickle.loads(pickle.dumps(twice)) is twice
assert type(cached).__name__ == "_lru_cache_wrapper" and cached(1) == 2 and cached(1) == 2
assert decorated.__qualname__ == "deco.<locals>.inner" and decorated(3) == 3
assert Box().get(4) == 4 and list(counted(2)) == [2]
assert cyc.b.use() == 6
print("ok", file=sys.stderr)
"""


def test_wrapping_records_first_calls_and_leaves_the_rest(
    sandbox_env: Path, tmp_path: Path
) -> None:
    sub = tmp_path / "submission"
    for name, text in {
        "pkg/__init__.py": "",
        "pkg/lib.py": LIB,
        "cyc/__init__.py": "",
        "cyc/a.py": CYCLE_A,
        "cyc/b.py": CYCLE_B,
        "main.py": WRAP_MAIN,
    }.items():
        (sub / name).parent.mkdir(parents=True, exist_ok=True)
        (sub / name).write_text(text)
    with TraceChannel() as channel:
        # coverage's recorder, the one that wraps, whatever the sandbox's Python
        site = install_site(
            tmp_path / "site", root=str(sub), channel=str(channel.path), recorder="coverage"
        )
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site)}
        done = subprocess.run(
            [str(sandbox_env / "bin" / "python"), "main.py"], cwd=sub, env=env, capture_output=True
        )
        channel.close()
        channel.write(trace_path(sub))
    assert done.returncode == 0 and done.stderr.decode().strip() == "ok", done.stderr.decode()
    trace = read_trace(sub)
    assert trace is not None and trace.processes == 1 and trace.problems == ()
    assert trace.recorder.startswith("coverage ")
    calls = [(c["module"], c["function"], c["args"], c["result"]) for c in trace.calls]
    assert [c for c in calls if c[1] == "twice"] == [
        ("pkg.lib", "twice", {"x": 0}, 0),
        ("pkg.lib", "twice", {"x": 1}, 2),
    ]
    # the name b took before cyc.a finished is swapped for the wrapper once it has: use()'s call
    # is recorded; the one b made while cyc.a was still importing is not (a documented limit)
    assert [c for c in calls if c[1] == "early"] == [("cyc.a", "early", {"x": 5}, 6)]
    # an lru_cache, a function a decorator replaced, a class, a generator: left alone
    assert not {"cached", "decorated", "inner", "get", "counted"} & {c[1] for c in calls}


# --- the host side -------------------------------------------------------------------------------

CALL = {"module": "m", "function": "f", "args": {"x": 1}, "kwargs": {}, "result": 2}


def _hello(
    pid: int, ppid: int = 0, recorder: str = "sys.monitoring", streams: bool = False
) -> dict:
    hello = {"pid": pid, "ppid": ppid, "argv": ["main.py"], "recorder": recorder}
    return {"hello": {**hello, "streams": streams}}


def _bye(how: str = "exit", **record: object) -> dict:
    return {"bye": {"how": how, "raised": [], "lines": {}, "calls": [], "spawned": [], **record}}


def _line(message: object) -> bytes:
    return (message if isinstance(message, bytes) else json.dumps(message).encode()) + b"\n"


SPEAKER = """import base64, json, socket, sys, time
path, connections = json.load(sys.stdin)
socks = []
for chunks in connections:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    socks.append(sock)
    for chunk in chunks:
        sock.sendall(base64.b64decode(chunk))
        time.sleep(0.02)
for sock in socks:
    sock.close()
"""


def _channel_trace(tmp_path: Path, *speakers: list[list[object]]) -> RunTrace | None:
    """Serve a real channel; each speaker is a process of its own (the kernel names it as the
    peer), which opens its connections, sends each one's messages (bytes: sent as they are, in
    pieces when a list) and closes them. The trace as kept."""
    executed = tmp_path / "executed"
    with TraceChannel() as channel:
        for connections in speakers:
            chunks = [
                [
                    base64.b64encode(c).decode()
                    for m in messages
                    for c in (m if isinstance(m, list) else [_line(m)])
                ]
                for messages in connections
            ]
            subprocess.run(
                [sys.executable, "-c", SPEAKER],
                input=json.dumps([str(channel.path), chunks]),
                text=True,
                check=True,
            )
        channel.close()
        channel.write(trace_path(executed))
    assert not channel.folder.exists()  # the socket's folder goes with the channel
    return read_trace(executed)


def test_the_channel_merges_what_each_process_sent(tmp_path: Path) -> None:
    assert read_trace(tmp_path / "executed") is None  # no trace kept: a run from before
    assert with_lines(None, tmp_path) is None
    assert with_lines({"status": "ok"}, tmp_path) == {"status": "ok"}
    spawn = ["spawn", "/env/bin/python", ["python", "b.py"]]
    # lines and calls sent as they run (sys.monitoring), then again in the bye: merged once
    parent = [
        _hello(10, streams=True),
        {"line": ["a.py", 3]},
        {"call": CALL},
        {"call": {"function": "g"}},
        {"spawned": spawn},
        _bye(lines={"a.py": [3, 1]}),
    ]
    lines = {"a.py": [2], "b/c.py": [5], "/etc/x.py": [1], "d.py": [0, True, 4]}
    opened = ["config.yaml", "data/x.csv"]
    child = [
        _hello(11, ppid=10, recorder="settrace"),
        _bye("os._exit", lines=lines, opened=opened),
    ]
    # a record sent in pieces arrives whole
    split = _line(_hello(12, ppid=10)) + _line(_bye("SIGTERM", raised=[["a.py", 2]]))
    pieces = [split[:7], split[7:40], split[40:]]
    trace = _channel_trace(tmp_path, [parent], [child], [[pieces]])
    assert trace is not None and trace.problems == ()
    assert trace.lines == {
        "a.py": frozenset({1, 2, 3}),
        "b/c.py": frozenset({5}),
        "d.py": frozenset({4}),  # outside the root, 0 and True are no lines
    }
    assert trace.calls == (CALL,)  # a call without its result is none
    assert trace.raised == {"a.py": frozenset({2})}
    assert trace.processes == 3 and trace.recorder == "settrace, sys.monitoring"
    assert trace.summary() == {
        "recorder": "settrace, sys.monitoring",
        "processes": 3,
        "files": 3,
        "lines": 5,
        "problems": [],
    }
    seen = with_lines({"status": "ok"}, tmp_path / "executed")
    assert seen == {
        "status": "ok",
        "lines_run": {"a.py": [1, 2, 3], "b/c.py": [5], "d.py": [4]},
        "files_read": ["config.yaml", "data/x.csv"],  # what its processes opened
        "lines_raised": {"a.py": [2]},
    }


@pytest.mark.parametrize(
    ("connections", "problem"),
    [
        ([[b"{not json"]], "not the trace's"),
        ([[_hello(1), b"junk", _bye()]], "not the trace's"),
        ([[_hello(1), {"hello": {"pid": 1}}, _bye()]], "unknown message 'hello'"),
        ([[_bye(lines={"a.py": [1]})]], "before saying hello"),
        ([[_hello(1), _bye(), _bye()]], "after its end"),
        ([[_hello(1), {"lines": {"a.py": [1]}}]], "unknown message 'lines'"),
        ([[_hello(1)]], "ended without sending its record"),
        ([[]], "ended without sending its record"),  # connected, said nothing
        ([[_hello(1), [_line(_bye())[:-1]]]], "left a message unfinished"),
        # a second connection while the process's own is open: a record it did not run
        ([[_hello(1), _bye()], [_hello(2), _bye(lines={"a.py": [1]})]], "second connection"),
        (
            [[_hello(1), {"spawned": ["spawn", "python3", ["python3", "-I", "x.py"]]}, _bye()]],
            "started a Python that sent no trace: python3 -I x.py",
        ),
    ],
)
def test_a_record_not_whole_is_a_problem(
    tmp_path: Path, connections: list[list[object]], problem: str
) -> None:
    trace = _channel_trace(tmp_path, connections)
    assert trace is not None and len(trace.problems) == 1, trace
    assert problem in trace.problems[0]


def test_a_process_another_one_ended_has_sent_what_it_ran(tmp_path: Path) -> None:
    """Pool.terminate: a worker ended by SIGTERM sends no end of its own. One that sent its lines
    as they ran (sys.monitoring) is whole, when a process of the run says it ended it; one that
    sends them at its end only, or that nobody ended, is cut short."""
    parent = [_hello(10), {"killed": [11, 15]}, {"killed": [12, 15]}, _bye()]
    worker = [_hello(11, ppid=10, streams=True), {"line": ["w.py", 2]}]
    trace = _channel_trace(tmp_path, [parent], [worker])
    assert trace is not None and trace.problems == () and trace.lines == {"w.py": frozenset({2})}
    batch = [_hello(12, ppid=10, recorder="coverage 7.18.0"), {"line": ["w.py", 2]}]
    unended = [_hello(13, ppid=10, streams=True), {"line": ["w.py", 2]}]
    trace = _channel_trace(tmp_path, [parent], [batch], [unended])
    assert trace is not None and len(trace.problems) == 2
    assert all("ended without sending its record" in p for p in trace.problems)


def test_an_exec_speaks_again_on_a_new_connection(tmp_path: Path) -> None:
    """exec replaces the program, not the process: its record ends ``exec`` and the new program
    says hello from the same pid; no problem."""
    spawn = ["exec", "/env/bin/python", ["python", "next.py"]]
    first = [_hello(1), {"spawned": spawn}, _bye("exec", lines={"a.py": [1]})]
    second = [_hello(1), _bye(lines={"next.py": [1]})]
    trace = _channel_trace(tmp_path, [first, second])
    assert trace is not None and trace.problems == () and trace.processes == 2
    assert set(trace.lines) == {"a.py", "next.py"}


def test_closing_a_channel_twice_closes_nothing_of_anyone_else() -> None:
    """The execute step closes its channel, then leaves its ``with``: the second close must not
    close the descriptors its first freed, by then another thread's (runs in parallel threads)."""
    with TraceChannel() as channel:
        channel.close()
        read_end, write_end = os.pipe()  # the lowest free numbers: the channel's wake pipe's
    try:
        os.write(write_end, b"x")
        assert os.read(read_end, 1) == b"x"
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_trace_that_does_not_read_is_a_problem(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    executed = tmp_path / "executed"
    for text in ("{not json", json.dumps({"version": 1, "processes": []})):
        trace_path(executed).write_text(text)
        with caplog.at_level(logging.WARNING, logger="sabench.runtrace"):
            trace = read_trace(executed)
        assert trace is not None and trace.processes == 0 and trace.lines == {}
        assert len(trace.problems) == 1 and "does not read" in trace.problems[0]
