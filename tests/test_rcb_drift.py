"""Drift the authors' tests define (sabench.peer_data.rcb_drift) on a small RCB-shaped paper made
here (numpy code, a unittest file): the mutants, a mutant the tests catch counts as caught, one
they do not is no drift, the exec judge says what the tests say, and the cache. The tests that run
code use the real sandbox (bwrap, the project's sandbox Python) and skip without it."""

from __future__ import annotations

import ast
import math
from pathlib import Path
from typing import Any

import pytest

from sabench.peer_data.rcb_drift import (
    TYPES,
    MutantResult,
    SnippetMutant,
    TestOutcome,
    TestRunner,
    Verdict,
    drift_table,
    exec_verdicts,
    judge_mutant,
    own_lines,
    paper_environment,
    reference_files,
    reference_verdicts,
    snippet_mutants,
    snippet_sau_ids,
    why_not,
)
from sabench.peer_data.researchcodebench import RCBPaper, load_papers, open_snapshot, snippet_saus

PAPER = "toy-rcb"
TEX = r"""\documentclass{article}
\title{Toy ridge}
\begin{document}
\section{Method}
The loss is the mean squared residual plus an L2 penalty, $L(w) = \frac{1}{n}\lVert Xw - y
\rVert^2 + \lambda \lVert w \rVert^2$, with the residual $r = Xw - y$.
Features are standardised to zero mean and unit variance before fitting.
The output is scaled by two.
\end{document}
"""
MODEL = """import numpy as np


def standardise(x):
    return (x - x.mean(axis=0)) / x.std(axis=0)


def ridge_loss(X, y, w, lam):
    # <paper2code name="ridge loss">
    # <paper2code name="residual">
    r = X @ w - y
    # </paper2code name="residual">
    loss = np.mean(r ** 2) + lam * np.sum(w ** 2)
    # </paper2code name="ridge loss">
    return loss


def features(X):
    # <paper2code name="features">
    Z = standardise(X)
    # </paper2code name="features">
    return Z


def scale(x):
    # <paper2code name="scale">
    a = x * 2.0
    b = x + 1.0
    # </paper2code name="scale">
    return a
"""
TEST = """import unittest

import numpy as np

from model import features, ridge_loss, scale


class TestToy(unittest.TestCase):
    def test_loss(self):
        rng = np.random.default_rng(0)
        X, y, w = rng.normal(size=(6, 3)), rng.normal(size=6), rng.normal(size=3)
        want = np.mean((X @ w - y) ** 2) + 0.1 * np.sum(w ** 2)
        self.assertTrue(np.isclose(ridge_loss(X, y, w, 0.1), want))

    def test_features(self):
        X = np.random.default_rng(1).normal(3.0, 2.0, size=(50, 2))
        self.assertTrue(np.allclose(features(X).mean(axis=0), 0.0))

    def test_scale(self):
        self.assertEqual(scale(3.0), 6.0)


if __name__ == "__main__":
    unittest.main()
"""


def make_checkout(root: Path) -> Path:
    """A folder laid out like RCB's checkout, with one paper."""
    (root / "pset" / PAPER).mkdir(parents=True)
    (root / "pset" / "papers.yaml").write_text(
        f"- id: {PAPER}\n  title: Toy ridge\n  annotated_file_paths: model.py\n"
        "  context_file_paths: null\n"
    )
    for name, text in {
        "paper2code_paper.tex": TEX,
        "model.py": MODEL,
        "paper2code_test.py": TEST,
    }.items():
        (root / "pset" / PAPER / name).write_text(text)
    return root


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> tuple[RCBPaper, list[dict[str, Any]]]:
    root = make_checkout(tmp_path_factory.mktemp("rcb"))
    (paper,) = load_papers(open_snapshot(root))
    return paper, snippet_saus(paper)


def mutants(toy: tuple[RCBPaper, list[dict[str, Any]]], **kw: Any) -> list[SnippetMutant]:
    paper, saus = toy
    return snippet_mutants(paper, snippet_sau_ids(paper, saus), **kw)


def find(ms: list[SnippetMutant], snippet: str, kind: str, needle: str = "") -> SnippetMutant:
    return next(
        m
        for m in ms
        if m.snippet == snippet and m.drift_type == kind and needle in m.text.replace(" ", "")
    )


# --- mutants (no sandbox) ------------------------------------------------------------------------


