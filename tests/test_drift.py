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
from sabench.drift.mutants import parses
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


def test_mutants_of_a_file_saved_with_its_markdown(tmp_path: Path) -> None:
    """A model's answer saved with its prose and fences is mutated where its code is (the judge
    reads that code), and a mutant must leave as much of it parsing as the original does."""
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "main.py").write_text(
        "## Code: main.py\n\n```python\n"
        + MAIN.replace("epochs=200", "epochs=EPOCHS")
        + "\nEPOCHS = 200\n```\n\nThe pipeline above trains the toy model.\n"
    )
    (sub / "config.json").write_text(CONFIG)
    mutants = by_type(make_mutants(sub, SAUS, types=["stub", "value"]))
    stub = mutants[("p-D2-001", "stub")]
    assert "`loss` (main.py" in stub.description
    assert "raise NotImplementedError" in stub.files["main.py"]
    assert stub.files["main.py"].startswith("## Code: main.py\n\n```python\n")
    value = mutants[("p-D1-002", "value")]
    assert "EPOCHS = 400" in value.files["main.py"]
    original = (sub / "main.py").read_text()
    assert parses("main.py", stub.files["main.py"], original)
    broken = original.replace("def baseline_mean(y):", "def baseline_mean(y:")
    assert not parses("main.py", broken, original)  # the code after it no longer parses


def test_value_with_cited_lines_changes_the_cited_setting_and_its_copies(toy: Path) -> None:
    """With another judge's cited lines, a value mutant changes the setting on those lines and
    its copies under the same name elsewhere, never a setting that only shares a word with the
    claim (``dim=0`` of a concatenation for a claim about dimensions); none cited: no mutant."""
    claim = {"sau_id": "p-D1-003", "dimension": "D1", "claim": "The hidden dimension is 0.05."}
    (toy / "model.py").write_text(
        "import numpy as np\n\nHIDDEN_DIM = 0.05\n\n\ndef stack(xs):\n"
        "    return np.concatenate(xs, dim=0.05)\n"
    )
    (toy / "settings.yaml").write_text("hidden_dim: 0.05\nother_dim: 0.05\n")
    loose = by_type(make_mutants(toy, [claim], types=["value"]))[("p-D1-003", "value")]
    assert "dim=0.005" in loose.files.get("model.py", "")  # without citations: any named alike
    (m,) = make_mutants(toy, [claim], cited={"p-D1-003": [("model.py", 3, 3)]}, types=["value"])
    assert "HIDDEN_DIM = 0.005" in m.files["model.py"]
    assert "dim=0.05)" in m.files["model.py"]  # the concatenation is left alone
    assert m.files["settings.yaml"] == "hidden_dim: 0.005\nother_dim: 0.05\n"
    nowhere = {"p-D1-003": [("model.py", 1, 1)]}
    assert make_mutants(toy, [claim], cited=nowhere, types=["value"]) == []


# --------------------------------------------------------------------------------------------
# Executed mutants: the exec judge's expected results see what the mutated code computes
# --------------------------------------------------------------------------------------------

RIDGE = "ridge-gd"
RESULT_SAU = "ridge-gd-D3-006"  # expected: linear-gauss RMSE 0.597 for ridge_gd and closed_form


@pytest.fixture(scope="module")
def bwrap_runs() -> None:
    from sabench.sandbox import get_backend
    from sabench.sandbox.settings import default_python_env

    ok, why = get_backend("bwrap").available()
    if not ok:
        pytest.skip(f"bwrap cannot run here, so no mutant can be executed: {why}")
    if default_python_env() is None:
        pytest.skip("no sandbox Python env (.venv-sandbox): run `make sandbox-env`")


