"""Drift injection: each drift type changes exactly the code its SAU points at, and the static judge
sees the drifts on the demo papers."""

from __future__ import annotations

import ast
from pathlib import Path

import pandas as pd
import pytest

from sabench.drift import (
    DRIFT_COLUMNS,
    DRIFT_SUMMARY_COLUMNS,
    Submission,
    drift_frame,
    drift_summary,
    judge_mutants,
    make_mutants,
)
from sabench.saus import import_paper_saus

REPO = Path(__file__).resolve().parents[1]

MAIN = '''"""Toy pipeline."""
import json

from lib import evaluate, load, prepare, train


def loss(pred, y, lam, w):
    """Squared error plus an L2 penalty."""
    return ((pred - y) ** 2).mean() + lam * (w ** 2).sum()


def baseline_mean(y):
    return y.mean()


def main():
    cfg = json.load(open("config.json"))
    data = load(cfg["dataset"])  # load the data
    data = prepare(data)
    model = train(data, learning_rate=cfg["learning_rate"], epochs=200)
    results = {"model": evaluate(model, data), "baseline_mean": baseline_mean(data)}
    return results
'''
CONFIG = (
    '{\n  "learning_rate": 0.05,\n  "dataset": "toy-set",\n  "baselines": ["baseline_mean"]\n}\n'
)
SAUS = [
    {"sau_id": "p-D1-001", "dimension": "D1", "claim": "The learning rate is 0.05."},
    {"sau_id": "p-D1-002", "dimension": "D1", "claim": "Training runs for 200 epochs."},
    {
        "sau_id": "p-D2-001",
        "dimension": "D2",
        "claim": "The loss is `mean((pred - y) ** 2) + lam * sum(w ** 2)`.",
    },
    {"sau_id": "p-D3-001", "dimension": "D3", "claim": "Baseline `baseline_mean` is compared."},
    {
        "sau_id": "p-D4-001",
        "dimension": "D4",
        "claim": "The steps run `load` → `prepare` → `train` → `evaluate`.",
    },
]


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "main.py").write_text(MAIN)
    (sub / "config.json").write_text(CONFIG)
    (sub / "README.md").write_text("Uses baseline_mean and a learning rate of 0.05.\n")
    return sub


def by_type(mutants: list) -> dict[tuple[str, str], object]:
    return {(m.sau_id, m.drift_type): m for m in mutants}


def test_each_drift_type_edits_what_its_sau_points_at(toy: Path) -> None:
    mutants = by_type(make_mutants(toy, SAUS))
    value = mutants[("p-D1-001", "value")]
    assert (
        set(value.files) == {"config.json"}
        and '"learning_rate": 0.005' in value.files["config.json"]
    )
    epochs = mutants[("p-D1-002", "value")]
    assert "epochs=400" in epochs.files["main.py"]
    op = mutants[("p-D2-001", "operator")]
    assert "((pred - y) ** 2).mean() - lam * (w ** 2).sum()" in op.files["main.py"]
    removal = mutants[("p-D3-001", "removal")]
    assert "baseline_mean" not in removal.files["main.py"]
    assert "baseline_mean" not in removal.files["config.json"]
    assert '"toy-set"' in removal.files["config.json"]  # only the named item goes
    swap = mutants[("p-D4-001", "swap")]
    lines = [ln.strip() for ln in swap.files["main.py"].splitlines()]
    assert lines.index("data = prepare(data)") < lines.index(
        'data = load(cfg["dataset"])  # load the data'
    )
    stub = mutants[("p-D2-001", "stub")]
    assert "raise NotImplementedError" in stub.files["main.py"]
    assert '"""Squared error plus an L2 penalty."""' in stub.files["main.py"]  # docstring kept
    for m in mutants.values():
        for path, text in m.files.items():
            if path.endswith(".py"):
                ast.parse(text)
            original = (toy / path).read_text()
            assert text != original
            # everything but the edit is byte-identical: comments and layout stay
            if m.drift_type in ("value", "operator"):
                assert len(text.splitlines()) == len(original.splitlines())
        assert (toy / "README.md").read_text().startswith("Uses baseline_mean")


