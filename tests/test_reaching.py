"""What reaches the output, past the easy cases of test_liveness: a dict whose keys alone are
reported, functions of other modules that only compute, a function that ran but whose every
call reaches nothing, and a run that did not complete (what it ran, what it never reached)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from sabench.index.liveness import inert_in_submission
from sabench.index.python_facts import statement_lines
from sabench.judges.static import judge_static
from sabench.judges.static.executed import UNREACHED_CAP, reported_anything, settle
from sabench.judges.static.outcome import Outcome

#: (claim, function, its parameters, the formula)
FORMULAS = [
    (
        "The `mse` metric is `mean((y_pred - y) ** 2)`.",
        "mse",
        "y, y_pred",
        "((y_pred - y) ** 2).mean()",
    ),
    ("The L2 penalty is `lam * sum(w ** 2)`.", "l2_penalty", "w, lam", "lam * np.sum(w ** 2)"),
    (
        "The hinge loss is `mean(maximum(0, 1 - y * s))`.",
        "hinge",
        "y, s",
        "np.maximum(0, 1 - y * s).mean()",
    ),
]

#: how ``main`` reports the dict of results: its keys only, or its values too
REPORTS = {
    "items, keys only": ("for name, value in found.items():\n        out[name] = 0.5", False),
    "iterating keys": ("for name in found:\n        out[name] = 0.5", False),
    "keys()": ("for name in found.keys():\n        out[name] = len(name)", False),
    "items, values": ("for name, value in found.items():\n        out[name] = value", True),
    "subscript": ("for name in found:\n        out[name] = found[name]", True),
    "values()": ("for value in found.values():\n        out['x'] = value", True),
}


def _judge(root: Path, claim: str, execution: dict | None = None):
    (j,) = judge_static(
        root, [{"paper": "p", "sau_id": "p-1", "dimension": "D2", "claim": claim}], execution
    )
    return j


def _program(name: str, args: str, expr: str, build: str, report: str) -> str:
    call = f"{name}({', '.join('1.0' for _ in args.split(','))})"
    return (
        f"import json\nimport numpy as np\n\n\ndef {name}({args}):\n    return {expr}\n\n\n"
        f"def main():\n    out = {{}}\n{build.format(call=call)}\n    {report}\n"
        "    print(json.dumps(out))\n\n\nif __name__ == '__main__':\n    main()\n"
    )


@pytest.mark.parametrize("report", sorted(REPORTS))
@pytest.mark.parametrize(("claim", "name", "args", "expr"), FORMULAS)
@pytest.mark.parametrize(
    "build",
    ["    found = {{'gd': {call}}}", "    found = {{}}\n    found['gd'] = {call}"],
    ids=["display", "store"],
)
def test_a_dict_whose_keys_alone_are_reported_carries_none_of_its_values(
    tmp_path: Path, claim: str, name: str, args: str, expr: str, build: str, report: str
) -> None:
    """The names of results are no results: a formula whose value goes into a dict of which
    only the keys reach the output is text; where the values reach, it is implemented."""
    text, reaches = _program(name, args, expr, build, REPORTS[report][0]), REPORTS[report][1]
    (tmp_path / "main.py").write_text(text)
    lines = len(text.splitlines())
    ok = {"status": "ok", "lines_run": {"main.py": list(range(1, lines + 1))}}
    j = _judge(tmp_path, claim, ok)
    if reaches:
        assert j.verdict == "aligned", j.reasoning
    else:
        assert j.verdict not in ("aligned", "drifted") and (j.score or 0) < 0.5, j.reasoning


def _inert_lines(files: dict[str, str]) -> dict[str, set[int]]:
    trees = {p: ast.parse(t) for p, t in files.items()}
    found = inert_in_submission(trees)
    return {p: statement_lines(trees[p], found[p]) for p in trees}


@pytest.mark.parametrize("imported", ["from helpers import mse", "import helpers as h"])
def test_a_call_of_another_modules_pure_function_whose_result_nobody_reads_is_inert(
    imported: str,
) -> None:
    call = "mse(a, b)" if imported.startswith("from") else "h.mse(a, b)"
    main = f"{imported}\n\n\ndef run(a, b):\n    unused = {call}\n    return a\n"
    pure = "def mse(y, p):\n    return ((y - p) ** 2).mean()\n"
    assert _inert_lines({"main.py": main, "helpers.py": pure})["main.py"] == {5}
    # a function that writes is not a computation: its call stays, result read or not
    writes = "def mse(y, p):\n    open('out.txt', 'w').write(str(y))\n    return 0\n"
    assert _inert_lines({"main.py": main, "helpers.py": writes})["main.py"] == set()
    # nor is one that calls what writes, through a third module
    calls = "from io_utils import mse\n"
    io = "def mse(y, p):\n    print(y)\n    return 0\n"
    found = _inert_lines({"main.py": main, "helpers.py": calls, "io_utils.py": io})
    assert found["main.py"] == set()


@pytest.mark.parametrize(("claim", "name", "args", "expr"), FORMULAS)
def test_a_function_that_ran_for_a_result_nothing_reads_implements_nothing(
    tmp_path: Path, claim: str, name: str, args: str, expr: str
) -> None:
    """It ran (the record says so), but its only call's result reaches nothing: with a record,
    the whole function is text; called where its result is reported, it is implemented."""
    call = f"{name}({', '.join('1.0' for _ in args.split(','))})"
    for reported, verdict_ok in (
        (f"print({call})", True),
        (f"unused = {call}\n    print(0)", False),
    ):
        text = (
            f"import numpy as np\n\n\ndef {name}({args}):\n    return {expr}\n\n\n"
            f"def main():\n    {reported}\n\n\nmain()\n"
        )
        (tmp_path / "metrics.py").write_text(text)
        every = list(range(1, len(text.splitlines()) + 1))
        j = _judge(tmp_path, claim, {"status": "ok", "lines_run": {"metrics.py": every}})
        assert (j.verdict == "aligned") is verdict_ok, j.reasoning


def _outcome(verdict: str, score: float) -> Outcome:
    return Outcome(verdict, score, None, f"{verdict} reasons.", [])


def test_settle_takes_the_better_of_what_ran_and_the_capped_doubt() -> None:
    from sabench.index import CodeIndex

    index = CodeIndex.__new__(CodeIndex)  # settle reads nothing of the index
    # credit from code the run never reached is capped and said so
    got = settle(_outcome("missing", 0.0), _outcome("aligned", 1.0), index)
    assert (got.verdict, got.score) == ("partial", UNREACHED_CAP)
    assert "never reached" in got.reasoning
    # credit from code that ran stands
    assert settle(_outcome("aligned", 1.0), _outcome("aligned", 1.0), index).score == 1.0
    # a contradiction found only in code never reached is kept: it is what the code says
    assert settle(_outcome("missing", 0.0), _outcome("drifted", 0.0), index).verdict == "drifted"
    # ... unless what ran implements the claim
    assert settle(_outcome("aligned", 1.0), _outcome("drifted", 0.0), index).verdict == "aligned"


def _failed(upto: int) -> dict:
    return {"status": "failed", "lines_run": {"main.py": list(range(1, upto + 1))}}


def test_a_failed_run_that_reported_nothing_keeps_at_most_the_capped_doubt(
    tmp_path: Path,
) -> None:
    """Nothing the run reports exists: what it ran reached no output, and the code it never
    reached gets the benefit of the doubt, capped. A run that printed before it failed is
    judged on what it ran."""
    claim, name, args, expr = FORMULAS[0]
    text = (
        f"import numpy as np\n\n\ndef {name}({args}):\n    return {expr}\n\n\n"  # 1-5
        "value = mse(np.ones(3), np.zeros(3))\n"  # 8
        "print(value)\n"  # 9
        "raise SystemExit(load_the_dataset())\n"  # 10
    )
    (tmp_path / "main.py").write_text(text)
    claim = claim.replace("mse", name)
    silent = {**_failed(8), "lines_raised": {"main.py": [8]}}
    assert not reported_anything(_index(tmp_path), silent)
    j = _judge(tmp_path, claim, silent)
    assert (j.verdict, j.score) == ("partial", UNREACHED_CAP), j.reasoning
    printed = _failed(10)
    assert reported_anything(_index(tmp_path), printed)
    assert _judge(tmp_path, claim, printed).verdict == "aligned"


def _index(root: Path):
    from sabench.index import build_index

    return build_index(root)


@pytest.mark.parametrize(
    ("call", "reports"),
    [
        ("print(x)", True),
        ("open('o.txt', 'w').write(str(x))", True),
        ("json.dump({'x': 1}, fh)", True),
        ("np.save('x.npy', x)", True),
        ("plt.savefig('x.png')", True),
        ("logger.info('x %s', x)", True),
        ("wandb.log({'x': 1})", True),
        ("df.to_csv('x.csv')", True),
        ("np.log(x)", False),
        ("F.log_softmax(x)", False),
        ("log(x)", False),
        ("rng.choice(3)", False),
        ("x.log()", False),
    ],
)
def test_a_failed_run_reported_something_only_where_a_reporting_call_ran(
    tmp_path: Path, call: str, reports: bool
) -> None:
    (tmp_path / "main.py").write_text(f"x = 1\n{call}\nraise SystemExit(1)\n")
    ran = {"status": "failed", "lines_run": {"main.py": [1, 2, 3]}}
    assert reported_anything(_index(tmp_path), ran) is reports
    not_reached = {"status": "failed", "lines_run": {"main.py": [1]}}
    assert not reported_anything(_index(tmp_path), not_reached)


DRAW = "import numpy as np\n\n\ndef draw(rng, n):\n    return rng.normal(size=n)\n\n\n"


@pytest.mark.parametrize(
    ("body", "inert"),
    [
        # a generator made for the call and dropped: the draw changes nothing anyone reads
        ("    x = draw(np.random.default_rng(0), 3)\n    return a\n", {9}),
        # the caller's own generator, dead after the draw: the same
        ("    rng = np.random.default_rng(0)\n    x = draw(rng, 3)\n    return a\n", {9, 10}),
        # ... read after it: the draw moved it on, so it stays
        ("    rng = np.random.default_rng(0)\n    draw(rng, 3)\n    return rng.random()\n", set()),
        # a generator the caller was given: changed for whoever gave it
        ("    draw(a, 3)\n    return 0\n", set()),
    ],
)
def test_a_call_that_changes_only_what_it_is_given_acts_where_that_is_read_later(
    body: str, inert: set[int]
) -> None:
    src = DRAW + "def run(a):\n" + body
    assert _inert_lines({"main.py": src})["main.py"] == inert


def test_a_function_that_changes_its_parameter_passes_that_on_to_its_callers() -> None:
    helpers = DRAW + "def twice(rng):\n    draw(rng, 1)\n    return draw(rng, 1)\n"
    main = (
        "import numpy as np\nfrom helpers import twice\n\n\ndef run(a):\n"
        "    rng = np.random.default_rng(0)\n    twice(rng)\n    return rng.random()\n"
    )
    assert _inert_lines({"main.py": main, "helpers.py": helpers})["main.py"] == set()
    dropped = main.replace("return rng.random()", "return a")
    assert _inert_lines({"main.py": dropped, "helpers.py": helpers})["main.py"] == {6, 7}
    # one that prints acts, whatever it is given
    loud = helpers.replace("return draw(rng, 1)", "print(draw(rng, 1))")
    assert _inert_lines({"main.py": dropped, "helpers.py": loud})["main.py"] == set()


@pytest.mark.parametrize(
    "config",
    [
        "learning_rate = 0.05\n",
        "SETTINGS = {'learning_rate': 0.05, 'epochs': 500}\nlearning_rate = SETTINGS['learning_rate']\n",
    ],
)
def test_a_setting_only_code_reaching_nothing_reads_is_text_by_the_runs_record(
    tmp_path: Path, config: str
) -> None:
    """A module-level value (a constant, a dict of settings) whose every reader reaches nothing
    is text when the run's record shows what ran; read where the result is reported, it is
    the implementation."""
    claim = "Gradient descent uses a learning rate of 0.05."
    (tmp_path / "config.py").write_text(config)
    for step, credited in (
        ("w = w - learning_rate * 2.0", True),
        ("step = learning_rate * 2.0", False),
    ):
        main = (
            "from config import learning_rate\n\n\ndef main(w):\n"
            f"    {step}\n    print(w)\n\n\nmain(1.0)\n"
        )
        (tmp_path / "main.py").write_text(main)
        lines = {
            "main.py": list(range(1, len(main.splitlines()) + 1)),
            "config.py": list(range(1, len(config.splitlines()) + 1)),
        }
        j = _judge_d1(tmp_path, claim, {"status": "ok", "lines_run": lines})
        assert (j.verdict == "aligned") is credited, j.reasoning


def _judge_d1(root: Path, claim: str, execution: dict):
    (j,) = judge_static(
        root, [{"paper": "p", "sau_id": "p-1", "dimension": "D1", "claim": claim}], execution
    )
    return j


def test_a_setting_passed_to_the_call_the_run_died_in_keeps_the_capped_doubt(
    tmp_path: Path,
) -> None:
    """An honest run that dies in a stub before it uses a setting it was given: the call it died
    in is where the run stopped, and what of it the run never reached (the loop the setting
    drives) gets the same capped doubt as the code after it; the setting is not text."""
    (tmp_path / "config.py").write_text("learning_rate = 0.05\n")
    main = (
        "from config import learning_rate\n\n\n"  # 1-3
        "def init(w):\n    raise NotImplementedError('TODO')\n\n\n"  # 4-7
        "def fit(w, lr):\n    w = init(w)\n    for _ in range(10):\n"  # 8-10
        "        w = w - lr * 2.0 * w\n    return w\n\n\n"  # 11-14
        "print(fit(1.0, learning_rate))\n"  # 15
    )
    (tmp_path / "main.py").write_text(main)
    claim = "Gradient descent uses a learning rate of 0.05."
    died = {
        "status": "failed",
        "lines_run": {"main.py": [1, 4, 5, 8, 9, 15], "config.py": [1]},
        "lines_raised": {"main.py": [5, 9, 15]},
    }
    j = _judge_d1(tmp_path, claim, died)
    assert (j.verdict, j.score) == ("partial", UNREACHED_CAP), j.reasoning
    ran = {
        "status": "ok",
        "lines_run": {"main.py": [1, 4, 8, 9, 10, 11, 12, 15], "config.py": [1]},
    }
    (tmp_path / "main.py").write_text(main.replace("raise NotImplementedError('TODO')", "return w"))
    assert _judge_d1(tmp_path, claim, ran).verdict == "aligned"
