"""Code under test that ends, hangs or tells apart its check: never a pass, never an error.

A check is a second execution of the submission's code, so the code could try to end it (exit,
kill the check's process, hang) or behave well only there. Ending it is the submission's doing
(``crash``: drifted, ``crashed_under_check``); behaving differently is caught by replaying, in the
check's sandbox, the calls the submission's own run recorded (``inconsistent``: drifted,
``check_dependent``). Each detector below is one the sandbox cannot hide (its parent process, its
argv, its call stack): the defence must not rest on hiding it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sabench.checks import run_check
from sabench.execute import execute_run

pytestmark = pytest.mark.bwrap


SQUARE_CHECK = "import m\nassert m.f(3) == 9, 'f is not the square'\nprint('f squares')\n"
#: Ways to end or stall the check from inside the code under test, at import or when called.
ENDINGS = {
    "kills its parent": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)",
    "kills every process": "import os, signal\nos.kill(-1, signal.SIGKILL)",
    "exits 0": "import os\nos._exit(0)",
    "raises SystemExit(0)": "raise SystemExit(0)",
    "hangs": "import time\ntime.sleep(10 ** 6)",
}


def _indent(code: str) -> str:
    return "".join(f"    {line}\n" for line in code.splitlines())


@pytest.mark.parametrize("when", ["at import", "when called"])
@pytest.mark.parametrize("how", list(ENDINGS))
def test_ending_or_hanging_the_check_is_drifted(
    runtime: dict, tmp_path: Path, how: str, when: str
) -> None:
    sub = tmp_path / "executed"
    sub.mkdir()
    body = (
        "def f(x):\n"
        + (_indent(ENDINGS[how]) if when == "when called" else "")
        + "    return x * x\n"
    )
    (sub / "m.py").write_text((ENDINGS[how] + "\n" if when == "at import" else "") + body)
    out = run_check(SQUARE_CHECK, sub, runtime, {"time_limit_s": 8})
    assert out.kind == "crash", (how, when, out.kind, out.detail, out.tail)
    if how == "hangs":
        assert "did not return within 8 s" in out.detail


def test_the_check_ending_itself_is_still_an_error(runtime: dict, tmp_path: Path) -> None:
    """Without the canary (no submission code started) a missing report is the harness's or the
    check's, and a check computing past its time limit is the check's: ``error`` both."""
    sub = tmp_path / "executed"
    sub.mkdir()
    (sub / "m.py").write_text("def f(x):\n    return x * x\n")
    out = run_check("import os\nos._exit(3)\n", sub, runtime, {"time_limit_s": 8})
    assert out.kind == "error" and "before any code under test ran" in out.detail
    out = run_check("import m\nm.f(1)\nwhile True:\n    pass\n", sub, runtime, {"time_limit_s": 4})
    assert out.kind == "error" and "did not finish within 4 s" in out.detail


#: Ways for the code under test to tell a check from its own run that no sandbox can hide.
DETECTORS = {
    # no longer tells: the check's child is given the run's own sys.argv (kept as a regression)
    "argv": "import sys\n    return sys.argv[:1] == ['-c']\n",
    "parent process": (
        "import os\n"
        "    cmd = open('/proc/%d/cmdline' % os.getppid(), 'rb').read()\n"
        "    return b'bash' not in cmd\n"
    ),
    "call stack": (
        "import inspect\n"
        "    return not any(f.filename.endswith('main.py') for f in inspect.stack())\n"
    ),
    # a frame from outside the submission and the Python installation: the check's, but in the
    # run also the trace's own (a wrapped call, a hooked import) unless the trace hides it
    "a foreign frame": (
        "import inspect, os, sys\n"
        "    ok = (os.path.dirname(os.path.abspath(__file__)), sys.prefix, sys.base_prefix)\n"
        "    names = [f.filename for f in inspect.stack()[1:]]\n"
        "    names = [n for n in names if not n.startswith('<frozen')]\n"
        "    return any(not os.path.isabs(n) or not n.startswith(ok) for n in names)\n"
    ),
}
#: Tells apart what a sandbox could hide, and must: the two must read the same in run and check.
HIDDEN = {
    "environment": (
        "import os\n"
        "    keys = ' '.join(os.environ).upper()\n"
        "    return any(w in keys for w in ('SABENCH', 'CHECK', 'SAU', 'TRACE'))\n"
    ),
    "paper or check on disk": (
        "import glob, os\n"
        "    found = glob.glob('/paper*') + glob.glob('/sabench*') + glob.glob('/check*')\n"
        "    return bool(found) or any('check' in n for n in os.listdir('.'))\n"
    ),
}
MAIN = """
import json
import numpy as np
from metrics import rmse