def test_eligible_and_cap(toy: Path) -> None:
    only = make_mutants(toy, SAUS, eligible=["p-D1-001"])
    assert {m.sau_id for m in only} == {"p-D1-001"}
    capped = make_mutants(toy, SAUS, max_per_type=1, types=["value"])
    assert [m.sau_id for m in capped] == ["p-D1-001"]
    assert make_mutants(toy.parent / "absent", SAUS) == []


def test_judge_mutants_rows_and_summary(toy: Path) -> None:
    sub = Submission(toy)
    mutants = make_mutants(sub, SAUS)
    rows = judge_mutants(toy, SAUS, mutants, run={"agent": "a", "paper": "p", "seed": "0"})
    table = drift_frame(rows)
    assert list(table.columns) == DRIFT_COLUMNS and len(table) == len(mutants)
    assert (table["n_other"] == len(SAUS) - 1).all()
    assert (toy / "main.py").read_text() == MAIN  # the submission itself is never touched
    value = table[(table.sau_id == "p-D1-001") & (table.drift_type == "value")].iloc[0]
    assert value.dropped and value.mutant_verdict == "drifted"
    summary = drift_summary(table)
    assert list(summary.columns) == DRIFT_SUMMARY_COLUMNS
    assert set(summary["drift_type"]) == set(table["drift_type"])
    assert drift_summary(drift_frame([])).empty


def test_static_judge_sees_demo_drifts() -> None:
    """On the demo papers' reference submissions (every SAU aligned), the static judge notices
    most single drifts and leaves the other SAUs alone."""
    rows = []
    for paper_dir in sorted((REPO / "resources" / "papers").iterdir()):
        sub = REPO / "resources" / "submissions" / "reference" / paper_dir.name
        saus = import_paper_saus(paper_dir)
        mutants = make_mutants(sub, saus, types=["value", "operator", "swap"])
        rows += judge_mutants(sub, saus, mutants, run={"paper": paper_dir.name})
    summary = drift_summary(drift_frame(rows)).set_index("drift_type")
    assert summary.loc["value", "n_mutants"] >= 15
    assert summary.loc["value", "recall"] >= 0.6
    assert summary.loc["operator", "recall"] >= 0.6
    assert summary.loc["swap", "recall"] >= 0.6
    assert (summary["false_alarm_rate"] <= 0.05).all()
    assert isinstance(summary, pd.DataFrame)


def test_stub_with_cited_lines_stubs_the_cited_function(toy: Path) -> None:
    """With another judge's cited lines, the stub goes where they are (the code credited for the
    claim), not into a function elsewhere that only shares its name; no cited function that
    carries the claim's terms: no stub mutant."""
    claim = {"sau_id": "p-D2-002", "dimension": "D2", "claim": "The `loss` adds an L2 penalty."}
    (toy / "penalty.py").write_text(
        "def l2_penalty(w, lam):\n    total = lam * (w ** 2).sum()\n    return total\n\n\n"
        "def unrelated(x):\n    return x + 1\n"
    )
    plain = by_type(make_mutants(toy, [claim], types=["stub"]))[("p-D2-002", "stub")]
    assert "`loss` (main.py" in plain.description  # named after the claim
    cited = {"p-D2-002": [("penalty.py", 2, 3)]}
    (m,) = make_mutants(toy, [claim], cited=cited, types=["stub"])
    assert set(m.files) == {"penalty.py"} and "`l2_penalty`" in m.description
    assert "raise NotImplementedError" in m.files["penalty.py"]
    assert "return x + 1" in m.files["penalty.py"]  # the other function stays
    elsewhere = {"p-D2-002": [("penalty.py", 7, 7)]}
    assert make_mutants(toy, [claim], cited=elsewhere, types=["stub"]) == []
