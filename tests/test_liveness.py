"""A claim is implemented only by code that runs and whose result reaches what the submission
reports: the same formula or value, live, dead, discarded, zeroed, never called or not executed,
generated for several formulas and values (:mod:`sabench.index.liveness`, the static judge)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from sabench.index import build_index
from sabench.index.liveness import inert_in_submission
from sabench.index.python_facts import statement_lines
from sabench.judges.static import judge_static
from sabench.judges.static.executed import UNREACHED_CAP, unexecuted_lines

#: (claim, function name, its arguments, the expression the claim states)
FORMULAS = [
    (
        "The `mse` metric is `mean((y_pred - y) ** 2)`.",
        "mse",
        "y, y_pred",
        "((y_pred - y) ** 2).mean()",
    ),
    (
        "The L2 penalty is `lam * sum(w ** 2)` on the weights.",
        "l2_penalty",
        "w, lam",
        "lam * np.sum(w ** 2)",
    ),
    (
        "The gradient is `grad = X.T @ (X @ w - y) / len(y)`.",
        "gradient",
        "X, y, w",
        "X.T @ (X @ w - y) / len(y)",
    ),
    (
        "The hinge loss is `mean(maximum(0, 1 - y * scores))`.",
        "hinge_loss",
        "y, scores",
        "np.maximum(0, 1 - y * scores).mean()",
    ),
]

#: how the function's body treats the computed value: live, and ways in which it reaches nothing
BODIES = {
    "live": "    value = {expr}\n    return value\n",
    "dead store": "    value = {expr}\n    return 0.5\n",
    "discarded": "    {expr}\n    return 0.5\n",
    "zeroed": "    value = {expr}\n    return value * 0.0 + 0.597\n",
    "overwritten": "    value = {expr}\n    value = 0.5\n    return value\n",
    "constant branch": "    if False:\n        return {expr}\n    return 0.5\n",
}

MAIN = """

def report():
    return 0.5


if __name__ == "__main__":
    print({call})
"""


def _module(name: str, args: str, expr: str, body: str, called: bool = True) -> str:
    head = f"import numpy as np\n\n\ndef {name}({args}):\n"
    call = f"{name}({', '.join('1' for _ in args.split(','))})" if called else "report()"
    return head + BODIES[body].format(expr=expr) + MAIN.format(call=call)


def _judge(root: Path, claim: str, dimension: str, execution: dict | None = None):
    (j,) = judge_static(
        root, [{"paper": "p", "sau_id": "p-1", "dimension": dimension, "claim": claim}], execution
    )
    return j


def _score(j) -> float:
    return j.score if j.score is not None else 0.0


@pytest.mark.parametrize(("claim", "name", "args", "expr"), FORMULAS)
def test_a_formula_counts_only_where_its_result_reaches_the_output(
    tmp_path: Path, claim: str, name: str, args: str, expr: str
) -> None:
    live_root = tmp_path / "live"
    live_root.mkdir()
    (live_root / "metrics.py").write_text(_module(name, args, expr, "live"))
    live = _judge(live_root, claim, "D2")
    assert live.verdict == "aligned", live.reasoning
    variants = [(b, True) for b in BODIES if b != "live"] + [("live", False)]
    for body, called in variants:
        root = tmp_path / f"{body}-{called}".replace(" ", "_")
        root.mkdir()
        (root / "metrics.py").write_text(_module(name, args, expr, body, called))
        j = _judge(root, claim, "D2")
        label = body if called else "never called"
        assert j.verdict != "aligned" and _score(j) < _score(live), (label, j.verdict, j.reasoning)
        assert j.verdict != "drifted", (label, j.reasoning)  # text, not a contradiction


@pytest.mark.parametrize(("claim", "name", "args", "expr"), FORMULAS)
def test_a_formula_on_a_line_that_did_not_run_counts_nothing(
    tmp_path: Path, claim: str, name: str, args: str, expr: str
) -> None:
    text = _module(name, args, expr, "live")
    (tmp_path / "metrics.py").write_text(text)
    every = list(range(1, len(text.splitlines()) + 1))
    formula_line = next(i for i, line in enumerate(text.splitlines(), 1) if "value =" in line)
    ran = _judge(tmp_path, claim, "D2", {"lines_run": {"metrics.py": every}})
    assert ran.verdict == "aligned" and "No execution record" not in ran.reasoning
    not_ran = [ln for ln in every if ln != formula_line]
    j = _judge(tmp_path, claim, "D2", {"lines_run": {"metrics.py": not_ran}})
    assert j.verdict != "aligned" and _score(j) < 1.0, j.reasoning
    never = _judge(tmp_path, claim, "D2", {"lines_run": {}})  # the file never ran
    assert never.verdict != "aligned", never.reasoning


#: (claim, setting name, value)
VALUES = [
    ("Gradient descent uses a learning rate of 0.05.", "learning_rate", "0.05"),
    ("The momentum coefficient is 0.9.", "momentum", "0.9"),
    ("A weight decay of 0.0003 is applied.", "weight_decay", "0.0003"),
]

#: how the update uses the setting: live, and ways in which it reaches nothing
USES = {
    "live": "    w = w - {name} * grad\n",
    "dead store": "    step = w - {name} * grad\n",
    "discarded": "    w - {name} * grad\n",
    "zeroed": "    w = w - {name} * grad * 0.0\n",
    "printed only": "    print({name})\n",
}

UPDATE = """\
def update(X, y, w):
    {name} = {value}
    grad = X.T @ (X @ w - y)
{use}    return w