rng = np.random.default_rng(0)
y = rng.normal(size=50)
pred = y + rng.normal(scale=0.5, size=50)
json.dump({"rmse": float(rmse(y, pred))}, open("results.json", "w"))
"""
RMSE_CHECK = """
import numpy as np
from metrics import rmse

rng = np.random.default_rng(1)
for _ in range(5):
    a, b = rng.normal(size=20), rng.normal(size=20)
    want = float(np.sqrt(np.mean((a - b) ** 2)))
    got = float(rmse(a, b))
    assert abs(got - want) < 1e-3, (got, want)
print("rmse is the paper's")
"""


def _switching(detector: str, where: str) -> str:
    test = {**DETECTORS, **HIDDEN}[detector]
    detect = f"def under_check():\n    {test}\n"
    correct = "np.sqrt(np.mean((y - pred) ** 2))"
    drifted = "np.mean(np.abs(y - pred))"
    if where == "module level":
        return (
            "import numpy as np\n" + detect + "if under_check():\n"
            f"    def rmse(y, pred):\n        return {correct}\n"
            f"else:\n    def rmse(y, pred):\n        return {drifted}\n"
        )
    if where == "an alias":  # rmse names one of two functions, chosen at import
        return (
            "import numpy as np\n"
            + detect
            + f"def _right(y, pred):\n    return {correct}\n"
            + f"def _wrong(y, pred):\n    return {drifted}\n"
            + "rmse = _right if under_check() else _wrong\n"
        )
    if where == "a dispatcher":  # rmse(*args, **kwargs) forwards to one of two functions
        return (
            "import numpy as np\n"
            + detect
            + f"def _right(y, pred):\n    return {correct}\n"
            + f"def _wrong(y, pred):\n    return {drifted}\n"
            + "def rmse(*args, **kwargs):\n"
            + "    return (_right if under_check() else _wrong)(*args, **kwargs)\n"
        )
    return (
        "import numpy as np\n" + detect + "def rmse(y, pred):\n"
        f"    if under_check():\n        return {correct}\n    return {drifted}\n"
    )


def _executed(
    tmp_path: Path, runtime: dict, metrics: str, main: str = MAIN, extra: dict | None = None
) -> Path:
    sub = tmp_path / "submission"
    sub.mkdir(parents=True)
    (sub / "metrics.py").write_text(metrics)
    for name, text in (extra or {}).items():
        (sub / name).write_text(text)
    (sub / "main.py").write_text(main)
    (sub / "reproduce.sh").write_text("#!/usr/bin/env bash\nset -e\npython main.py\n")
    run = tmp_path / "run"
    record = execute_run(
        submission=sub,
        executed=run / "executed",
        record_path=run / "execution.json",
        log_path=run / "execution.log",
        settings={**runtime, "time_limit_s": 60},
    )
    assert record["status"] == "ok", (record, (run / "execution.log").read_text())
    return run / "executed"


@pytest.mark.parametrize("where", ["module level", "in the function", "an alias", "a dispatcher"])
@pytest.mark.parametrize("detector", list(DETECTORS))
def test_code_that_switches_under_a_check_is_caught_by_replay(
    runtime: dict, tmp_path: Path, detector: str, where: str
) -> None:
    executed = _executed(tmp_path, runtime, _switching(detector, where))
    drifted = json.loads((executed / "results.json").read_text())["rmse"]
    out = run_check(RMSE_CHECK, executed, runtime, {"time_limit_s": 30})
    if detector == "argv":  # the check's child has the run's own sys.argv: no switch to catch
        assert out.kind == "fail", (where, out.kind, out.detail, out.tail)
        return
    assert out.kind == "inconsistent", (detector, where, out.kind, out.detail, out.tail)
    assert f"{drifted:.6g}"[:5] in out.detail, (drifted, out.detail)
    assert "metrics.rmse" in out.detail


ARGPARSE_MAIN = """import argparse
import json


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, required=True)
    n = parser.parse_args(argv).n
    json.dump({"n": n}, open("results.json", "w"))
    return n


if __name__ == "__main__":
    main()