def test_mutants_are_seeded_parse_and_keep_to_their_snippet(toy: Any) -> None:
    paper, saus = toy
    ms = mutants(toy, max_per_type=5)
    assert ms == mutants(toy, max_per_type=5)  # deterministic
    assert {m.drift_type for m in ms} >= {"value", "operator", "removal", "swap", "stub"}
    assert {m.drift_type for m in ms} <= set(TYPES)
    ids = {s["sau_id"] for s in saus}
    for m in ms:
        ast.parse(m.text)
        assert "paper2code" not in m.text  # saved without markers, as the reference is
        assert m.sau_id in ids
    assert len({m.digest for m in ms}) == len(ms)
    # the residual's operator belongs to the inner snippet, not to the outer one
    outer = next(s for s in paper.snippets if s.name == "ridge loss")
    inner = next(s for s in paper.snippets if s.name == "residual")
    assert not own_lines(outer, paper.snippets) & set(range(inner.start_line, inner.end_line + 1))
    assert find(ms, "residual", "operator", "r=X@w+y")
    assert not any(m.snippet == "ridge loss" and "r=X@w+y" in m.text.replace(" ", "") for m in ms)
    # a stub replaces the whole snippet, the inner one too
    stub = find(ms, "ridge loss", "stub")
    assert "raise NotImplementedError" in stub.text and "r = X @ w - y" not in stub.text
    # the normalisation drift drops the call that standardises
    assert find(ms, "features", "normalisation", "Z=X\n")
    # one per snippet and type at most with the default
    per = [(m.snippet, m.drift_type) for m in mutants(toy, max_per_type=1)]
    assert len(per) == len(set(per))


def test_other_seeds_draw_other_sites(toy: Any) -> None:
    drawn = {
        frozenset(m.digest for m in mutants(toy, max_per_type=1, seed=s, types=["value"]))
        for s in range(6)
    }
    assert len(drawn) > 1


def test_reasons_a_paper_does_not_run() -> None:
    def failed(tail: str, kind: str = "fail") -> TestOutcome:
        return TestOutcome(kind, "failed", 1, 1.0, tail=tail)

    assert why_not(failed("ModuleNotFoundError: No module named 'mmgen'")) == (
        "missing package: mmgen"
    )
    assert why_not(failed("RuntimeError: operator torchvision::nms does not exist")).startswith(
        "torchvision"
    )
    assert why_not(failed("AssertionError: Torch not compiled with CUDA enabled")) == "needs a GPU"
    assert why_not(failed("urllib.error.URLError: <urlopen error>")).startswith("needs data")
    assert why_not(failed("", "timeout")).startswith("timeout")


def test_table_counts_caught_mutants_only_for_recall(toy: Any) -> None:
    ms = mutants(toy, max_per_type=1, types=["operator", "swap"])
    op = next(m for m in ms if m.drift_type == "operator")
    sw = next(m for m in ms if m.drift_type == "swap")
    results = [
        MutantResult(
            op,
            TestOutcome("fail", "ok", 1, 1.0),
            Verdict("missing", 0.0),
            Verdict("aligned", 1.0),
            Verdict("drifted", 0.0),
        ),
        MutantResult(
            sw,
            TestOutcome("pass", "ok", 0, 1.0),
            Verdict("aligned", 1.0),
            Verdict("aligned", 1.0),
            Verdict("aligned", 1.0),
        ),
    ]
    rows = {r["drift_type"]: r for r in drift_table(results, {op.sau_id: 0.0}, {})}
    assert rows["operator"]["caught"] == 1 and rows["operator"]["static_recall"] == 1.0
    assert rows["operator"]["static_drop"] == 1.0 and rows["operator"]["exec_recall"] == 1.0
    assert rows["swap"]["caught"] == 0 and math.isnan(rows["swap"]["static_recall"])
    assert rows["swap"]["exec_match"] == 1.0  # aligned on a mutant the tests pass
    assert rows["all"]["mutants"] == 2 and rows["all"]["false_static"] == 0.0


def test_an_abstention_is_judged_but_no_catch_and_no_false_alarm(toy: Any) -> None:
    """Recall counts an undetermined mutant as judged and missed; the abstentions are counted."""
    ms = mutants(toy, max_per_type=1, types=["operator"])
    op = ms[0]
    caught = TestOutcome("fail", "ok", 1, 1.0)
    results = [
        MutantResult(op, caught, Verdict("undetermined", None), Verdict("undetermined", None)),
        MutantResult(op, caught, Verdict("drifted", 0.0), Verdict("undetermined", None)),
        MutantResult(op, caught, Verdict("error", None), Verdict("aligned", 1.0)),
    ]
    assert Verdict("undetermined", None).judged and not Verdict("undetermined", None).drifted
    assert not Verdict("error", None).judged
    row = {r["drift_type"]: r for r in drift_table(results, {op.sau_id: 0.0}, {})}["operator"]
    assert row["caught"] == 3
    assert row["static_recall"] == 0.5 and row["static_abstain"] == 0.5  # the error is left out
    assert row["static_drop"] == 0.0  # no reference score to fall below