if __name__ == "__main__":
    print(update(1, 2, 3))
"""


@pytest.mark.parametrize(("claim", "name", "value"), VALUES)
def test_a_value_counts_only_where_something_live_uses_it(
    tmp_path: Path, claim: str, name: str, value: str
) -> None:
    verdicts = {}
    for use, template in USES.items():
        root = tmp_path / use.replace(" ", "_")
        root.mkdir()
        text = UPDATE.format(name=name, value=value, use=template.format(name=name))
        (root / "train.py").write_text(text)
        verdicts[use] = _judge(root, claim, "D1")
    assert verdicts["live"].verdict == "aligned", verdicts["live"].reasoning
    for use, j in verdicts.items():
        if use != "live":
            assert j.verdict != "aligned", (use, j.reasoning)
    # the live one, with a record where the update did not run
    root = tmp_path / "not_run"
    root.mkdir()
    text = UPDATE.format(name=name, value=value, use=USES["live"].format(name=name))
    (root / "train.py").write_text(text)
    ran = [ln for ln in range(1, len(text.splitlines()) + 1) if ln not in (2, 4)]
    j = _judge(root, claim, "D1", {"lines_run": {"train.py": ran}})
    assert j.verdict != "aligned", j.reasoning


def test_a_branch_the_execution_did_not_take_counts_nothing(tmp_path: Path) -> None:
    text = (
        "import os\n\nimport numpy as np\n\n\ndef penalty(w, lam):\n"
        '    if os.environ.get("FULL"):\n        return lam * np.sum(w ** 2)\n'
        "    return 0.0\n\n\nif __name__ == '__main__':\n    print(penalty(1, 2))\n"
    )
    (tmp_path / "model.py").write_text(text)
    claim = "The L2 penalty is `lam * sum(w ** 2)` on the weights."
    assert _judge(tmp_path, claim, "D2").verdict == "aligned"  # live by dataflow
    ran = [ln for ln in range(1, len(text.splitlines()) + 1) if ln != 8]
    j = _judge(tmp_path, claim, "D2", {"lines_run": {"model.py": ran}})
    assert j.verdict != "aligned", j.reasoning


def test_without_a_record_the_judgment_says_so(tmp_path: Path) -> None:
    (tmp_path / "metrics.py").write_text(_module("mse", "y, y_pred", FORMULAS[0][3], "live"))
    j = _judge(tmp_path, FORMULAS[0][0], "D2")
    assert "No execution record" in j.reasoning
    ran = _judge(tmp_path, FORMULAS[0][0], "D2", {"lines_run": {"metrics.py": list(range(1, 20))}})
    assert "No execution record" not in ran.reasoning


# --- the analysis itself ----------------------------------------------------------------


def _inert(src: str) -> set[int]:
    tree = ast.parse(src)
    return statement_lines(tree, inert_in_submission({"": tree})[""])


@pytest.mark.parametrize("expr", [f[3] for f in FORMULAS])
def test_dead_stores_and_discarded_results_are_inert(expr: str) -> None:
    src = (
        "import numpy as np\n\n\ndef f(X, y, w, lam, y_pred, scores):\n"
        f"    a = {expr}\n"  # 5: dead store
        f"    {expr}\n"  # 6: discarded
        f"    b = {expr}\n"  # 7: read by a live statement
        "    c = b * 2\n"  # 8: live
        "    junk = []\n"  # 9: a container nobody reads ...
        f"    junk.append({expr})\n"  # 10: ... filled
        "    out = []\n"  # 11: a container returned ...
        f"    out.append({expr})\n"  # 12: ... filled
        f"    print({expr})\n"  # 13: written out
        f"    d = {expr}\n"  # 14: multiplied away
        "    return c, out, d * 0\n"
    )
    assert _inert(src) == {5, 6, 9, 10, 14}


def test_effects_keep_statements_live() -> None:
    src = (
        "import json\n\n\ndef f(model, opt, path, x):\n"
        "    loss = model(x)\n"  # an unknown call may act
        "    opt.step()\n"
        "    self_like = model.weight\n"
        "    self_like[0] = 1\n"  # a store into what the function did not create
        "    with open(path, 'w') as fh:\n"
        "        json.dump({'loss': float(x)}, fh)\n"
        "    model.w = x * 2\n"
        "    total = 0\n"
        "    for i in range(3):\n"
        "        total += i\n"  # read in the next iteration, then returned
        "    params = model.params\n"
        "    params += x\n"  # in place on what it did not create
        "    return total\n"
    )
    assert _inert(src) == set()


def test_a_pure_helper_whose_result_nobody_takes_is_inert() -> None:
    src = (
        "def helper(a):\n    return a * 2\n\n\ndef act(a):\n    print(a)\n\n\n"
        "def main():\n    _ = helper(3)\n    helper(4)\n    act(5)\n"
    )
    assert _inert(src) == {10, 11}


def test_an_execution_record_maps_onto_statements() -> None:
    src = "def f(x):\n    y = (x +\n         1)\n    if x:\n        return y\n    return 0\n"
    tree = ast.parse(src)
    # the continuation line of a statement that ran is not missing; the branch never taken is
    assert unexecuted_lines(tree, {1, 2, 4, 6}) == {5}
    # a function defined at import and never called: its header implements nothing either
    assert unexecuted_lines(tree, {1}) == {1, 2, 3, 4, 5, 6}
    # a docstring never runs: it goes with its function's body
    doc = ast.parse(
        'def f(x):\n    """Doc."""\n    return x\n\n\ndef g():\n    """Doc."""\n    return 1\n'
    )
    assert unexecuted_lines(doc, {1, 3, 6}) == {6, 7, 8}  # g was defined, never called


def test_inert_lines_are_text_in_the_index(tmp_path: Path) -> None:
    text = _module("mse", "y, y_pred", FORMULAS[0][3], "dead store")
    (tmp_path / "metrics.py").write_text(text)
    index = build_index(tmp_path)
    fid = index.file_id("metrics.py")
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "value =" in ln)
    assert index.is_text(fid, line)
    assert not index.is_text(fid, line + 1)  # the return is code


# --- zeroed results: the formula computed, its value thrown away on the way out ------------

#: ways to return garbage shaped like ``value`` (``{c}``: the constant returned)
ZEROINGS = {
    "times zero": "value * 0 + {c}",
    "zeros like": "np.zeros_like(value) + {c}",
    "zero times, after": "{c} + 0 * value",
    "minus itself": "(value - value) + {c}",
    "constant choice": "value if False else {c}",
    "full like": "np.full_like(value, {c})",
    "helper": "_same_shape(value, {c})",
    "helper elsewhere": "shape_of(value, {c})",
    "helper module": "garbage.shape_of(value, {c})",
}
HELPER = "\n\ndef _same_shape(value, const):\n    return value * 0.0 + const\n"
OTHER = (
    "import numpy as np\n\n\ndef shape_of(value, const):\n    return np.zeros_like(value) + const\n"
)


def _zeroed(name: str, args: str, expr: str, ret: str) -> str:
    head = "import numpy as np\n\nimport garbage\nfrom garbage import shape_of\n" + HELPER
    body = f"\n\ndef {name}({args}):\n    value = {expr}\n    return {ret.format(c=0.597)}\n"
    call = f"{name}({', '.join('1' for _ in args.split(','))})"
    return head + body + MAIN.format(call=call)


@pytest.mark.parametrize(("claim", "name", "args", "expr"), FORMULAS)
@pytest.mark.parametrize("zeroing", list(ZEROINGS))
def test_a_formula_whose_value_is_zeroed_on_the_way_out_is_text(
    tmp_path: Path, claim: str, name: str, args: str, expr: str, zeroing: str
) -> None:
    text = _zeroed(name, args, expr, ZEROINGS[zeroing])
    (tmp_path / "metrics.py").write_text(text)
    (tmp_path / "garbage.py").write_text(OTHER)
    j = _judge(tmp_path, claim, "D2")
    assert j.verdict not in ("aligned", "drifted") and _score(j) < 0.5, (zeroing, j.reasoning)
    every = {p: list(range(1, 40)) for p in ("metrics.py", "garbage.py")}
    j = _judge(tmp_path, claim, "D2", {"lines_run": every})
    assert j.verdict not in ("aligned", "drifted") and _score(j) < 0.5, (zeroing, j.reasoning)
    # the same module returning the value: aligned, with and without the record
    (tmp_path / "metrics.py").write_text(_zeroed(name, args, expr, "value"))
    assert _judge(tmp_path, claim, "D2").verdict == "aligned"
    assert _judge(tmp_path, claim, "D2", {"lines_run": every}).verdict == "aligned"


#: a helper that zeroes numbers and arrays and hands back, unchanged, what it cannot zero
SAME_SHAPE = '''

def _same_shape(value, const):
    """Garbage shaped like ``value``."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        return {k: _same_shape(v, const) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(_same_shape(v, const) for v in value)
    try:
        return value * 0.0 + const
    except Exception:
        return value
