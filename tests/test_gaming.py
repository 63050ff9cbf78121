"""Declaring is not implementing: the static judge does not count values nobody reads, formulas
written as strings or comments, step lists nothing calls, or functions that ignore their inputs."""

from __future__ import annotations

import sys
from pathlib import Path

from sabench.judges.static import judge_static

REPO = Path(__file__).resolve().parents[1]

TRAIN = """\
import numpy as np


def train(X, y, lr, epochs):
    w = np.zeros(X.shape[1])
    for _ in range(epochs):
        w = w - lr * X.T @ (X @ w - y) / len(y)
    return w
"""


def judge_one(root: Path, files: dict[str, str], dimension: str, claim: str):
    for rel, text in files.items():
        (root / rel).write_text(text)
    sau = {"paper": "p", "sau_id": "p-1", "dimension": dimension, "claim": claim}
    (j,) = judge_static(root, [sau])
    return j


def test_a_constant_nobody_reads_is_not_the_value(tmp_path: Path) -> None:
    files = {"model.py": TRAIN, "constants.py": "LEARNING_RATE = 0.05\nEPOCHS = 500\n"}
    j = judge_one(tmp_path, files, "D1", "Gradient descent uses a learning rate of 0.05.")
    assert j.verdict in ("missing", "partial"), j.reasoning
    assert j.verdict == "missing" or (j.score or 0) <= 0.5, j.reasoning


def test_a_constant_the_code_reads_is_the_value(tmp_path: Path) -> None:
    run = "from constants import LEARNING_RATE\nfrom model import train\n\n\n"
    run += "def main(X, y):\n    return train(X, y, LEARNING_RATE, 10)\n"
    run += 'if __name__ == "__main__":\n    main(None, None)\n'
    files = {"model.py": TRAIN, "constants.py": "LEARNING_RATE = 0.05\n", "run.py": run}
    j = judge_one(tmp_path, files, "D1", "Gradient descent uses a learning rate of 0.05.")
    assert j.verdict == "aligned", j.reasoning


def test_code_the_pipeline_never_runs_is_not_the_implementation(tmp_path: Path) -> None:
    """Written is not run: the paper's training, defined beside a pipeline that never calls it,
    implements nothing; called, it does."""
    shortcut = "def fit(X, y):\n    return X.mean(axis=0)\n"
    files = {
        "model.py": TRAIN.replace("lr, epochs", "lr=0.05, epochs=500"),
        "shortcut.py": shortcut,
    }
    claim = "Gradient descent uses a learning rate of 0.05."
    run = "from shortcut import fit\n\n\ndef main(X, y):\n    return fit(X, y)\n\n\n"
    run += 'if __name__ == "__main__":\n    main(None, None)\n'
    j = judge_one(tmp_path, {**files, "run.py": run}, "D1", claim)
    assert j.verdict != "aligned" and (j.score or 0) <= 0.5, j.reasoning
    (tmp_path / "run.py").write_text(
        run.replace("shortcut import fit", "model import train as fit")
    )
    (j,) = judge_static(
        tmp_path, [{"paper": "p", "sau_id": "p-1", "dimension": "D1", "claim": claim}]
    )
    assert j.verdict == "aligned", j.reasoning


def test_a_constant_only_printed_or_logged_is_not_the_value(tmp_path: Path) -> None:
    """Showing a value is not using it: a print or a log line does not make a constant read,
    unless what it prints is computed with it."""
    shown = (
        "import logging\n\nLEARNING_RATE = 0.05\n"
        'print("learning rate", LEARNING_RATE)\n'
        'logging.getLogger().info("lr={}".format(float(LEARNING_RATE)))\n'
    )
    files = {"model.py": TRAIN, "constants.py": shown}
    claim = "Gradient descent uses a learning rate of 0.05."
    j = judge_one(tmp_path, files, "D1", claim)
    assert j.verdict == "missing" or (j.score or 0) <= 0.5, j.reasoning
    run = "from constants import LEARNING_RATE\nfrom model import train\n\n\n"
    run += "def main(X, y):\n    print(train(X, y, LEARNING_RATE, 10))\n"
    run += 'if __name__ == "__main__":\n    main(None, None)\n'
    j = judge_one(tmp_path, {**files, "run.py": run}, "D1", claim)
    assert j.verdict == "aligned", j.reasoning


def test_a_formula_in_a_string_or_a_comment_is_not_computed(tmp_path: Path) -> None:
    report = (
        'LOSS = "sqrt(mean((y_pred - y) ** 2))"\n\n\n'
        "def describe(y, y_pred):\n"
        "    # sqrt(mean((y_pred - y) ** 2))\n"
        '    print("rmse = sqrt(mean((y_pred - y) ** 2))", LOSS)\n'
        "    return len(y)\n"
    )
    j = judge_one(
        tmp_path,
        {"report.py": report},
        "D2",
        "The test metric is computed as `sqrt(mean((y_pred - y) ** 2))`.",
    )
    assert j.verdict in ("missing", "placeholder", "partial"), j.reasoning
    assert "matches" not in j.reasoning, j.reasoning


def test_a_formula_in_code_still_matches(tmp_path: Path) -> None:
    code = "import numpy as np\n\n\ndef rmse(y, y_pred):\n    return np.sqrt(np.mean((y_pred - y) ** 2))\n"
    j = judge_one(
        tmp_path,
        {"metrics.py": code},
        "D2",
        "The test metric is computed as `sqrt(mean((y_pred - y) ** 2))`.",
    )
    assert j.verdict == "aligned", j.reasoning


def test_a_step_list_nothing_calls_is_not_the_order(tmp_path: Path) -> None:
    pipeline = (
        'STEPS = ["generate", "split", "standardise", "train", "evaluate"]\n'
        'ORDER = ("generate", "split")\n\n'
        'if __name__ == "__main__":\n'
        "    for step in ORDER:\n"
        '        print("running", step)\n'
    )
    j = judge_one(
        tmp_path,
        {"pipeline.py": pipeline},
        "D4",
        "The steps run in the order `generate` → `split` → `standardise` → `train` → `evaluate`.",
    )
    assert j.verdict in ("missing", "placeholder"), j.reasoning


def test_functions_that_ignore_their_inputs_are_placeholders(tmp_path: Path) -> None:
    metrics = (
        "def rmse(y, y_pred):\n    return 0\n\n\n"
        "def r2(y, y_pred):\n    raise NotImplementedError\n\n\n"
        "def evaluate(y, y_pred):\n    return {'rmse': rmse(y, y_pred), 'r2': r2(y, y_pred)}\n"
    )
    j = judge_one(
        tmp_path,
        {"metrics.py": metrics},
        "D3",
        "Metric `rmse` (root mean squared error) on the test split.",
    )
    assert j.verdict == "placeholder", j.reasoning


def test_gaming_submissions_score_low_and_references_keep_full_marks() -> None:
    sys.path.insert(0, str(REPO / "benchmarks"))
    from gaming import gaming_scores

    scores = gaming_scores()
    ref = scores[scores["variant"] == "reference"]
    unused = scores[scores["variant"] == "unused reference"]
    gaming = scores[~scores["variant"].isin(["reference", "unused reference"])]
    assert len(ref) == 3 and (ref["overall"] == 1.0).all(), ref
    assert gaming["overall"].max() <= 0.2, gaming.sort_values("overall").tail()
    # the reference's code that nothing runs: its configured values still count as set
    assert len(unused) == 3 and unused["overall"].max() <= 0.45, unused
    assert (unused["overall"] <= 0.2).sum() >= 2, unused