def test_executed_mutant_breaking_an_expected_result_is_caught_by_exec(
    bwrap_runs: None, tmp_path: Path
) -> None:
    """The reference and its mutants run reproduce.sh in the sandbox; a tenfold ``l2_lambda``
    moves the RMSE away from the paper's (drifted), removing the dataset leaves it unreported
    (missing): both drop, decided by the expected result."""
    from sabench.drift import Mutant, basis_summary, sandbox_execution

    sub = REPO / "resources" / "submissions" / "reference" / RIDGE
    saus = import_paper_saus(REPO / "resources" / "papers" / RIDGE)
    result = [s for s in saus if s["sau_id"] == RESULT_SAU]  # no checks: a few seconds in all
    config = (sub / "config.json").read_text()
    assert '"l2_lambda": 0.1,' in config
    lam = Mutant(
        RESULT_SAU,
        "D3",
        "value",
        "config.json",
        6,
        "l2_lambda 0.1 -> 1.0",
        {"config.json": config.replace('"l2_lambda": 0.1,', '"l2_lambda": 1.0,')},
    )
    removal = [m for m in make_mutants(sub, saus, types=["removal"]) if m.sau_id == RESULT_SAU]
    assert removal, "no removal mutant of the result claim"
    execution = sandbox_execution()
    assert execution.runtime["network"] == "none" and execution.runtime["backend"] == "bwrap"
    judges = [("exec", {"cache_dir": str(tmp_path / "cache")})]
    rows = judge_mutants(sub, result, [lam, *removal], judges, {"paper": RIDGE}, execution)
    table = drift_frame(rows)
    assert len(table) == 1 + len(removal) and table["fault"].isna().all()
    assert (table["basis"] == "expected").all()
    assert (table["base_verdict"] == "aligned").all()  # the reference reproduces the paper
    assert table["dropped"].all()
    assert table.iloc[0]["mutant_verdict"] == "drifted"
    assert set(table.iloc[1:]["mutant_verdict"]) == {"missing"}
    by_basis = basis_summary(table)
    assert by_basis[by_basis["drift_type"] == "all"]["recall"].tolist() == [1.0]


def test_unexecuted_exec_judge_has_no_result_to_compare(toy: Path) -> None:
    """Without execution the exec judge reports an expected result as missing on the original
    and on the mutant alike: no drop, so recall on expected results needs the execution."""
    sau = {**SAUS[0], "expected": [{"metric": "model", "value": 1.0, "tolerance": 0.1}]}
    mutants = make_mutants(toy, [sau], types=["value"])
    table = drift_frame(judge_mutants(toy, [sau], mutants, [("exec", {})]))
    assert len(table) == len(mutants) >= 1
    assert (table["basis"] == "expected").all() and not table["dropped"].any()
    assert set(table["base_verdict"]) == set(table["mutant_verdict"]) == {"missing"}