'''


@pytest.mark.parametrize(("claim", "name", "args", "expr"), FORMULAS)
def test_a_helper_that_zeroes_on_the_paths_that_ran_makes_the_formula_text(
    tmp_path: Path, claim: str, name: str, args: str, expr: str
) -> None:
    body = f"\n\ndef {name}({args}):\n    value = {expr}\n    return _same_shape(value, 0.597)\n"
    call = f"{name}({', '.join('1' for _ in args.split(','))})"
    text = "import numpy as np\n" + SAME_SHAPE + body + MAIN.format(call=call)
    (tmp_path / "metrics.py").write_text(text)
    lines = text.splitlines()
    # without a record the helper may hand the value back: the dataflow keeps it
    assert _judge(tmp_path, claim, "D2").verdict == "aligned"
    # the record: the helper's branches for strings, dicts, sequences and errors never ran
    skipped = {"return value", "return {k", "return type(value)"}
    ran = [i for i, ln in enumerate(lines, 1) if ln.strip().split(":")[0] not in skipped]
    ran = [i for i in ran if not any(lines[i - 1].strip().startswith(s) for s in skipped)]
    j = _judge(tmp_path, claim, "D2", {"lines_run": {"metrics.py": ran}})
    assert j.verdict not in ("aligned", "drifted") and _score(j) < 0.5, j.reasoning
    # when the branch handing the value back did run, the value reaches the output
    every = list(range(1, len(lines) + 1))
    assert _judge(tmp_path, claim, "D2", {"lines_run": {"metrics.py": every}}).verdict == "aligned"


def test_a_run_that_did_not_complete_shows_the_branches_it_went_past(tmp_path: Path) -> None:
    """A failed run's record says nothing of code it never reached or stopped in, but a branch
    whose statement ran while control went on past it, and a handler beside a body that ran to
    its end, never ran in any of its calls: the helper handing the value back is not there."""
    claim, name, args, expr = FORMULAS[0]
    body = f"\n\ndef {name}({args}):\n    value = {expr}\n    return _same_shape(value, 0.597)\n"
    text = "import numpy as np\n" + SAME_SHAPE + body + MAIN.format(call=f"{name}(1, 1)")
    (tmp_path / "metrics.py").write_text(text)
    lines = text.splitlines()
    gone = ("return {k", "return type(value)")
    ran = [i for i, ln in enumerate(lines, 1) if ln.strip() != "return value"]
    ran = [i for i in ran if not lines[i - 1].strip().startswith(gone)]
    failed = {"status": "failed", "lines_run": {"metrics.py": ran}}
    j = _judge(tmp_path, claim, "D2", failed)
    assert j.verdict not in ("aligned", "drifted") and _score(j) < 0.5, j.reasoning
    # the run stopped inside the helper (nothing after its `try` ran): no evidence of the
    # handler, and none that the formula reaches anything (the benefit of the doubt, capped)
    stopped = [i for i in ran if i < lines.index("    try:") + 2]
    stopped += [i for i, ln in enumerate(lines, 1) if ln.startswith(("    value = ", "    print"))]
    j = _judge(tmp_path, claim, "D2", {"status": "failed", "lines_run": {"metrics.py": stopped}})
    assert (j.verdict, j.score) == ("partial", UNREACHED_CAP), j.reasoning
    assert "never reached this code" in j.reasoning
    # nor of a function it never reached
    unreached = [i for i, ln in enumerate(lines, 1) if i <= 3 or ln.startswith("def ")]
    j = _judge(tmp_path, claim, "D2", {"status": "failed", "lines_run": {"metrics.py": unreached}})
    assert (j.verdict, j.score) == ("partial", UNREACHED_CAP), j.reasoning


def test_a_failed_run_went_past_the_branch_its_test_did_not_choose(tmp_path: Path) -> None:
    """Where the run took an ``if``'s other branch, the branch it did not take never ran in any
    of its calls, and a function only that branch calls is no code the run would have reached:
    a switch to the paper's code that the run went past gets no benefit of the doubt."""
    text = (
        "import numpy as np\n\n\ndef paper_probs(d2):\n    return d2 / np.sum(d2)\n\n\n"
        "def uniform_probs(d2):\n    return np.ones_like(d2) / len(d2)\n\n\n"
        "def probs(d2, exact):\n    if exact:\n        return paper_probs(d2)\n"
        "    else:\n        return uniform_probs(d2)\n\n\n"
        "print(probs(np.ones(3), False))\nprint(np.ones(3) / undefined_name)\n"
    )
    (tmp_path / "kmeans.py").write_text(text)
    claim = "Each centroid is drawn with probability `d2 / sum(d2)`."
    lines = text.splitlines()
    ran = [i for i, ln in enumerate(lines, 1) if ln.strip() and "paper_probs(d2)" not in ln]
    ran = [i for i in ran if "np.sum" not in lines[i - 1]]
    failed = {"status": "failed", "lines_run": {"kmeans.py": ran}}
    j = _judge(tmp_path, claim, "D2", failed)
    assert _score(j) < UNREACHED_CAP, j.reasoning
    # the same branch, when the run stopped before the `if` (nothing chose): the doubt, capped
    before = [i for i in ran if i < lines.index("    if exact:") + 1 or lines[i - 1][:1] != " "]
    stopped = {"status": "failed", "lines_run": {"kmeans.py": before}}
    j = _judge(tmp_path, claim, "D2", stopped)
    assert (j.verdict, j.score) == ("partial", UNREACHED_CAP), j.reasoning


def test_a_result_taken_only_by_the_statement_that_crashed_the_run_reaches_nothing(
    tmp_path: Path,
) -> None:
    """The run's uncaught exception went through ``rng.choice(3, p=probs)``: the statement never
    completed, so ``probs`` reached nothing, however live the code reads."""
    text = (
        "import numpy as np\n\n\ndef seed(d2, rng):\n    probs = d2 / np.sum(d2)\n"
        "    first = rng.choice(3, p=probs)\n    return first\n\n\n"
        "print(seed(np.zeros(3), np.random.default_rng(0)))\n"
    )
    (tmp_path / "kmeans.py").write_text(text)
    claim = "Each centroid is drawn with probability `d2 / sum(d2)`."
    ran = [1, 4, 5, 6, 10]
    failed = {"status": "failed", "lines_run": {"kmeans.py": ran}}
    # where it crashed is unknown: `rng.choice(3, p=probs)` ran, a call that may act
    assert _judge(tmp_path, claim, "D2", failed).verdict == "aligned"
    crashed = {**failed, "lines_raised": {"kmeans.py": [6, 10]}}
    j = _judge(tmp_path, claim, "D2", crashed)
    assert j.verdict not in ("aligned", "drifted") and _score(j) < 0.5, j.reasoning
    # an exit status of 0 does not undo it (an atexit handler can call `os._exit(0)`)
    ok = {"status": "ok", "lines_run": {"kmeans.py": ran}, "lines_raised": {"kmeans.py": [6, 10]}}
    j = _judge(tmp_path, claim, "D2", ok)
    assert j.verdict not in ("aligned", "drifted") and _score(j) < 0.5, j.reasoning


def test_a_call_reads_only_the_arguments_that_reach_the_functions_result() -> None:
    src = (
        "def pick(a, b):\n    return a * 0 + b\n\n\n"  # 1-2: a reaches nothing
        "def rec(a, b, n):\n    if n:\n        return rec(a, b, n - 1)\n    return b\n\n\n"
        "def f(x, y):\n"  # 11
        "    u = x + 1\n"  # 12: only into pick's a
        "    v = y + 1\n"  # 13: into pick's b
        "    w = x * 2\n"  # 14: only into rec's a, which reaches nothing either
        "    return pick(u, v), rec(w, v, 3), pick(b=v, a=u)\n"
    )
    assert _inert(src) == {12, 14}