"""


def test_a_replayed_call_that_exits_proves_nothing(runtime: dict, tmp_path: Path) -> None:
    """The run recorded ``main(argv=None)``; replayed in the check's process, argparse reads that
    process's argv and exits: the replay is inconclusive, never the code's failure."""
    sub = tmp_path / "submission"
    sub.mkdir()
    (sub / "main.py").write_text(ARGPARSE_MAIN)
    (sub / "reproduce.sh").write_text("python main.py --n 3\n")
    run = tmp_path / "run"
    record = execute_run(
        sub, run / "executed", run / "execution.json", run / "execution.log", runtime
    )
    assert record["status"] == "ok", record
    check = "import main\nassert main.main(['--n', '4']) == 4\nprint('main reads its n')\n"
    out = run_check(check, run / "executed", runtime, {"time_limit_s": 30})
    assert out.kind == "pass", (out.kind, out.detail, out.tail)


def test_a_module_hanging_as_the_check_replays_its_run_is_drifted(
    runtime: dict, tmp_path: Path
) -> None:
    """Replay imports the module first: hanging there is the code's doing (the check would import
    it too), not a slow recorded call (those are the check's ``error``)."""
    metrics = (
        "import os\nimport numpy as np\n"
        "if b'bash' not in open('/proc/%d/cmdline' % os.getppid(), 'rb').read():\n"
        "    import time\n"
        "    time.sleep(10 ** 6)\n\n\ndef rmse(y, pred):\n"
        "    return np.sqrt(np.mean((y - pred) ** 2))\n"
    )
    executed = _executed(tmp_path, runtime, metrics)
    out = run_check(RMSE_CHECK, executed, runtime, {"time_limit_s": 10})
    assert out.kind == "crash", (out.kind, out.detail, out.tail)
    assert "did not return within 10 s" in out.detail


@pytest.mark.parametrize("where", ["module level", "a dispatcher"])
@pytest.mark.parametrize("detector", list(HIDDEN))
def test_what_a_sandbox_can_hide_reads_the_same_in_run_and_check(
    runtime: dict, tmp_path: Path, detector: str, where: str
) -> None:
    """No variable, mount or file tells a check from its run: the code takes the same branch in
    both, so the check's verdict is the branch the run took (never "inconsistent": the code did
    not switch). Which branch that is depends on the host (a venv bound at ``/check/...`` makes
    the disk detector true in both), so the run's own result says which verdict to expect."""
    executed = _executed(tmp_path, runtime, _switching(detector, where))
    ran = json.loads((executed / "results.json").read_text())["rmse"]
    rng = np.random.default_rng(0)
    y = rng.normal(size=50)
    pred = y + rng.normal(scale=0.5, size=50)
    ran_the_paper = abs(ran - float(np.sqrt(np.mean((y - pred) ** 2)))) < 1e-9
    out = run_check(RMSE_CHECK, executed, runtime, {"time_limit_s": 30})
    want = "pass" if ran_the_paper else "fail"
    assert out.kind == want, (detector, where, ran_the_paper, out.kind, out.detail, out.tail)


@pytest.mark.parametrize(
    "metrics",
    [
        "import numpy as np\ndef rmse(y, pred):\n    return np.sqrt(np.mean((y - pred) ** 2))\n",
        # honest but not deterministic: two replays differ, so the replay proves nothing
        "import numpy as np\ndef rmse(y, pred):\n"
        "    return np.sqrt(np.mean((y - pred) ** 2)) + np.random.normal(scale=1e-5)\n",
    ],
    ids=["deterministic", "uses the global RNG"],
)
def test_honest_code_passes_with_its_replay(runtime: dict, tmp_path: Path, metrics: str) -> None:
    executed = _executed(tmp_path, runtime, metrics)
    out = run_check(RMSE_CHECK, executed, runtime, {"time_limit_s": 30})
    assert out.kind == "pass", (out.detail, out.tail)


def _judge(executed: Path, runtime: dict, check: str, record: dict) -> tuple[str, str, str]:
    from sabench.judges.exec_judge import judge_exec
    from sabench.runtrace import with_lines

    sau = {"sau_id": "p-D4-001", "dimension": "D4", "claim": "c", "check": check}
    (row,) = judge_exec(
        executed,
        [sau],
        with_lines(record, executed),
        executed=executed,
        runtime=runtime,
        settings={"cache": False, "time_limit_s": 30},
    )
    return row.verdict, str(row.failure_mode), row.reasoning


STEPS = """
import os
def under_check():
    {detect}
def _paper_order():
    return "done"
def _own_order():
    return "done"
def run():
    return (_paper_order if {switch} else _own_order)()
"""


@pytest.mark.parametrize("switch", ["under_check()", "False"], ids=["switches", "honest"])
def test_code_reached_only_under_a_check_is_not_the_runs(
    runtime: dict, tmp_path: Path, switch: str
) -> None:
    """A pipeline whose steps return nothing a replay can compare (an order, a side effect): the
    judge compares the lines the check ran with the run's own; a function whose body only ran
    under the check, reached through code the run did run, is check-dependent."""
    steps = STEPS.format(detect=DETECTORS["parent process"].strip(), switch=switch)
    main = "import steps\nsteps.run()\nopen('results.json', 'w').write('{}')\n"
    executed = _executed(tmp_path, runtime, "", main=main, extra={"steps.py": steps})
    record = json.loads((executed.parent / "execution.json").read_text())
    verdict, mode, why = _judge(
        executed, runtime, "import steps\nassert steps.run() == 'done'\n", record
    )
    if switch == "False":
        assert (verdict, mode) == ("aligned", "None"), why
    else:
        assert (verdict, mode) == ("drifted", "check_dependent"), why
        assert "`_paper_order` (steps.py:" in why


SIZE_SWITCH = """
def mean_of(xs):
    if len(xs) > {limit}:
        return sorted(xs)[len(xs) // 2]
    return sum(xs) / len(xs)
"""


@pytest.mark.parametrize("limit", [8, 1000], ids=["switches", "honest"])
def test_a_check_passing_on_a_branch_the_run_never_took_is_unconfirmed(
    runtime: dict, tmp_path: Path, limit: int
) -> None:
    """The run (20 numbers) takes the median above the limit; the check's 3 numbers take the
    mean: the pass is on a path the run never ran, in a function it did run (at most partial)."""
    main = "import stats\nv = stats.mean_of(list(range(20)) + [100])\nopen('results.json', 'w').write('{}')\n"
    executed = _executed(
        tmp_path, runtime, "", main=main, extra={"stats.py": SIZE_SWITCH.format(limit=limit)}
    )
    record = json.loads((executed.parent / "execution.json").read_text())
    check = "import stats\nassert stats.mean_of([1, 2, 6]) == 3\n"
    verdict, _, why = _judge(executed, runtime, check, record)
    if limit == 1000:
        assert verdict == "aligned", why
    else:
        assert verdict == "partial" and "stats.py:5" in why, why


def test_a_pass_beside_a_proven_inconsistency_is_unconfirmed() -> None:
    from sabench.contracts import Judgment
    from sabench.judges.exec_judge import _unconfirmed_beside_inconsistent

    def row(sau_id: str, verdict: str, reasoning: str) -> Judgment:
        return Judgment(sau_id, "D2", verdict, None, reasoning=reasoning)

    passed = row("p-1", "aligned", "check pass: f squares")
    expected = row("p-3", "aligned", "expected pass: acc = 0.9")
    alone = _unconfirmed_beside_inconsistent([passed, expected], ["pass", ""])
    assert [j.verdict for j in alone] == ["aligned", "aligned"]
    proof = row("p-2", "drifted", "check inconsistent: m.g returns 2 where it returned 1")
    rows = _unconfirmed_beside_inconsistent([passed, proof, expected], ["pass", "inconsistent", ""])
    assert [j.verdict for j in rows] == ["partial", "drifted", "aligned"]
    assert rows[0].score == 0.25 and "p-2" in rows[0].reasoning


OBJECTIVE = """
class Objective:
    def __init__(self, xs):
        self.xs = xs

    def __call__(self, c):
        return sum((x - c) ** 2 for x in self.xs)


def loss(xs, c):
    return {body}
"""


@pytest.mark.parametrize(
    ("body", "verdict"),
    [
        ("Objective(xs)(c)", "aligned"),  # the run's own computation, under the name the check uses
        ("sum((x - c) ** 2 for x in xs)", "missing"),  # a formula of its own the run never ran
    ],
)
def test_a_wrapper_the_run_never_called_is_credited_only_for_the_runs_code(
    runtime: dict, tmp_path: Path, body: str, verdict: str
) -> None:
    main = (
        "from objective import Objective\nprint(Objective([1.0, 2.0])(1.5))\n"
        "open('results.json', 'w').write('{}')\n"
    )
    extra = {"objective.py": OBJECTIVE.format(body=body)}
    executed = _executed(tmp_path, runtime, "", main=main, extra=extra)
    record = json.loads((executed.parent / "execution.json").read_text())
    check = "from objective import loss\nassert loss([1.0, 3.0], 2.0) == 2.0\n"
    got, _, why = _judge(executed, runtime, check, record)
    assert got == verdict, why