def test_sandbox_faults_are_counted_not_scored(
    toy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mutant the sandbox could not execute gets a fault and no score: out of recall and false
    alarms, counted in n_faults; when the original cannot run, every mutant is a fault."""
    from sabench.drift import Execution, basis_summary, scored
    from sabench.faults import Fault

    calls: list[Path] = []
    runs_left = [2]  # the original and the first mutant run, then the sandbox cannot start

    def run(self: Execution, run_dir: Path) -> dict:
        calls.append(run_dir)
        runs_left[0] -= 1
        if runs_left[0] < 0:
            raise Fault("sandbox_error", "bwrap: cannot create a user namespace")
        return {"status": "ok", "metrics": {}}

    monkeypatch.setattr(Execution, "run", run)
    mutants = make_mutants(toy, SAUS, types=["value"])
    assert len(mutants) >= 2
    execution = Execution(tmp_path)
    table = drift_frame(judge_mutants(toy, SAUS, mutants, run={"paper": "p"}, execution=execution))
    assert len(calls) == 1 + len(mutants)
    assert table["fault"].isna().tolist() == [True] + [False] * (len(mutants) - 1)
    assert table["fault"].iloc[1] == "sandbox_error: bwrap: cannot create a user namespace"
    faulted = table[table["fault"].notna()]
    assert not faulted["dropped"].any() and faulted["mutant_score"].isna().all()
    summary = drift_summary(table).set_index("drift_type")
    assert summary.loc["value", "n_mutants"] == 1
    assert summary.loc["value", "n_faults"] == len(mutants) - 1
    assert summary.loc["value", "recall"] == float(scored(table)["dropped"].mean())
    assert table["basis"].isna().all() and basis_summary(table).empty  # static runs no code
    runs_left[0] = 0
    dead = drift_frame(judge_mutants(toy, SAUS, mutants, execution=execution))
    assert len(dead) == len(mutants) and dead["fault"].notna().all()
    assert drift_summary(dead)["n_mutants"].sum() == 0


def test_mutants_never_run_unsandboxed_or_networked(tmp_path: Path) -> None:
    from sabench.drift.execution import sandbox_execution
    from sabench.errors import UserError

    for bad in ({"backend": "local"}, {"network": "full"}):
        with pytest.raises(UserError, match="sandbox without network"):
            sandbox_execution(bad)


def test_normalisation_mutant_passes_the_input_on(toy: Path) -> None:
    """A claim about standardising loses its call: the inputs go on unchanged (tuple-unpacked
    calls keep their arity); a norm computed (``np.linalg.norm``) or a layer built is no target."""
    (toy / "prep.py").write_text(
        "import numpy as np\n\n\ndef standardise(a, b):\n    m = a.mean(0)\n    return a - m, b - m\n\n\n"
        "def run(a, b):\n    scale = np.linalg.norm(a)\n    a, b = standardise(a, b)\n"
        "    return a / scale, b\n"
    )
    sau_ = {"sau_id": "p-D4-009", "dimension": "D4", "claim": "Features are standardised first."}
    (m,) = make_mutants(toy, [sau_], types=["normalisation"])
    text = m.files["prep.py"]
    assert "    a, b = a, b\n" in text and "np.linalg.norm(a)" in text
    ast.parse(text)
    other = {
        "sau_id": "p-D4-010",
        "dimension": "D4",
        "claim": "Gradients are clipped at max norm 1.",
    }
    assert make_mutants(toy, [other], types=["normalisation"]) == []


NORM_CODE = """import torch.nn.functional as F
from torch import nn


def unit(x):
    return x / x.norm(dim=-1, keepdim=True)


class Block(nn.Module):
    def forward(self, h):
        h = self.rms_norm(h)
        h = self.mlp(h)
        return F.layer_norm(h, h.shape[-1:])
"""


@pytest.mark.parametrize(
    ("dimension", "claim", "dropped"),
    [
        ("D2", "Each block's output is normalised: h = LayerNorm(MLP(h)).", "F.layer_norm"),
        # the kind of norm the claim names: its RMSNorm, not the layer norm after it
        ("D2", "The block applies RMSNorm before its MLP.", "self.rms_norm"),
        ("D4", "Normalise, then run the MLP.", "self.rms_norm"),
        # "ln" in prose is a logarithm, not a layer norm's abbreviation
        ("D4", "Inputs are normalised, then ln(x) is taken.", "self.rms_norm"),
        # a value claim (its drift is a value), a norm defined (its drift is in unit()'s own
        # code), a norm computed (not applied), a kind of norm the code never calls
        ("D1", "LayerNorm epsilon 1e-5 on normalised outputs.", None),
        ("D2", "Unit normalisation (Norm): Norm(x) = x / ||x||_2", None),
        ("D2", "RMSNorm: x / RMS(x) * gamma, RMS(x) = sqrt(mean(x^2) + eps)", None),
        ("D2", "Gradient clipping: compute the L2 norm of all gradients, clip at 1.0.", None),
        ("D2", "BatchNorm after every convolution.", None),
    ],
)
def test_normalisation_mutant_drops_only_the_norm_the_claim_states(
    tmp_path: Path, dimension: str, claim: str, dropped: str | None
) -> None:
    """A normalisation mutant drops a norm the claim says is applied, of the kind it names; a
    claim about a value, about the norm's own definition or about computing a norm gets none
    (a drift it does not describe would count against the judge)."""
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "model.py").write_text(NORM_CODE)
    sau_ = {"sau_id": f"p-{dimension}-001", "dimension": dimension, "claim": claim}
    mutants = make_mutants(sub, [sau_], types=["normalisation"])
    if dropped is None:
        assert mutants == []
        return
    (m,) = mutants
    assert f"`{dropped}(...)` dropped" in m.description
    text = m.files["model.py"]
    assert f"{dropped}(" not in text and "x / x.norm(dim=-1, keepdim=True)" in text
    ast.parse(text)


# --------------------------------------------------------------------------------------------
# Split, swap with cited lines, operator only where the claim states the operation
# --------------------------------------------------------------------------------------------

SPLIT_CODE = """import numpy as np
from sklearn.model_selection import train_test_split
from torch.utils.data import random_split


def load(ds, X, y, text):
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.2, random_state=42)
    train, val = random_split(ds, [0.8, 0.2])
    n_train = int(0.8 * len(X))
    warmup = int(0.2 * len(X))
    head = text[:200]
    batch_size = 20
    return X[:n_train], X[n_train:], warmup, head, batch_size