# --- in the sandbox ------------------------------------------------------------------------------


class Counting:
    """A backend that counts its runs."""

    def __init__(self, backend: Any) -> None:
        self.backend, self.runs, self.name = backend, 0, backend.name

    def run(self, spec: Any, log: Path) -> Any:
        self.runs += 1
        return self.backend.run(spec, log)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("rcb-cache")


@pytest.fixture(scope="module")
def runner(runtime: dict, cache: Path) -> TestRunner:
    from sabench.sandbox import get_backend

    return TestRunner(runtime, cache, backend=Counting(get_backend("bwrap")))


def test_reference_is_runnable_and_no_judge_flags_its_exec(
    toy: Any, runner: TestRunner, runtime: dict, cache: Path
) -> None:
    paper, saus = toy
    env = paper_environment(paper, runner)
    assert env.runnable and env.reason == ""
    _, ran = reference_verdicts(paper, saus, runtime, cache)
    assert {v.verdict for v in ran.values()} == {"aligned"}


def test_caught_mutant_is_a_drift_and_exec_says_so(
    toy: Any, runner: TestRunner, runtime: dict, cache: Path
) -> None:
    paper, saus = toy
    m = find(mutants(toy, max_per_type=5), "residual", "operator", "r=X@w+y")
    r = judge_mutant(paper, saus, m, runner, exec_runtime=runtime, cache_dir=cache)
    assert r.tests.kind == "fail" and "Traceback" in r.tests.said
    assert r.caught
    assert r.exec is not None and r.exec.verdict == "drifted" and r.exec_matches is True
    assert r.static is not None  # judged: the tests caught it


def test_uncaught_mutant_is_no_drift_and_exec_agrees(
    toy: Any, runner: TestRunner, runtime: dict, cache: Path
) -> None:
    paper, saus = toy
    m = find(mutants(toy, max_per_type=5), "scale", "swap")  # b is never used: same behaviour
    assert m.text.index("b = x + 1.0") < m.text.index("a = x * 2.0")
    r = judge_mutant(paper, saus, m, runner, exec_runtime=runtime, cache_dir=cache)
    assert r.tests.passed and not r.caught
    assert r.static is None and r.exec is None  # not a drift: not judged by default
    folder_verdict = judge_mutant(
        paper,
        saus,
        m,
        runner,
        exec_runtime=runtime,
        cache_dir=cache,
        judge_all=True,
    )
    assert folder_verdict.exec is not None and folder_verdict.exec.verdict == "aligned"
    assert folder_verdict.exec_matches is True


def test_stub_is_a_placeholder_for_exec(
    toy: Any, runner: TestRunner, runtime: dict, cache: Path
) -> None:
    paper, saus = toy
    m = find(mutants(toy), "scale", "stub")
    r = judge_mutant(paper, saus, m, runner, exec_runtime=runtime, cache_dir=cache)
    assert r.caught and r.exec is not None and r.exec.verdict == "placeholder"
    assert r.exec_matches is True


def test_outcomes_are_cached_by_content(toy: Any, runner: TestRunner) -> None:
    paper, _ = toy
    m = find(mutants(toy, max_per_type=5), "scale", "value")
    counting: Counting = runner.backend
    files = reference_files(paper, m)
    first = runner.run(files, paper.test_entry_point)
    runs = counting.runs
    again = runner.run(dict(files), paper.test_entry_point)
    assert counting.runs == runs and again.cached and not first.cached
    assert (again.kind, again.said) == (first.kind, first.said)
    changed = {**files, "model.py": files["model.py"] + b"\n# changed\n"}
    runner.run(changed, paper.test_entry_point)
    assert counting.runs == runs + 1  # another content: run again


def test_exec_cache_serves_every_sau_of_one_check(toy: Any, runtime: dict, tmp_path: Path) -> None:
    from sabench.peer_data.rcb_drift import submission_files, write_files

    paper, saus = toy
    folder = write_files(tmp_path / "sub", submission_files(paper))
    first = exec_verdicts(folder, saus, runtime, tmp_path / "cache")
    again = exec_verdicts(folder, saus, runtime, tmp_path / "cache")
    assert {v.verdict for v in first.values()} == {"aligned"}
    assert sum(not v.cached for v in first.values()) == 1  # one check, one run
    assert all(v.cached for v in again.values())