"""
SPLIT_CONFIG = "data:\n  val_split: 0.2\n  num_workers: 2\n"


def test_split_mutant_moves_the_claimed_split_consistently(tmp_path: Path) -> None:
    """An 80/20 split: the held-out share grows by half (0.2 -> 0.3) and the training share
    gives up as much where the code states it (0.8 -> 0.7), in code and config; what only holds
    the same number (a truncation, a batch size, the seed) stays."""
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "data.py").write_text(SPLIT_CODE)
    (sub / "config.yaml").write_text(SPLIT_CONFIG)
    claim = {"sau_id": "p-D1-009", "dimension": "D1", "claim": "An 80/20 train/test split."}
    (m,) = make_mutants(sub, [claim], types=["split"])
    assert m.drift_type == "split" and m.dimension == "D1"
    code = m.files["data.py"]
    assert "test_size=0.3, random_state=42" in code
    assert "random_split(ds, [0.7, 0.3])" in code  # the parts still add up to 1
    assert "n_train = int(0.7 * len(X))" in code
    assert "warmup = int(0.2 * len(X))" in code  # a share, but not of a split
    assert "text[:200]" in code and "batch_size = 20" in code
    assert m.files["config.yaml"] == "data:\n  val_split: 0.3\n  num_workers: 2\n"
    ast.parse(code)
    # a lone count is a value, not a split; a claim with no split word has no split
    for text in ("Calibration uses 200 examples per split.", "The test_size is tuned."):
        assert make_mutants(sub, [{**claim, "claim": text}], types=["split"]) == []
    # sizes stated as a split (800/200) move with their total kept: 700/300
    (sub / "prep.py").write_text(
        "def prepare(data, num_train=800, num_val=200):\n"
        "    train_idx = data[:800]\n    val_idx = data[800:1000]\n"
        "    return train_idx, val_idx, num_train, num_val\n"
    )
    sizes = {**claim, "claim": "1000 training images, split 800/200 into train/val."}
    cited = {"p-D1-009": [("prep.py", 1, 4)]}
    (m,) = make_mutants(sub, [sizes], cited=cited, types=["split"])
    assert set(m.files) == {"prep.py"}  # only the cited code (data.py holds no 800 or 200)
    prep = m.files["prep.py"]
    assert "num_train=700, num_val=300" in prep
    assert "data[:700]" in prep and "data[700:1000]" in prep


def test_split_mutants_of_the_demo_papers() -> None:
    """The demo papers state their splits (ridge-gd: a test fraction of 0.2 in config.json;
    logreg-earlystop: validation and test fractions of 0.2 as argument defaults)."""
    found = {}
    for paper in ("ridge-gd", "logreg-earlystop"):
        saus = import_paper_saus(REPO / "resources" / "papers" / paper)
        sub = REPO / "resources" / "submissions" / "reference" / paper
        found.update({m.sau_id: m for m in make_mutants(sub, saus, types=["split"])})
    assert set(found) == {"ridge-gd-D1-004", "logreg-earlystop-D1-007"}
    assert '"test_fraction": 0.3,' in found["ridge-gd-D1-004"].files["config.json"]
    run = found["logreg-earlystop-D1-007"].files["run_experiment.py"]
    assert '"--val-fraction", type=float, default=0.3' in run
    assert '"--test-fraction", type=float, default=0.3' in run


SWAP_CODE = '''import numpy as np


def analyse(model, n):
    """Frequency analysis."""
    images = generate_images(model, n)
    print("generated", len(images))
    psd = compute_psd(images)
    fks = frequency_keep_score(psd)
    return fks


def report(images):
    psd = compute_psd(images)
    images = generate_images(None, 1)
    return psd
'''
SWAP_CLAIM = {
    "sau_id": "p-D4-007",
    "dimension": "D4",
    "claim": "Analysis sequence: (1) Generate images from the model; (2) Compute the Power "
    "Spectral Density (PSD) of each image; (3) Compute the Frequency Keep Score from it.",
}


def test_swap_uses_the_cited_lines_and_swaps_the_steps_they_run(tmp_path: Path) -> None:
    """Enumerated prose steps, an acronym the claim defines (PSD): within the cited function the
    statements of two consecutive steps are swapped (not the print between them); cited lines
    elsewhere (a function running the steps the other way round) give no swap."""
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "analysis.py").write_text(SWAP_CODE)
    cited = {"p-D4-007": [("analysis.py", 4, 10)]}
    (m,) = make_mutants(sub, [SWAP_CLAIM], cited=cited, types=["swap"])
    assert m.drift_type == "swap" and (m.file, m.line) == ("analysis.py", 6)
    body = [ln.strip() for ln in m.files["analysis.py"].splitlines()[5:9]]
    assert body == [
        "psd = compute_psd(images)",
        'print("generated", len(images))',
        "images = generate_images(model, n)",
        "fks = frequency_keep_score(psd)",
    ]
    elsewhere = {"p-D4-007": [("analysis.py", 13, 16)]}
    assert make_mutants(sub, [SWAP_CLAIM], cited=elsewhere, types=["swap"]) == []


def test_operator_mutant_only_where_the_claim_states_the_operation(tmp_path: Path) -> None:
    """A claim naming the operation ("the sum of") gets its statement's operator swapped; a
    claim about an optimiser and a schedule states no operation, so a multiplication in its
    statement is no target; nor is an operator whose operands are none of the claim's."""
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "train.py").write_text(
        "def objective(recon_loss, kl_term, batch, steps):\n"
        "    scheduler = cosine_schedule(adamw_optimizer, steps * 2)\n"
        "    tokens = batch * 4\n"
        "    return recon_loss + kl_term\n"
    )
    summed = {
        "sau_id": "p-D2-007",
        "dimension": "D2",
        "claim": "The objective is the sum of the reconstruction loss and the KL term.",
    }
    (m,) = make_mutants(sub, [summed], types=["operator"])
    assert "return recon_loss - kl_term" in m.files["train.py"]
    assert "tokens = batch * 4" in m.files["train.py"]
    schedule = {
        "sau_id": "p-D2-008",
        "dimension": "D2",
        "claim": "Training uses the AdamW optimizer with a cosine schedule over the steps.",
    }
    assert make_mutants(sub, [schedule], types=["operator"]) == []
    tokens = {**summed, "claim": "The number of tokens is the product of the batch and 4."}
    (m,) = make_mutants(sub, [tokens], types=["operator"])
    assert "tokens = batch / 4" in m.files["train.py"]
    other = {**summed, "claim": "The learning rate is the product of the base rate and decay."}
    assert make_mutants(sub, [other], types=["operator"]) == []


def test_an_undetermined_mutant_is_judged_and_missed() -> None:
    """An abstention on the broken SAU is no catch; below full credit where the original was
    undetermined is one (the judge sees what it could not tell); neither is a false alarm."""
    from sabench.contracts import Judgment
    from sabench.drift.evaluate import _row, _scores
    from sabench.drift.mutants import Mutant

    def scores(broken: str, other: str) -> dict:
        return _scores(
            [
                Judgment("p-1", "D2", broken, 0.0 if broken == "drifted" else None),
                Judgment("p-2", "D2", other, 1.0 if other == "aligned" else None),
            ]
        )

    m = Mutant("p-1", "D2", "operator", "a.py", 1, "+ -> -")
    run = {"paper": "p"}
    missed = _row(
        m, "static", scores("aligned", "aligned"), scores("undetermined", "aligned"), run, None
    )
    seen = _row(
        m, "static", scores("undetermined", "aligned"), scores("drifted", "undetermined"), run, None
    )
    assert (
        missed is not None and not missed["dropped"] and missed["mutant_verdict"] == "undetermined"
    )
    assert seen is not None and seen["dropped"] and seen["n_other_changed"] == 0
