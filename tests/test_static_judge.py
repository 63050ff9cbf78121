"""The static judge: each rule on a small hand-made repository, the demo papers against their
manifests, and a few real SA-Bench runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
import yaml

from sabench.contracts import VERDICTS
from sabench.index import build_index, text_terms
from sabench.judges import static as static_mod
from sabench.judges.static import judge_static, static_fingerprint
from sabench.judges.static.evidence import SubmissionContext
from sabench.saus import import_sabench

REPO = Path(__file__).resolve().parents[1]
RESOURCES = REPO / "resources"


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def sau(sau_id: str, dimension: str, claim: str, **extra: object) -> dict:
    return {"paper": "p", "sau_id": sau_id, "dimension": dimension, "claim": claim, **extra}


def judged_lower(wrong, right) -> bool:
    """The wrong code judged below the right code: a lower score, or, where the judge abstained
    on the right code (``undetermined``: no alarm), an alarm on the wrong one (scored below 1)."""
    if right.verdict == "undetermined":
        return wrong.score is not None and wrong.score < 1.0
    right_score = 1.0 if right.verdict == "aligned" else right.score
    return (wrong.score or 0.0) < right_score


def judge_one(root: Path, dimension: str, claim: str, execution: dict | None = None, **extra):
    (j,) = judge_static(root, [sau("p-1", dimension, claim, **extra)], execution)
    for e in j.evidence:
        lines = (root / e.file).read_text().splitlines()
        assert 1 <= e.start <= e.end <= len(lines), e
    return j


TRAIN = """\
import numpy as np


def train(X, y, lr, epochs):
    w = np.zeros(X.shape[1])
    for _ in range(epochs):
        grad = X.T @ (X @ w - y) / len(y)
        w = w - lr * grad
    return w
"""


# --- D1: values ---------------------------------------------------------------------------


def test_value_with_its_name_is_aligned(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": TRAIN, "config.yaml": "optim:\n  learning_rate: 0.05\n"})
    j = judge_one(tmp_path, "D1", "Gradient descent uses a learning rate of 0.05.")
    assert (j.verdict, j.score, j.failure_mode) == ("aligned", 1.0, None)
    assert any(e.file == "config.yaml" and e.start == 2 for e in j.evidence)


def test_value_under_its_name_but_different_is_drifted(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": TRAIN, "config.yaml": "optim:\n  learning_rate: 0.005\n"})
    j = judge_one(tmp_path, "D1", "Gradient descent uses a learning rate of 0.05.")
    assert (j.verdict, j.score, j.failure_mode) == ("drifted", 0.0, "implementation_mismatch")
    assert "0.005" in j.reasoning and "config.yaml:2" in j.reasoning
    assert j.evidence[0].file == "config.yaml" and j.evidence[0].start == 2


def test_value_forms_and_argparse_defaults(tmp_path: Path) -> None:
    main = (
        TRAIN
        + """
import argparse

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--weight-decay", type=float, default=3e-4)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--batch-size", type=int, default=1024)
    return p.parse_args()
"""
    )
    write(tmp_path, {"main.py": main})
    assert judge_one(tmp_path, "D1", "Weight decay is 3×10⁻⁴.").verdict == "aligned"
    assert judge_one(tmp_path, "D1", "A dropout of 10% is applied.").verdict == "aligned"
    assert judge_one(tmp_path, "D1", "The batch size is 2^10.").verdict == "aligned"
    assert judge_one(tmp_path, "D1", "The batch size is 1K.").verdict == "drifted"  # 1000
    drift = judge_one(tmp_path, "D1", "The batch size is 512.")
    assert drift.verdict == "drifted" and "1024" in drift.reasoning


def test_some_values_found_is_partial(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": TRAIN, "config.yaml": "learning_rate: 0.05\nepochs: 500\n"})
    claim = (
        "Training uses a learning rate of 0.05 for 500 epochs, a momentum of 0.9, "
        "a warmup of 2000 steps and label smoothing of 0.1."
    )
    j = judge_one(tmp_path, "D1", claim)
    assert j.verdict in ("partial", "missing", "undetermined")  # never aligned, never drifted
    assert j.verdict != "partial" or 0 < j.score < 1
    assert "2/5 values" in j.reasoning


def test_the_setting_named_as_the_claim_names_the_value_decides(tmp_path: Path) -> None:
    """A setting whose whole name is the claim's name for a value, set otherwise, contradicts
    the claim even where the value stands elsewhere under a name that shares one word; a
    contradiction costs a level beside the support; a counter set to 0 is no setting."""
    config = (
        "DISCOUNT_FACTOR = {gamma}\nTARGET_UPDATE_FREQUENCY = 250\nMINI_BATCH_SIZE = 256\n"
        "REWARD_FACTOR = 0.99\n"
    )
    agent = (
        "from config import DISCOUNT_FACTOR, MINI_BATCH_SIZE, REWARD_FACTOR, "
        "TARGET_UPDATE_FREQUENCY\n\n\ndef update(q, r):\n    n_updates = 0\n"
        "    for _ in range(TARGET_UPDATE_FREQUENCY):\n        n_updates += 1\n"
        "        q = r * REWARD_FACTOR + DISCOUNT_FACTOR * q\n    return q, MINI_BATCH_SIZE\n"
    )
    claim = (
        "Hyperparameters: discount factor γ=0.99, target update frequency 250, "
        "minibatch size 256, 100 updates."
    )
    write(tmp_path, {"config.py": config.format(gamma="0.99"), "agent.py": agent})
    right = judge_one(tmp_path, "D1", claim)
    assert right.verdict != "drifted" and "0.99 is" not in right.reasoning, right.reasoning
    assert "n_updates" not in right.reasoning  # a counter is no setting
    write(tmp_path, {"config.py": config.format(gamma="0.099")})
    wrong = judge_one(tmp_path, "D1", claim)
    assert "DISCOUNT_FACTOR" in wrong.reasoning and "0.099" in wrong.reasoning, wrong.reasoning
    score = {"aligned": 1.0, "partial": None}.get(right.verdict, 0.0)
    assert (wrong.score or 0.0) < (right.score if score is None else score)


_FEW_WORDS_CASES = {
    # the name four words before the value
    "before": (
        "T2V chunk and condition lengths: l=16, P_max=49, L_train_max=65",
        {
            "config.yaml": "t2v:\n  chunk_len: {v}\n  p_max: 49\n  l_train_max: 65\nframe_size: 16\n",
            "train.py": "import yaml\n\n\ndef main():\n"
            "    cfg = yaml.safe_load(open('config.yaml'))['t2v']\n"
            "    return cfg['chunk_len'], cfg['p_max'], cfg['l_train_max']\n",
        },
        "t2v.chunk_len",
    ),
    # the name three words after it
    "after": (
        "MBPO: 16 parallel imagination environments, 2 layers.",
        {
            "config.py": "IMAGINATION_ENVS = {v}\nMLP_HIDDEN_SIZE = 16\nNUM_LAYERS = 2\n",
            "model.py": "from config import IMAGINATION_ENVS, MLP_HIDDEN_SIZE, NUM_LAYERS\n\n\n"
            "def build():\n    return [IMAGINATION_ENVS, MLP_HIDDEN_SIZE] * NUM_LAYERS\n",
        },
        "IMAGINATION_ENVS",
    ),
}


@pytest.mark.parametrize("case", sorted(_FEW_WORDS_CASES))
def test_a_setting_named_a_few_words_from_the_value_decides(tmp_path: Path, case: str) -> None:
    """The name of a value may stand four words before it ("chunk and condition lengths: l=16")
    or three after it ("16 parallel imagination environments"): that setting set otherwise
    contradicts the claim, though the value stands elsewhere under another name."""
    claim, files, setting = _FEW_WORDS_CASES[case]
    write(tmp_path, {name: text.replace("{v}", "16") for name, text in files.items()})
    right = judge_one(tmp_path, "D1", claim)
    assert "16 is" not in right.reasoning, right.reasoning
    write(tmp_path, {name: text.replace("{v}", "32") for name, text in files.items()})
    wrong = judge_one(tmp_path, "D1", claim)
    assert f"the paper's 16 is 32 (`{setting}`" in wrong.reasoning, wrong.reasoning
    assert wrong.score < right.score


@pytest.mark.parametrize(
    "claim",
    [
        "The momentum coefficient is {v}.",
        "Momentum coefficient: {v}.",
        "The dropout rate is {v}.",
        "The momentum is {v}.",
    ],
)
def test_a_head_noun_after_a_settings_name_leaves_it_the_name(tmp_path: Path, claim: str) -> None:
    """ "momentum coefficient", "dropout rate": the head noun says what kind of setting it is, the
    word before says which, so `momentum: 0.5` contradicts the paper's 0.9."""
    name = "dropout" if "dropout" in claim else "momentum"
    code = f"import json\n\ncfg = json.load(open('config.json'))\nprint(2 * cfg['{name}'])\n"
    write(tmp_path, {"config.json": f'{{"lr": 0.01, "{name}": 0.5}}\n', "main.py": code})
    wrong = judge_one(tmp_path, "D1", claim.format(v=0.9))
    assert (wrong.verdict, wrong.failure_mode) == ("drifted", "implementation_mismatch")
    assert f"the paper's 0.9 is 0.5 (`{name}`" in wrong.reasoning, wrong.reasoning
    assert judge_one(tmp_path, "D1", claim.format(v=0.5)).verdict == "aligned"


def test_a_head_noun_after_a_compound_names_no_setting_by_its_part(tmp_path: Path) -> None:
    """ "LayerNorm parameters: 38K" is a count, and `num_layers: 12` does not contradict it: a
    part of a compound word before a head noun is not a setting's name (SA-Bench's petl)."""
    code = "import yaml\n\ncfg = yaml.safe_load(open('config.yaml'))\nprint(cfg['num_layers'])\n"
    write(tmp_path, {"config.yaml": "num_layers: 12\nlr: 0.001\n", "main.py": code})
    j = judge_one(tmp_path, "D1", "LayerNorm parameters: ~38K (0.04% of the 86M backbone).")
    assert j.verdict != "drifted", j.reasoning


def test_a_claims_one_value_is_named_by_the_whole_claim(tmp_path: Path) -> None:
    """A claim "Number of calibration samples per trial in the synthetic experiment = 200": the
    setting named by the claim's first words (``N_CALIBRATION``) holds its value, so changing it is
    seen, though 200 still stands elsewhere as a bare literal."""
    claim = "Number of calibration samples per trial in the synthetic experiment = 200"
    config = "N_CALIBRATION = {v}\nN_TRIALS = 10000\n"
    experiment = (
        "from config import N_CALIBRATION, N_TRIALS\n\n\ndef run_synthetic_experiment(rng):\n"
        '    """Each trial draws calibration samples and a grid of 200 thresholds."""\n'
        "    grid = rng.uniform(size=200)\n"
        "    return [rng.normal(size=N_CALIBRATION) for _ in range(N_TRIALS)], grid\n"
    )
    write(tmp_path, {"config.py": config.format(v=200), "experiment.py": experiment})
    right = judge_one(tmp_path, "D1", claim)
    assert right.verdict == "aligned" and "1/1 values" in right.reasoning, right.reasoning
    write(tmp_path, {"config.py": config.format(v=400)})
    wrong = judge_one(tmp_path, "D1", claim)
    assert (wrong.score or 0.0) < 1.0, wrong.reasoning


def test_a_more_specific_name_decides_over_a_default(tmp_path: Path) -> None:
    """``EMA_MOMENTUM`` set otherwise contradicts "ema_momentum=0.9999", though the EMA class's
    ``momentum=0.9999`` default, named by the claim's words too, still holds the value; a more
    specific setting holding another of the claim's values is that value's ("warmup_steps=2000"
    for GPT beside nGPT's "warmup_steps=0")."""
    claim = "Exponential moving average: ema_momentum=0.9999, applied after every step."
    ema = (
        "class EMA:\n    def __init__(self, params, momentum=0.9999):\n"
        "        self.momentum = momentum\n        self.shadow = [p.clone() for p in params]\n"
    )
    train = (
        "from config import EMA_MOMENTUM\nfrom ema import EMA\n\n\ndef train(model):\n"
        "    ema = EMA(model.parameters(), momentum=EMA_MOMENTUM)\n    return ema\n"
    )
    write(tmp_path, {"ema.py": ema, "train.py": train, "config.py": "EMA_MOMENTUM = 0.9999\n"})
    right = judge_one(tmp_path, "D1", claim)
    assert "0.9999 is" not in right.reasoning, right.reasoning
    write(tmp_path, {"config.py": "EMA_MOMENTUM = 0.09999\n"})
    wrong = judge_one(tmp_path, "D1", claim)
    assert "the paper's 0.9999 is 0.09999 (`EMA_MOMENTUM`" in wrong.reasoning, wrong.reasoning
    assert judged_lower(wrong, right)

    two = "Warmup: GPT uses warmup_steps=2000; nGPT uses warmup_steps=0 with a cosine schedule."
    schedule = (
        "import argparse\n\n\ndef lr_at(step, lr, warmup=0):\n"
        "    return lr * min(1.0, step / max(warmup, 1))\n\n\ndef main():\n"
        "    p = argparse.ArgumentParser()\n"
        "    p.add_argument('--warmup_steps', type=int, default=2000)\n"
        "    args = p.parse_args()\n    return lr_at(0, 1.0, warmup=args.warmup_steps)\n\n\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    write(tmp_path / "two", {"schedule.py": schedule})
    both = judge_one(tmp_path / "two", "D1", two)
    assert "Mismatch" not in both.reasoning and both.verdict != "drifted", both.reasoning


def test_a_setting_in_the_section_that_sets_the_claims_other_values_decides(
    tmp_path: Path,
) -> None:
    """The claim's words are in the model code, its values in a config section: a setting
    named as the claim names a value, set otherwise in that section, contradicts the claim,
    though the value stands there under another name (16 layers, 32 attention heads)."""
    claim = (
        "Transformer decoder: 16 decoder layers, hidden_dim=2048, 16 attention heads, "
        "vocab_size=50304"
    )
    files = {
        "model.py": "import torch.nn as nn\n\n\nclass TransformerDecoder(nn.Module):\n"
        '    """Decoder layers with attention heads over the hidden states."""\n\n'
        "    def __init__(self, cfg):\n        super().__init__()\n"
        "        self.decoder_layers = nn.ModuleList(\n"
        "            DecoderLayer(cfg.hidden_dim, cfg.attention_heads)\n"
        "            for _ in range(cfg.num_layers)\n        )\n"
        "        self.embed = nn.Embedding(cfg.vocab_size, cfg.hidden_dim)\n",
        "layers.py": "import torch.nn as nn\n\n\nclass DecoderLayer(nn.Module):\n"
        '    """One transformer decoder layer: attention heads, then the hidden MLP."""\n\n'
        "    def __init__(self, hidden_dim, attention_heads):\n        super().__init__()\n"
        "        self.attention = nn.MultiheadAttention(hidden_dim, attention_heads)\n",
        "config_loader.py": "from dataclasses import dataclass\n\n\n@dataclass\n"
        "class TransformerDecoderConfig:\n"
        '    """The decoder\'s layers, hidden size, attention heads and vocabulary."""\n\n'
        "    num_layers: int\n    hidden_dim: int\n    attention_heads: int\n"
        "    vocab_size: int\n",
    }
    config = (
        "optimizer:\n  lr: 0.0004\n  weight_decay: 0.1\nmodel:\n  num_layers: 16\n"
        "  hidden_dim: 2048\n  attention_heads: {v}\n  vocab_size: 50304\n"
        "data:\n  root: /data\n  workers: 8\n"
    )
    write(tmp_path, {**files, "config.yaml": config.format(v=16)})
    right = judge_one(tmp_path, "D1", claim)
    assert right.verdict == "aligned", right.reasoning
    write(tmp_path, {"config.yaml": config.format(v=32)})
    wrong = judge_one(tmp_path, "D1", claim)
    assert "the paper's 16 is 32 (`model.attention_heads`" in wrong.reasoning, wrong.reasoning
    assert (wrong.score or 0.0) < 1.0


def test_a_setting_holding_another_of_the_claims_values_contradicts_none(tmp_path: Path) -> None:
    """In the section that sets the claim's values, a setting named like one value that holds
    another of them (num_frames=121 of "121 frames for 5 s videos, 241 for 10 s") is that
    value's setting, not a contradiction of the other."""
    claim = "Generated videos: 5s videos at 121 frames, 10s videos at 241 frames, 24 FPS"
    sampler = (
        "def generate_videos(pipe, cfg, max_video_frames=241):\n"
        '    """Generated videos: 5s or 10s videos, sampled frame by frame at the fps."""\n'
        "    frames = [pipe.step(i) for i in range(min(cfg['num_frames'], max_video_frames))]\n"
        "    return pipe.encode_video(frames, fps=cfg['fps'])\n"
    )
    export = (
        "def export_videos(videos, fps):\n"
        '    """Write the generated videos (all frames) at the given fps."""\n'
        "    for video in videos:\n        video.write_frames(fps=fps)\n"
    )
    config = (
        "optimizer:\n  lr: 0.0001\n  weight_decay: 0.01\nvideo:\n  num_frames: 121\n"
        "  fps: 24\ndata:\n  root: /data\n  workers: 8\n"
    )
    write(tmp_path, {"sampler.py": sampler, "export.py": export, "config.yaml": config})
    j = judge_one(tmp_path, "D1", claim)
    assert "241 is 121" not in j.reasoning and "3/5 values" in j.reasoning, j.reasoning


def test_an_indexed_value_is_its_tuples_element(tmp_path: Path) -> None:
    """ "β1=0.9, β2=0.999" name the elements of `betas=(0.9, 0.999)` by position: an element set
    otherwise contradicts the claim. A tuple that holds none of the claim's values is another
    one's (a noise schedule's β₁ is not Adam's first beta)."""
    claim = "AdamW optimizer: β1=0.9, β2=0.999, weight decay 0.01, learning rate 1e-4"
    train = (
        "import torch\n\n\ndef make_optimizer(model):\n"
        "    return torch.optim.AdamW(\n        model.parameters(), lr=1e-4, betas=({b}),"
        " weight_decay=0.01\n    )\n"
    )
    write(tmp_path, {"train.py": train.format(b="0.9, 0.999")})
    right = judge_one(tmp_path, "D1", claim)
    assert right.verdict == "aligned", right.reasoning
    write(tmp_path, {"train.py": train.format(b="0.9, 0.95")})
    wrong = judge_one(tmp_path, "D1", claim)
    assert "the paper's 0.999 is 0.95 (element 2 of `betas`" in wrong.reasoning, wrong.reasoning
    assert (wrong.score or 0.0) < 1.0

    schedule = "Noise schedule: T=1000 steps, linear beta schedule with β₁=1e-4, β_T=0.02"
    diffusion = (
        "import torch\n\nT = 1000\n\n\ndef linear_beta_schedule(beta_start=1e-4,"
        " beta_end=0.02):\n    return torch.linspace(beta_start, beta_end, T)\n"
    )
    write(tmp_path, {"diffusion.py": diffusion})
    j = judge_one(tmp_path, "D1", schedule)
    assert "element 1" not in j.reasoning, j.reasoning


# --- D2: formulas -------------------------------------------------------------------------


METRICS = """\
import numpy as np


def mse(y, y_pred):
    return float(((y_pred - y) ** 2).mean())


def penalty(w, lam):
    return lam * np.sum(np.abs(w))
"""


def test_formula_in_another_spelling_is_aligned(tmp_path: Path) -> None:
    write(tmp_path, {"metrics.py": METRICS})
    j = judge_one(tmp_path, "D2", "The `mse` metric is `mean((y_pred - y) ** 2)`.")
    assert j.verdict == "aligned"
    assert j.evidence[0].file == "metrics.py" and j.evidence[0].start == 5


STEPWISE = """\
import numpy as np


def ridge_loss(w, X, y, lam):
    residual = X @ w - y
    mse = np.mean(residual ** 2)
    return mse + lam * np.sum(w ** 2)


def gradient(w, X, y, lam):
    return 2 * X.T @ (X @ w - y) / len(y) + 2 * lam * w
"""
STEPWISE_MAIN = (
    "import numpy as np\nfrom model import gradient, ridge_loss\n\n"
    "w, X, y = np.ones(3), np.ones((4, 3)), np.ones(4)\n"
    "w = w - 0.1 * gradient(w, X, y, 0.1)\nprint(ridge_loss(w, X, y, 0.1))\n"
)


@pytest.mark.parametrize(
    ("formula", "verdict"),
    [
        ("mean((X @ w - y) ** 2) + lam * sum(w ** 2)", "aligned"),
        ("mean((X @ w - y) ** 2) - lam * sum(w ** 2)", "drifted"),
        ("mean((X @ w - y) ** 2) + lam * sum(abs(w))", "drifted"),
    ],
)
def test_a_formula_written_in_steps_is_read_as_one_expression(
    tmp_path: Path, formula: str, verdict: str
) -> None:
    """Local names followed back to the values they were given: the loss computed through
    `residual` and `mse` is the claim's formula, not a drift of the gradient beside it that
    spells more of its names on one line."""
    write(tmp_path, {"model.py": STEPWISE, "main.py": STEPWISE_MAIN})
    j = judge_one(tmp_path, "D2", f"The training loss is `{formula}`.")
    assert j.verdict == verdict, j.reasoning
    assert (j.evidence[0].file, j.evidence[0].start) == ("model.py", 7), j.reasoning


def test_the_parts_of_a_returned_tuple_are_each_their_own_expression(tmp_path: Path) -> None:
    """``return w, b`` after two updates is two expressions: the bias's ``-`` is not the weights'."""
    step = (
        "def sgd_step(w, b, grad_w, grad_b, lr):\n"
        "    w = w + lr * grad_w\n    b = b - lr * grad_b\n    return w, b\n\n\n"
        "print(sgd_step(1.0, 0.0, 0.5, 0.5, 0.1))\n"
    )
    write(tmp_path, {"train.py": step})
    j = judge_one(tmp_path, "D2", "The SGD update is `w = w - lr * grad_w`.")
    assert j.verdict == "drifted", j.reasoning
    assert j.evidence[0].start == 2, j.reasoning


def test_a_step_whose_result_is_discarded_is_no_step(tmp_path: Path) -> None:
    zeroed = STEPWISE.replace(
        "    return mse + lam * np.sum(w ** 2)", "    return mse * 0.0 + lam * np.sum(w ** 2)"
    ).replace(
        "    mse = np.mean(residual ** 2)\n", "    mse = np.mean(residual ** 2)\n    mse = 0.5\n"
    )
    write(tmp_path, {"model.py": zeroed, "main.py": STEPWISE_MAIN})
    j = judge_one(
        tmp_path, "D2", "The training loss is `mean((X @ w - y) ** 2) + lam * sum(w ** 2)`."
    )
    assert j.verdict != "aligned", j.reasoning


MOVING_AVERAGE = """\
import json

WINDOW = {window}


def moving_average(y, t, window=WINDOW):
    return sum(y[t - window:t]) / window


print(json.dumps({{"ma": moving_average([1.0] * 20, 10)}}))
"""


@pytest.mark.parametrize(("window", "verdict"), [(5, "aligned"), (4, "drifted")])
def test_a_name_bound_to_the_papers_constant_is_that_constant(
    tmp_path: Path, window: int, verdict: str
) -> None:
    """The code names what the paper writes as a number: `sum(y[t - window:t]) / window` with
    `window` bound to 5 computes the paper's `sum(y[t-5:t]) / 5` (was: drifted, lacking 5, 5);
    bound to 4, it differs by the value."""
    write(tmp_path, {"ma.py": MOVING_AVERAGE.format(window=window)})
    j = judge_one(tmp_path, "D2", "The moving average is `sum(y[t-5:t]) / 5`.")
    assert j.verdict == verdict, j.reasoning
    assert j.evidence and (j.evidence[0].file, j.evidence[0].start) == ("ma.py", 7), j.reasoning


def test_formula_with_other_operators_is_drifted(tmp_path: Path) -> None:
    write(tmp_path, {"metrics.py": METRICS})
    j = judge_one(tmp_path, "D2", "The L2 penalty is `lam * sum(w ** 2)` on the weights.")
    assert (j.verdict, j.failure_mode) == ("drifted", "implementation_mismatch")
    assert "metrics.py:9" in j.reasoning and "abs" in j.reasoning


def test_sign_flip_and_missing_term_are_drifted(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": TRAIN})
    flip = judge_one(tmp_path, "D2", "The update is `w = w + lr * grad`.")
    assert flip.verdict == "drifted"
    term = judge_one(tmp_path, "D2", "The gradient is `X.T @ (X @ w - y) / len(y) + 2 * lam * w`.")
    assert term.verdict == "drifted"
    ok = judge_one(tmp_path, "D2", "The gradient is `grad = X.T @ (X @ w - y) / len(y)`.")
    assert ok.verdict == "aligned"


SKIP = """\
def skip_coefficient(sigma, sigma_data, sigma_min):
    \"\"\"c_skip of the consistency model's parameterisation.\"\"\"
    return sigma_data ** 2 / (sigma_data ** 2 + (sigma - sigma_min) ** 2)
"""
CLAIM_SKIP = (
    "Skip coefficient: c_skip(sigma) = sigma_data^2 / (sigma_data^2 + (sigma - sigma_min)^2), "
    "where sigma_data is the data's standard deviation."
)


def test_prose_equation_computed_with_an_inverse_operator_loses_a_level(tmp_path: Path) -> None:
    """An equation written in the claim's prose (no backticks) is matched by the terms of its
    operands: the code computing it with a ratio turned into a product, or a sign flipped, is a
    level lower than the code computing it as stated, which keeps its score."""
    write(tmp_path, {"model.py": SKIP})
    right = judge_one(tmp_path, "D2", CLAIM_SKIP)
    assert "computes with" not in right.reasoning, right.reasoning
    for wrong_code in (
        SKIP.replace("** 2 / (", "** 2 * ("),
        SKIP.replace("(sigma - sigma_min)", "(sigma + sigma_min)"),
    ):
        write(tmp_path, {"model.py": wrong_code})
        wrong = judge_one(tmp_path, "D2", CLAIM_SKIP)
        assert "computes with" in wrong.reasoning, wrong.reasoning
        assert any(e.file == "model.py" for e in wrong.evidence)
        assert judged_lower(wrong, right)


_COSINE = '''import math


def cosine_lr(step, total_steps, peak_lr, min_lr):
    """Cosine learning-rate schedule from the peak LR down to the minimum LR."""
    progress = step / total_steps
    cosine = 0.5 {op} (1.0 + math.cos(math.pi * progress))
    return min_lr + (peak_lr - min_lr) * cosine


if __name__ == "__main__":
    print(cosine_lr(10, 100, 4e-4, 4e-5))
'''


def test_a_factor_moved_across_the_fraction_loses_a_level(tmp_path: Path) -> None:
    """A product of the claim's equation whose code groups its factors otherwise (``0.5 * (1 +
    cos(...))`` before the LR range) is compared as factors over and under the fraction: the code
    dividing by the cosine term the equation multiplies by is a level lower; the code as stated
    keeps its score."""
    claim = (
        "Cosine LR schedule: LR(step) = min_LR + 0.5 * (peak_LR - min_LR) * "
        "(1 + cos(pi * step / total_steps))."
    )
    write(tmp_path, {"schedule.py": _COSINE.format(op="*")})
    stated = judge_one(tmp_path, "D2", claim)
    write(tmp_path, {"schedule.py": _COSINE.format(op="/")})
    j = judge_one(tmp_path, "D2", claim)
    assert j.score == stated.score - 0.25, (stated.reasoning, j.reasoning)
    assert "`cosine_lr` (schedule.py:4) divides" in j.reasoning
    assert "divides" not in stated.reasoning


def test_prose_equations_split_at_equals_signs_outside_brackets() -> None:
    """``sum_{i=1}^{N}`` and keyword arguments are inside an equation's right-hand side, not the
    start of another equation."""
    from sabench.judges.static.claims import equations

    saturation = "Saturation(t) = (1 / N) * sum_{i=1}^{N} |E_i| / k, measuring how early it settles"
    assert equations(saturation) == ["(1 / N) * sum_{i=1}^{N} |E_i| / k"]
    assert equations("y = f(x, scale=2) * x + b") == ["f(x, scale=2) * x + b"]
    assert equations("a = b = c + d") == ["c + d"]
    assert equations("lr = 0.05 and momentum = 0.9") == []


def test_the_names_prose_equations_define() -> None:
    """``c_skip(sigma) = ...`` defines ``c_skip``; an identity about a name, or a name that is no
    identifier, defines nothing the code could be searched for."""
    from sabench.judges.static.claims import defined_equations

    assert defined_equations(CLAIM_SKIP) == [
        ("c_skip", "sigma_data^2 / (sigma_data^2 + (sigma - sigma_min)^2)")
    ]
    assert defined_equations("Derived from dot_x_t - v_t(x_t) = -(s / t) * (x - d)") == []
    assert defined_equations("L = a + b, lr = 0.05") == []
    # K' is K_prime in code; the formula ends where prose resumes
    assert defined_equations("N = 2 + k, where K' = floor(K / (log2(s1 / s0) + 1)), s0=10") == [
        ("K_prime", "floor(K / (log2(s1 / s0) + 1)), s0")
    ]
    assert defined_equations("let t' = (t-s_k)/(e_k-s_k) be the rescaled timestep") == [
        ("t_prime", "(t-s_k)/(e_k-s_k)")
    ]


#: the formula restated in a class docstring (text), computed by a method named as the claim
#: names it (code); {op} is its outermost operator
SKIP_METHOD = """\
class ConsistencyModel:
    \"\"\"Consistency model with the skip coefficient of Song et al.:

        c_skip(sigma) = sigma_data^2 / (sigma_data^2 + (sigma - sigma_min)^2)
    \"\"\"

    def __init__(self, sigma_data=0.5, sigma_min=0.002):
        self.sigma_data = sigma_data
        self.sigma_min = sigma_min

    def {name}(self, sigma):
        sigma_d, sigma_0 = self.sigma_data, self.sigma_min
        return sigma_d ** 2 {op} (sigma_d ** 2 + (sigma - sigma_0) ** 2)

    def c_out(self, sigma):
        return self.sigma_data * (sigma - self.sigma_min) / (sigma ** 2 + 1) ** 0.5
"""
SKIP_ASSIGNED = """\
def denoise(model, x, sigma, sigma_data=0.5, sigma_min=0.002):
    c_skip_val = sigma_data ** 2 {op} (sigma_data ** 2 + (sigma - sigma_min) ** 2)
    c_out = sigma_data * (sigma - sigma_min) / (sigma ** 2 + sigma_data ** 2) ** 0.5
    return c_skip_val * x + c_out * model(x, sigma, c_skip_scale=1.0)  # a keyword, no definition
"""


@pytest.mark.parametrize(
    ("template", "name"),
    [(SKIP_METHOD, "c_skip"), (SKIP_METHOD, "_c_skip"), (SKIP_ASSIGNED, "c_skip")],
)
def test_the_code_defining_an_equations_name_is_checked(
    tmp_path: Path, template: str, name: str
) -> None:
    """The code that computes what a claim's equation defines is compared with it, wherever the
    claim's words are (here the best window is a docstring restating the formula): computing
    ``c_skip`` as a product where the claim divides costs the claim a level, and names the line."""
    write(tmp_path, {"model.py": template.format(op="/", name=name)})
    right = judge_one(tmp_path, "D2", CLAIM_SKIP)
    assert "The code computes" not in right.reasoning, right.reasoning
    write(tmp_path, {"model.py": template.format(op="*", name=name)})
    wrong = judge_one(tmp_path, "D2", CLAIM_SKIP)
    assert "The code computes `c_skip` with `*` (model.py:" in wrong.reasoning, wrong.reasoning
    assert judged_lower(wrong, right)


def test_a_product_with_a_reciprocal_is_a_quotient(tmp_path: Path) -> None:
    """``v_t = (1/t) * (x_t - D)`` is computed by ``(x_t - d) / t``: another way of writing the
    same formula, not an inverse operator."""
    claim = (
        "Velocity from the denoiser: v_t(x_t) = (1/t) * (x_t - D_star), with D_star the denoiser."
    )
    code = (
        "def velocity(denoiser, x_t, t):\n    d_star = denoiser(x_t, t)\n"
        "    v_t = (x_t - d_star) / t\n    return v_t\n"
    )
    write(tmp_path, {"flow.py": code})
    j = judge_one(tmp_path, "D2", claim)
    assert "The code computes" not in j.reasoning, j.reasoning
    write(tmp_path, {"flow.py": code.replace("(x_t - d_star) / t", "(x_t - d_star) * t")})
    wrong = judge_one(tmp_path, "D2", claim)
    assert "The code computes `v_t` with `*`" in wrong.reasoning, wrong.reasoning


def test_rounding_is_no_operator_and_another_form_of_a_formula_is_no_inversion(
    tmp_path: Path,
) -> None:
    """``K' = floor(K / n)`` computed as ``int(K * n)`` inverts the quotient inside the rounding;
    a velocity written from the denoiser (``(x - d) / sigma``) for a claim that writes it from
    the score (``-dot_sigma * sigma * score``) is another form, with operands of other kinds."""
    claim = "Stages: N(k) = min(s0 * 2^k, s1) + 1, where K' = floor(K / (log2(s1 / s0) + 1)), s0=10"
    code = "import numpy as np\n\n\ndef stages(K, s0, s1):\n    K_prime = int(K {op} (np.log2(s1 / s0) + 1))\n    return K_prime\n"
    write(tmp_path, {"schedule.py": code.format(op="/")})
    assert "The code computes" not in judge_one(tmp_path, "D2", claim).reasoning
    write(tmp_path, {"schedule.py": code.format(op="*")})
    wrong = judge_one(tmp_path, "D2", claim)
    assert "The code computes `K_prime` with `*`" in wrong.reasoning, wrong.reasoning
    score_form = (
        "Velocity: v_t(x) = -dot_sigma_t * sigma_t * grad_x log p_t(x), the probability flow."
    )
    denoiser_form = "def velocity(x_t, x_denoised, sigma_t):\n    v_t = (x_t - x_denoised) / sigma_t\n    return v_t\n"
    write(tmp_path, {"schedule.py": denoiser_form})
    assert "The code computes" not in judge_one(tmp_path, "D2", score_form).reasoning


def test_a_stubbed_constructor_is_described_by_its_classs_docstring(tmp_path: Path) -> None:
    """A class's docstring says what its ``__init__`` builds: with the constructor a stub, the
    values the config still sets (and the run still saves) are not implemented, though the name
    ``__init__`` says nothing of the claim."""
    claim = "Transformer baseline: decoder-only, model dimension 64, 8 attention heads, 2 layers."
    init = (
        "        self.layers = nn.ModuleList(\n"
        "            nn.TransformerDecoderLayer(cfg['d_model'], cfg['n_heads'])\n"
        "            for _ in range(cfg['n_layers'])\n        )\n"
    )
    model = (
        "import torch.nn as nn\n\n\nclass Backbone(nn.Module):\n"
        '    """Decoder-only transformer baseline: attention heads over the model dimension."""\n\n'
        "    def __init__(self, cfg):\n        super().__init__()\n{init}"
    )
    files = {
        "config.yaml": "d_model: 64\nn_heads: 8\nn_layers: 2\nlr: 0.001\n",
        "train.py": "import json\n\nimport yaml\n\nfrom model import Backbone\n\n\n"
        "if __name__ == '__main__':\n    cfg = yaml.safe_load(open('config.yaml'))\n"
        "    with open('run.json', 'w') as fh:\n"
        "        json.dump({k: cfg[k] for k in ('d_model', 'n_heads', 'n_layers')}, fh)\n"
        "    Backbone(cfg)\n",
    }
    write(tmp_path, {**files, "model.py": model.format(init=init)})
    real = judge_one(tmp_path, "D1", claim)
    stub = "        # TODO\n        raise NotImplementedError\n"
    write(tmp_path, {"model.py": model.format(init=stub)})
    stubbed = judge_one(tmp_path, "D1", claim)
    assert (stubbed.score or 0.0) < (real.score or 0.0), (real.reasoning, stubbed.reasoning)
    assert "Backbone.__init__" in stubbed.reasoning, stubbed.reasoning


def test_a_module_docstring_is_weaker_evidence_than_running_codes_comments(tmp_path: Path) -> None:
    """A window's terms count by the best kind of line holding them there: a module docstring
    restating the paper (or code nothing runs) less than the comments of a function that runs,
    so the running function is the claim's evidence, not the restatement before it."""
    prose = "combined objective with learnable covariance and variational bound"
    write(
        tmp_path,
        {
            "a_notes.py": f'"""{prose}."""\n\nVERSION = 1\n',
            "losses.py": f"def total(x, y):\n    # {prose}\n    return x + y\n",
            "train.py": "from losses import total\n\n\nif __name__ == '__main__':\n"
            "    print(total(1, 2))\n",
        },
    )
    ctx = SubmissionContext(build_index(tmp_path))
    wins = ctx.windows({t: 1.0 for t in text_terms(prose)})
    assert ctx.index.files[wins[0].fid].path == "losses.py", [
        (ctx.index.files[w.fid].path, w.score) for w in wins
    ]
    assert wins[0].score > wins[1].score


def test_a_stub_as_the_best_evidence_costs_a_level_beside_a_near_real_window(
    tmp_path: Path,
) -> None:
    """The function that holds the claim's best window is a stub, and a window elsewhere nearly
    as good is real (it names the claim, or does part of it): the claim loses a level and the
    stub is named, where the same function with its body keeps its score."""
    claim = (
        "Matrix Row-wise Normalization Along Embedding Dimension: for matrix M, "
        "M[i,:] = M[i,:] / ||M[i,:]||_2 for each row i."
    )
    utils = (
        "import torch\n\n\ndef normalize_matrix(M, dim=-1, eps=1e-8):\n"
        '    """Unit-norm the weights."""\n'
        "    # row i of M: M[i, :] / ||M[i, :]||_2 along the embedding dimension\n{body}"
    )
    model = (
        "import torch\n\n\nclass NormEmbedding(torch.nn.Module):\n"
        "    def forward(self, idx):\n"
        "        # row normalization along the embedding dimension\n"
        "        rows = self.weight[idx]\n"
        "        return rows / rows.norm(dim=-1, keepdim=True)\n"
    )
    real = "    norms = torch.linalg.norm(M, dim=dim, keepdim=True)\n    return M / (norms + eps)\n"
    write(tmp_path, {"utils.py": utils.format(body=real), "model.py": model})
    right = judge_one(tmp_path, "D2", claim)
    assert "a stub" not in right.reasoning, right.reasoning
    write(tmp_path, {"utils.py": utils.format(body="    raise NotImplementedError\n")})
    wrong = judge_one(tmp_path, "D2", claim)
    assert "The best evidence is `normalize_matrix` (utils.py:4), a stub." in wrong.reasoning
    assert wrong.verdict == "placeholder" and wrong.score < (right.score or 0.0)


def test_a_stub_nearly_as_good_as_the_best_evidence_costs_a_level(tmp_path: Path) -> None:
    """The best window is real code, and a window nearly as much about the claim
    (``near_stub_window`` of its score) is a stub: part of the claim is not written, the claim
    loses a level and the stub is named."""
    claim = (
        "Row-wise normalization of the embedding matrix: for matrix M, "
        "M[i,:] = M[i,:] / ||M[i,:]||_2 for each row i."
    )
    model = (
        "import torch\n\n\ndef normalize_rows(M, eps=1e-8):\n"
        '    """Row-wise normalization of the embedding matrix M."""\n'
        "    norms = torch.linalg.norm(M, dim=-1, keepdim=True)\n    return M / (norms + eps)\n"
    )
    other = (
        "import torch\n\n\ndef normalize_embedding(M, eps=1e-8):\n"
        '    """Row-wise normalization of the embedding matrix M for each row i."""\n{body}'
    )
    real = "    norms = torch.linalg.norm(M, dim=0, keepdim=True)\n    return M / (norms + eps)\n"
    write(tmp_path, {"model.py": model, "other.py": other.format(body=real)})
    right = judge_one(tmp_path, "D2", claim)
    assert "a stub" not in right.reasoning, right.reasoning
    write(tmp_path, {"other.py": other.format(body="    raise NotImplementedError\n")})
    wrong = judge_one(tmp_path, "D2", claim)
    named = "Evidence nearly as good as the best is `normalize_embedding` (other.py:4), a stub."
    assert named in wrong.reasoning, wrong.reasoning
    assert any(e.file == "other.py" for e in wrong.evidence), wrong.evidence
    assert (wrong.score or 0.0) < (right.score or 0.0), (wrong, right)


def test_a_class_whose_computation_is_a_stub_is_a_placeholder(tmp_path: Path) -> None:
    """Evidence in a class's ``__init__`` (the layers the claim names) runs through the class's
    ``forward``: when that is a stub, the claim is a placeholder."""
    model = (
        "import torch.nn as nn\n\n\nclass ScaledDotProductAttention(nn.Module):\n"
        "    def __init__(self, d_model, n_heads):\n        super().__init__()\n"
        "        self.query = nn.Linear(d_model, d_model)\n"
        "        self.key = nn.Linear(d_model, d_model)\n"
        "        self.value = nn.Linear(d_model, d_model)\n"
        "        self.scale = (d_model // n_heads) ** -0.5\n\n"
        "    def forward(self, x):\n{body}\n"
    )
    claim = "Attention scales the query-key dot product of each head and weights the values."
    stub = "        # TODO: attention\n        raise NotImplementedError"
    write(tmp_path, {"model.py": model.format(body=stub)})
    j = judge_one(tmp_path, "D2", claim)
    assert (j.verdict, j.failure_mode) == ("placeholder", "placeholder"), j.reasoning
    assert "forward" in j.reasoning
    real = "        q, k = self.query(x), self.key(x)\n        return (q @ k.T * self.scale) @ self.value(x)"
    write(tmp_path, {"model.py": model.format(body=real)})
    assert judge_one(tmp_path, "D2", claim).verdict != "placeholder"


def test_a_class_that_cannot_be_constructed_implements_nothing(tmp_path: Path) -> None:
    """A class whose ``__init__`` raises ``NotImplementedError`` has no instance: its ``forward``
    runs nowhere, however real its code, and the claim it computes is a placeholder. A class
    the code derives from may be constructed through its subclass: kept."""
    model = (
        "import torch.nn as nn\n\n\nclass ScaledDotProductAttention(nn.Module):\n"
        "    def __init__(self, d_model, n_heads):\n{init}\n\n"
        "    def forward(self, x):\n"
        "        q, k = self.query(x), self.key(x)\n"
        "        return (q @ k.T * self.scale) @ self.value(x)\n"
    )
    claim = "Attention scales the query-key dot product of each head and weights the values."
    real = (
        "        super().__init__()\n        self.query = nn.Linear(d_model, d_model)\n"
        "        self.key = nn.Linear(d_model, d_model)\n"
        "        self.value = nn.Linear(d_model, d_model)\n"
        "        self.scale = (d_model // n_heads) ** -0.5"
    )
    write(tmp_path, {"model.py": model.format(init=real)})
    assert judge_one(tmp_path, "D2", claim).verdict != "placeholder"
    write(
        tmp_path,
        {"model.py": model.format(init="        # TODO\n        raise NotImplementedError")},
    )
    j = judge_one(tmp_path, "D2", claim)
    assert j.verdict == "placeholder", j.reasoning
    derived = "\n\nclass Flash(ScaledDotProductAttention):\n    def __init__(self):\n        pass\n"
    write(
        tmp_path,
        {"model.py": model.format(init="        raise NotImplementedError") + derived},
    )
    assert judge_one(tmp_path, "D2", claim).verdict != "placeholder"


_ENCODINGS = '''import math

import torch


def spatial_sinusoidal_encoding(height, width, dim):
    """Spatial position encoding: sinusoids of the row and column, interpolated to any size."""
    ys = torch.arange(height)[:, None] / height
    xs = torch.arange(width)[None, :] / width
    freqs = torch.exp(torch.arange(0, dim, 2) * (-math.log(10000.0) / dim))
    return torch.cat([torch.sin(ys[..., None] * freqs), torch.cos(xs[..., None] * freqs)], -1)


def temporal_rotary_encoding(frames, dim):
    """Temporal position encoding: rotary embeddings of the frame index."""
{body}


def encode(video):
    b, t, h, w, d = video.shape
    return video + spatial_sinusoidal_encoding(h, w, d) + temporal_rotary_encoding(t, d)


if __name__ == "__main__":
    encode(torch.zeros(1, 4, 8, 8, 16))
'''


def test_a_stub_nearly_as_much_about_the_claim_as_the_best_function_costs_a_level(
    tmp_path: Path,
) -> None:
    """A claim of two parts (a spatial and a temporal encoding) whose second part is a stub: the
    stub describes the claim nearly as well as the written function that describes it best, so the
    claim loses a level and the judge names the stub. A claim naming the written function is
    about that function: the other's stub costs it nothing."""
    real = (
        "    pos = torch.arange(frames)[:, None]\n"
        "    theta = pos * torch.exp(torch.arange(0, dim, 2) * (-math.log(10000.0) / dim))\n"
        "    return torch.stack([torch.cos(theta), torch.sin(theta)], -1).flatten(-2)"
    )
    stub = "    # TODO: implement\n    raise NotImplementedError"
    claim = (
        "Position encoding for the pyramid: sinusoidal spatial position encoding interpolated to "
        "each resolution, and rotary temporal position encoding of the frames."
    )
    named = f"`spatial_sinusoidal_encoding`: {claim}"
    write(tmp_path, {"encoding.py": _ENCODINGS.format(body=real)})
    written, named_written = judge_one(tmp_path, "D2", claim), judge_one(tmp_path, "D2", named)
    write(tmp_path, {"encoding.py": _ENCODINGS.format(body=stub)})
    j = judge_one(tmp_path, "D2", claim)
    assert j.score == written.score - 0.25, (written.reasoning, j.reasoning)
    assert "`temporal_rotary_encoding` (encoding.py:14)" in j.reasoning
    assert judge_one(tmp_path, "D2", named).score == named_written.score


_OPTIMIZER = '''import yaml


def build_optimizer(params, cfg):
    """The optimizer of the policy, with the decoupled weight decay."""
{body}


def main():
    cfg = yaml.safe_load(open("config.yaml"))["optimizer"]
{log}    return build_optimizer([], cfg)


if __name__ == "__main__":
    main()
'''


def test_values_nothing_reads_beside_a_stub_about_the_claim_cost_a_level(tmp_path: Path) -> None:
    """A value claim whose settings stand in a config that nothing reads, beside a stub about the
    claim (the optimizer's builder): the code that would use the values is not written, and the
    claim loses a level. Where running code reads the settings, the stub (which describes the
    claim less than a value claim's own stub must) costs nothing."""
    real = (
        "    import torch\n\n"
        '    return torch.optim.AdamW(params, lr=cfg["lr"], betas=tuple(cfg["betas"]))'
    )
    stub = "    # TODO: implement\n    raise NotImplementedError"
    read = '    cfg = {"lr": cfg["lr"], "warmup_steps": cfg["warmup_steps"]}\n'
    config = {
        "config.yaml": "optimizer:\n  lr: 0.0003\n  betas: [0.9, 0.95]\n  warmup_steps: 1000\n"
    }
    claim = "Policy optimizer settings: AdamW with learning rate 3e-4, 1000 warmup steps."
    write(tmp_path, {**config, "train.py": _OPTIMIZER.format(body=real, log="")})
    written = judge_one(tmp_path, "D1", claim)
    assert written.verdict == "aligned", written.reasoning
    write(tmp_path, {"train.py": _OPTIMIZER.format(body=stub, log="")})
    j = judge_one(tmp_path, "D1", claim)
    assert (j.verdict, j.score) == ("partial", 0.75), j.reasoning
    assert "`build_optimizer` (train.py:4)" in j.reasoning
    write(tmp_path, {"train.py": _OPTIMIZER.format(body=stub, log=read)})
    j = judge_one(tmp_path, "D1", claim)
    assert j.verdict == "aligned", j.reasoning


# --- D3: protocol -------------------------------------------------------------------------


def test_named_datasets_in_any_spelling(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "data.py": 'DATASETS = {"blobs_3": 3, "Blobs5": 5}\n\ndef load(name):\n    return name\n',
            "README.md": "Datasets: blobs-3, blobs-5 and blobs-7.\n",
        },
    )
    j = judge_one(tmp_path, "D3", "Two synthetic datasets are used: `blobs-3` and `blobs-5`.")
    assert j.verdict == "aligned"
    miss = judge_one(tmp_path, "D3", "Three datasets: `blobs-3`, `blobs-5` and `blobs-7`.")
    assert (miss.verdict, miss.failure_mode) == ("missing", "omission")
    assert "blobs-7" in miss.reasoning and "docs" in miss.reasoning


def test_missing_baseline_is_an_omission(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": TRAIN, "README.md": "Baseline: majority_class.\n"})
    j = judge_one(tmp_path, "D3", "Baseline `majority_class` predicts the most frequent class.")
    assert (j.verdict, j.score, j.failure_mode) == ("missing", 0.0, "omission")


# --- D4: order ----------------------------------------------------------------------------


PIPELINE = """\
from steps import load_data, normalise, train_model, evaluate


def main():
    X, y = load_data()
    X = normalise(X)
    model = train_model(X, y)
    print(evaluate(model, X, y))


if __name__ == "__main__":
    main()
"""


def test_steps_in_order_are_aligned(tmp_path: Path) -> None:
    write(tmp_path, {"main.py": PIPELINE, "reproduce.sh": "python main.py\n"})
    j = judge_one(tmp_path, "D4", "The steps run as `load` → `normalise` → `train` → `evaluate`.")
    assert j.verdict == "aligned"
    assert {e.start for e in j.evidence} >= {5, 6, 7, 8}


def test_swapped_steps_are_drifted(tmp_path: Path) -> None:
    swapped = PIPELINE.replace(
        "    X = normalise(X)\n    model = train_model(X, y)\n",
        "    model = train_model(X, y)\n    X = normalise(X)\n",
    )
    write(tmp_path, {"main.py": swapped})
    j = judge_one(
        tmp_path, "D4", "Features are normalised before training: `normalise` -> `train`."
    )
    assert (j.verdict, j.failure_mode) == ("drifted", "implementation_mismatch")
    assert "main.py:6" in j.reasoning and "main.py:7" in j.reasoning


def test_the_steps_an_order_drift_names_are_its_first_evidence(tmp_path: Path) -> None:
    """The report shows and highlights a judgment's first evidence: for steps out of order, the
    two the reasoning names, not the claim's first step that is in its place."""
    swapped = PIPELINE.replace(
        "    X = normalise(X)\n    model = train_model(X, y)\n",
        "    model = train_model(X, y)\n    X = normalise(X)\n",
    )
    write(tmp_path, {"main.py": swapped})
    j = judge_one(tmp_path, "D4", "The steps run as `load` → `normalise` → `train` → `evaluate`.")
    assert j.verdict == "drifted", j.reasoning
    assert [e.start for e in j.evidence[:2]] == [6, 7], j.reasoning
    assert {e.start for e in j.evidence} >= {5, 6, 7}


def test_steps_followed_into_called_functions(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "main.py": "from lib import run\n\nif __name__ == '__main__':\n    run()\n",
            "lib.py": (
                "def prepare():\n    return 1\n\n\ndef fit(x):\n    return x\n\n\n"
                "def run():\n    x = prepare()\n    return fit(x)\n"
            ),
        },
    )
    assert judge_one(tmp_path, "D4", "`prepare` then `fit`.").verdict == "aligned"
    assert judge_one(tmp_path, "D4", "`fit` then `prepare`.").verdict == "drifted"


def test_a_step_named_twice_is_taken_after_the_step_before_it(tmp_path: Path) -> None:
    """Building a callable (``lloyd = Lloyd(...)``) does not run it: the call after the seeding
    is the step; a real swap, with no call after the step before it, stays drifted."""
    code = """from lib import Lloyd, init, inertia


def fit(X, k):
    lloyd = Lloyd(100)
    start = init(X, k)
    centroids = lloyd(X, start)
    return inertia(X, centroids)


if __name__ == "__main__":
    fit(1, 2)
"""
    claim = "Within a restart: `init` → `lloyd` → `inertia`."
    write(tmp_path, {"main.py": code, "lib.py": "def init(X, k):\n    return X\n"})
    assert judge_one(tmp_path, "D4", claim).verdict == "aligned"
    swapped = code.replace(
        "    start = init(X, k)\n    centroids = lloyd(X, start)\n    return inertia(X, centroids)",
        "    centroids = lloyd(X, X)\n    start = init(centroids, k)\n    return inertia(X, start)",
    )
    write(tmp_path, {"main.py": swapped})
    assert judge_one(tmp_path, "D4", claim).verdict == "drifted"


# --- stubs, docs, empty -------------------------------------------------------------------


def test_stub_is_a_placeholder(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "metrics.py": (
                "def rmse(y, p):\n    return ((y - p) ** 2).mean() ** 0.5\n\n\n"
                "def r2_score(y, p):\n    # TODO: implement\n    return 0.0\n"
            ),
        },
    )
    j = judge_one(tmp_path, "D3", "Metric `r2`: the coefficient of determination.")
    assert (j.verdict, j.failure_mode) == ("placeholder", "placeholder")
    assert j.evidence[0].start == 5 and "r2_score" in j.reasoning
    assert judge_one(tmp_path, "D3", "Metric `rmse` on the test split.").verdict == "aligned"


def test_best_evidence_in_a_stub_is_a_placeholder(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "seeding.py": (
                "def kmeans_plusplus(X, k):\n"
                '    """Seed centroids by D^2 sampling: far points are likelier."""\n'
                "    raise NotImplementedError\n"
            ),
        },
    )
    j = judge_one(tmp_path, "D2", "k-means++ seeds the centroids by D^2 sampling.")
    assert j.verdict == "placeholder"


LOSSES = """\
class BaseLoss:
    def __call__(self, a, b):
        raise NotImplementedError


class InfoNCE(BaseLoss):
    def __call__(self, a, b):
        \"\"\"Contrastive InfoNCE loss: cosine logits over the batch, scaled by a temperature.\"\"\"
{body}
"""
LOG = (
    "def log_epoch(stats):\n"
    '    """Print the contrastive loss, the temperature and the batch logits."""\n'
    '    print("contrastive loss", stats["loss"], "temperature", stats["t"], "logits", stats["n"])\n'
)
REAL_BODY = "        logits = a @ b.T / 0.07\n        return cross_entropy(logits)"
CLAIM_NCE = "The contrastive InfoNCE loss scales the cosine logits over the batch by a temperature."


def test_stub_that_the_code_names_for_the_claim_is_a_placeholder(tmp_path: Path) -> None:
    """The function whose name and docstring say it does the claim is the claim's evidence, even
    when the claim's words also appear in live code elsewhere (a log line); a base class's
    abstract method is an interface, not missing work."""
    body = "        # TODO: the loss\n        raise NotImplementedError"
    write(tmp_path, {"losses.py": LOSSES.format(body=body), "log.py": LOG})
    j = judge_one(tmp_path, "D2", CLAIM_NCE)
    assert (j.verdict, j.failure_mode) == ("placeholder", "placeholder"), j.reasoning
    assert any(e.file == "losses.py" and e.start >= 6 for e in j.evidence)
    write(tmp_path, {"losses.py": LOSSES.format(body=REAL_BODY)})
    assert judge_one(tmp_path, "D2", CLAIM_NCE).verdict != "placeholder"


def test_value_handed_only_to_a_stub_is_a_placeholder(tmp_path: Path) -> None:
    """A setting passed by keyword only into a stub is configured, not used."""
    main = (
        "import argparse\n\nfrom model import Encoder\n\n\ndef main():\n"
        "    p = argparse.ArgumentParser()\n"
        '    p.add_argument("--temperature", type=float, default=0.07)\n'
        "    args = p.parse_args()\n"
        "    return Encoder(temperature=args.temperature)\n"
    )
    stub = "class Encoder:\n    def __init__(self, temperature):\n        # TODO\n        pass\n"
    write(tmp_path, {"main.py": main, "model.py": stub})
    j = judge_one(tmp_path, "D1", "The softmax temperature is 0.07.")
    assert (j.verdict, j.failure_mode) == ("placeholder", "placeholder"), j.reasoning
    assert "Encoder" in j.reasoning or "__init__" in j.reasoning
    real = "class Encoder:\n    def __init__(self, temperature):\n        self.t = temperature\n"
    write(tmp_path, {"model.py": real})
    assert judge_one(tmp_path, "D1", "The softmax temperature is 0.07.").verdict == "aligned"


def test_values_set_for_a_stub_that_computes_the_claim_cost_a_level(tmp_path: Path) -> None:
    """A value claim whose computation is a stub is not implemented because a config still sets
    its value: the stub costs the found values a level, and the judge says which stub."""
    config = "CONTRASTIVE_TEMPERATURE = 0.07\n"
    train = (
        "from config import CONTRASTIVE_TEMPERATURE\nfrom losses import InfoNCE\n\n\n"
        "def train(a, b):\n    return InfoNCE()(a, b) / CONTRASTIVE_TEMPERATURE\n"
    )
    claim = "The contrastive InfoNCE loss scales the cosine logits by a temperature of 0.07."
    body = "        # TODO: the loss\n        raise NotImplementedError"
    write(tmp_path, {"config.py": config, "train.py": train, "losses.py": LOSSES.format(body=body)})
    stubbed = judge_one(tmp_path, "D1", claim)
    assert stubbed.verdict in ("partial", "placeholder") and stubbed.score <= 0.75, (
        stubbed.reasoning
    )
    assert "InfoNCE" in stubbed.reasoning and "stub" in stubbed.reasoning
    assert any(e.file == "losses.py" for e in stubbed.evidence)
    write(tmp_path, {"losses.py": LOSSES.format(body=REAL_BODY)})
    real = judge_one(tmp_path, "D1", claim)
    assert real.score > stubbed.score and "stub" not in real.reasoning, real.reasoning


def test_evidence_only_in_docs_is_missing(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "train.py": TRAIN,
            "README.md": "We apply cosine annealing with warm restarts to the schedule.\n",
            "tests/test_schedule.py": "def test_cosine_annealing_warm_restarts():\n    pass\n",
        },
    )
    j = judge_one(tmp_path, "D2", "Cosine annealing with warm restarts schedules the rate.")
    assert (j.verdict, j.failure_mode) == ("missing", "omission")
    assert "docs/tests" in j.reasoning
    assert j.evidence and j.evidence[0].file in ("README.md", "tests/test_schedule.py")


def test_a_papers_claims_are_parsed_once_for_all_its_runs(tmp_path: Path) -> None:
    """A batch judges one paper's SAUs for every run: the parsed claims are shared (the same
    objects for equal SAUs, new ones when a claim changes), and sharing them carries nothing from
    one run's judging into another's."""
    from sabench.judges.static import analyze_claims

    saus = [
        sau("p-1", "D1", "The learning rate is `lr=0.01`."),
        sau("p-2", "D2", "The loss is `loss = (pred - y) ** 2`."),
        sau("p-3", "D4", "Train the model, then evaluate it."),
    ]
    copy = [dict(s) for s in saus]
    assert analyze_claims(copy) is analyze_claims(saus)
    changed = [*copy[:2], sau("p-3", "D4", "Evaluate the model, then train it.")]
    assert analyze_claims(changed)[2].text != analyze_claims(saus)[2].text
    before = analyze_claims(saus)
    with pytest.MonkeyPatch.context() as mp:  # a sweep of the rule parameters parses again
        mp.setitem(static_mod.RULES, "entity_weight", static_mod.RULES["entity_weight"] / 4)
        mp.setitem(static_mod.RULES, "name_weight", static_mod.RULES["name_weight"] / 4)
        reweighed = analyze_claims(saus)
    assert reweighed is not before
    assert [c.terms for c in reweighed] != [c.terms for c in before]

    good = write(
        tmp_path / "good",
        {
            "train.py": "lr = 0.01\n\ndef loss(pred, y):\n    return (pred - y) ** 2\n\n"
            "def main():\n    train()\n    evaluate()\n"
        },
    )
    bad = write(
        tmp_path / "bad",
        {
            "train.py": "lr = 0.5\n\ndef loss(pred, y):\n    return (pred + y) ** 2\n\n"
            "def main():\n    evaluate()\n    train()\n"
        },
    )

    def outcomes(root: Path) -> list[tuple]:
        return [(j.verdict, j.score, j.reasoning) for j in judge_static(root, saus)]

    alone = outcomes(bad)
    good_outcomes = outcomes(good)
    assert outcomes(bad) == alone
    assert [o[0] for o in good_outcomes] != [o[0] for o in alone]


def test_empty_submission_is_missing_everywhere(tmp_path: Path) -> None:
    saus = [sau(f"p-{i}", f"D{i % 4 + 1}", f"claim {i} with lr 0.1") for i in range(200)]
    t0 = time.perf_counter()
    out = judge_static(tmp_path, saus)
    assert time.perf_counter() - t0 < 0.5
    assert {(j.verdict, j.failure_mode, j.score) for j in out} == {("missing", "omission", 0.0)}
    assert [j.sau_id for j in out] == [s["sau_id"] for s in saus]
    assert {j.verdict for j in judge_static(tmp_path / "absent", saus[:3])} == {"missing"}
    docs_only = write(tmp_path / "docs_only", {"README.md": "lr 0.1\n"})
    assert {j.verdict for j in judge_static(docs_only, saus[:3])} == {"missing"}


def test_unreadable_submission_is_an_error(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file.txt"
    not_a_dir.write_text("x")
    (j,) = judge_static(not_a_dir, [sau("p-1", "D1", "lr 0.1")])
    assert j.verdict == "error" and j.score is None


# --- abstaining: undetermined ----------------------------------------------------------------

RUN_TRAIN = (
    TRAIN
    + "\nif __name__ == '__main__':\n    print(train(np.ones((4, 2)), np.ones(4), 0.05, 10))\n"
)
#: a claim that names no code and whose words are only partly in TRAIN's live code
LOOSE = (
    "The weights are trained by gradient descent with momentum and Nesterov acceleration, "
    "shuffling the samples every epoch."
)
STUBS = """\
def train(X, y, lr, epochs):
    \"\"\"Gradient descent on the weights.\"\"\"
    pass


if __name__ == "__main__":
    train(None, None, 0.05, 10)
"""


def run_score(judgments: list) -> float:
    """The run's overall score by the tables' rule."""
    import pandas as pd

    from sabench.scoring import OVERALL, run_scores

    rows = [
        {**j.row(), "agent": "a", "paper": "p", "seed": "0", "judge": "static"} for j in judgments
    ]
    runs = run_scores(pd.DataFrame(rows))
    return float(runs.loc[runs["dimension"] == OVERALL, "score"].iloc[0])


def test_weak_overlap_with_a_claim_naming_no_code_is_undetermined(tmp_path: Path) -> None:
    """Some of the claim's words are in live code, no rule decides: no verdict and no score."""
    write(tmp_path, {"train.py": RUN_TRAIN})
    j = judge_one(tmp_path, "D2", LOOSE)
    assert (j.verdict, j.score, j.failure_mode) == ("undetermined", None, None), j.reasoning
    assert j.reasoning.startswith("Undetermined") and j.confidence == 0.0
    # the same claim naming its code: an absent named item is evidence, not a guess
    named = judge_one(tmp_path, "D2", LOOSE.replace("momentum", "`momentum`"))
    assert (named.verdict, named.failure_mode) == ("missing", "omission")


def test_a_drift_the_judge_sees_stays_drifted_beside_abstentions(tmp_path: Path) -> None:
    """A value under its name that differs, and a stub, are decided by rules: never abstained."""
    write(tmp_path, {"train.py": RUN_TRAIN, "config.yaml": "optim:\n  learning_rate: 0.005\n"})
    saus = [
        sau("p-1", "D1", "Gradient descent uses a learning rate of 0.05."),
        sau("p-2", "D2", LOOSE),
    ]
    drifted, loose = judge_static(tmp_path, saus)
    assert (drifted.verdict, drifted.score) == ("drifted", 0.0)
    assert loose.verdict == "undetermined"
    assert run_score([drifted, loose]) == 0.0  # the abstention lifts nothing
    stub = tmp_path / "stub"
    write(stub, {"train.py": STUBS})
    (j,) = judge_static(stub, [sau("p-1", "D2", "Gradient descent updates the weights.")])
    assert (j.verdict, j.score) == ("placeholder", 0.0)


def test_a_claim_whose_words_are_in_a_stub_is_not_undetermined(tmp_path: Path) -> None:
    """A stub where the claim's words are is something the judge sees (a placeholder where the
    claim would be implemented), not weak overlap: the bands' level stands."""
    write(tmp_path, {"train.py": RUN_TRAIN})
    assert judge_one(tmp_path, "D2", LOOSE).verdict == "undetermined"
    write(tmp_path, {"nesterov.py": "def nesterov(v):\n    pass\n"})
    j = judge_one(tmp_path, "D2", LOOSE)
    assert (j.verdict, j.score) == ("missing", 0.0), j.reasoning


@pytest.mark.parametrize("files", [{}, {"train.py": STUBS}, {"README.md": LOOSE}])
def test_a_submission_without_code_that_could_implement_the_claims_scores_zero(
    tmp_path: Path, files: dict[str, str]
) -> None:
    """Empty, stubs only, or the claims as prose: nothing to abstain on, the run scores 0."""
    write(tmp_path, files)
    claims = [
        LOOSE,
        "Weights start at zero and gradient descent updates them for a fixed number of epochs.",
        "Evaluation reports the accuracy on a held-out test split.",
    ]
    got = judge_static(tmp_path, [sau(f"p-{i}", "D2", c) for i, c in enumerate(claims)])
    assert not [j for j in got if j.verdict == "undetermined"], [j.reasoning for j in got]
    assert run_score(got) == 0.0


# --- results from the execution record ----------------------------------------------------


def test_expected_results_use_the_execution_metrics(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": TRAIN})
    exp = [{"metric": "toy.gd.rmse", "value": 0.5, "tolerance": 0.01}]
    claim = "Gradient descent reaches an RMSE of 0.5 on the toy data."
    ok = {"status": "ok", "metrics": {"toy": {"gd": {"rmse": 0.505}}}}
    assert judge_one(tmp_path, "D3", claim, ok, expected=exp).verdict == "aligned"
    off = {"status": "ok", "metrics": {"toy.gd.rmse": 0.6}}
    j = judge_one(tmp_path, "D3", claim, off, expected=exp)
    assert j.verdict == "drifted" and "0.6" in j.reasoning
    failed = {"status": "failed", "metrics": {}}
    j = judge_one(tmp_path, "D3", claim, failed, expected=json.dumps(exp))
    assert (j.verdict, j.failure_mode) == ("missing", "omission")
    rel = [{"metric": "toy.gd.rmse", "value": 0.5, "tolerance": "1%"}]
    assert judge_one(tmp_path, "D3", claim, off, expected=rel).verdict == "drifted"


# --- contract -----------------------------------------------------------------------------


def test_every_judgment_is_valid(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": TRAIN, "README.md": "readme\n"})
    saus = [
        sau("a", "D1", "lr 0.1 and 20 epochs"),
        sau("b", "D2", "Gradient descent on `w`."),
        sau("c", "D3", "Evaluate on MNIST and CIFAR-10 against ResNet-18."),
        sau("d", "D4", "train → evaluate → report"),
        sau("e", "D9", None),
        sau("f", "D2", ""),
    ]
    for j in judge_static(tmp_path, saus):
        assert j.verdict in VERDICTS and j.verdict != "error"
        assert j.reasoning
        assert j.verdict != "partial" or j.score in (0.25, 0.5, 0.75)


def test_fingerprint_covers_code_and_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    fp = static_fingerprint()
    assert fp == static_fingerprint() and fp.startswith("static-")
    monkeypatch.setitem(static_mod.RULES, "window_lines", 99)
    assert static_fingerprint() != fp


# --- the demo papers ----------------------------------------------------------------------


def _demo_cases() -> list[tuple[str, str, str]]:
    cases = []
    for man in sorted((RESOURCES / "manifests").glob("*/*.yaml")):
        data = yaml.safe_load(man.read_text())
        for sau_id in data.get("expected", {}):
            cases.append((man.parent.name, data["paper"], sau_id))
    return cases


@pytest.fixture(scope="session")
def demo_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict]:
    """Judgments of every demo run, without and with an execution record (reproduce.sh run in a
    copy; the demo submissions are ours and need only numpy)."""
    out: dict[tuple[str, str], dict] = {}
    python_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": python_dir + os.pathsep + os.environ.get("PATH", "")}
    for man in sorted((RESOURCES / "manifests").glob("*/*.yaml")):
        data = yaml.safe_load(man.read_text())
        agent, paper = man.parent.name, data["paper"]
        sub = RESOURCES / "submissions" / agent / paper
        saus = yaml.safe_load((RESOURCES / "papers" / paper / "saus.yaml").read_text())["saus"]
        saus = [{**s, "sau_id": s["id"], "paper": paper} for s in saus]
        work = tmp_path_factory.mktemp(f"{agent}-{paper}") / "run"
        shutil.copytree(sub, work)
        try:
            proc = subprocess.run(
                ["bash", "reproduce.sh"], cwd=work, env=env, capture_output=True, timeout=300
            )
            code = proc.returncode
        except (OSError, subprocess.TimeoutExpired):
            code = -1
        results = work / "results.json"
        metrics = json.loads(results.read_text()) if results.is_file() else {}
        execution = {"status": "ok" if code == 0 else "failed", "metrics": metrics}
        out[(agent, paper)] = {
            "static": {j.sau_id: j for j in judge_static(sub, saus)},
            "executed": {j.sau_id: j for j in judge_static(sub, saus, execution)},
            "saus": {s["sau_id"]: s for s in saus},
            "execution": execution,
            "expected": data["expected"],
        }
    return out


@pytest.mark.skipif(not _demo_cases(), reason="the demo manifests are not there yet")
@pytest.mark.parametrize(("agent", "paper", "sau_id"), _demo_cases())
def test_demo_manifest(demo_runs: dict, agent: str, paper: str, sau_id: str) -> None:
    run = demo_runs[(agent, paper)]
    want = run["expected"][sau_id]
    has_results = bool(run["saus"][sau_id].get("expected"))
    if has_results and agent == "reference" and run["execution"]["status"] != "ok":
        pytest.skip(f"reproduce.sh of {agent}/{paper} did not run here: no results to compare")
    # Claims about results need the execution record; every other claim is judged from code alone.
    j = run["executed" if has_results else "static"][sau_id]
    assert (j.verdict, j.failure_mode) == (want["verdict"], want.get("failure_mode")), j.reasoning
    if want.get("location") and j.evidence and ":" in want["location"]:
        files = {loc.split(":")[0].strip() for loc in want["location"].split(",")}
        assert files & {e.file for e in j.evidence}, (j.evidence, want["location"])


# --- real SA-Bench runs -------------------------------------------------------------------


@pytest.mark.shared
def test_real_sabench_runs(sabench_data: Path, tmp_path: Path) -> None:
    """A few real agent repositories: no errors, valid evidence lines, a sane spread of verdicts."""
    papers = ["ca2-vdm", "voting-leaderboards", "ngpt"]
    verdicts: dict[str, int] = {}
    for config in ("claude-sonnet_papercoder", "gpt4o_basic"):
        with tarfile.open(sabench_data / "runs" / f"{config}.tar.gz") as tar:
            members = [m for m in tar.getmembers() if m.name.split("/")[0] in papers]
            tar.extractall(tmp_path / config, members=members, filter="data")
        for paper in papers:
            saus = import_sabench(sabench_data / "saus" / f"{paper}.json", paper)
            sub = tmp_path / config / paper
            t0 = time.perf_counter()
            out = judge_static(sub, saus)
            assert time.perf_counter() - t0 < 10
            assert len(out) == len(saus)
            for j in out:
                assert j.verdict != "error", j.reasoning
                verdicts[j.verdict] = verdicts.get(j.verdict, 0) + 1
                for e in j.evidence:
                    lines = (sub / e.file).read_text(errors="replace").splitlines()
                    assert 1 <= e.start <= e.end <= len(lines), (config, paper, j.sau_id, e)
    assert verdicts.get("partial", 0) > 0 and verdicts.get("missing", 0) > 0


def test_steps_in_a_main_block_and_the_entry_point_wins(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "run.py": (
                "from lib import load, clean, fit\n\nif __name__ == '__main__':\n"
                "    data = load()\n    data = clean(data)\n    fit(data)\n"
            ),
            # an unused helper with the steps the other way round
            "legacy.py": (
                "from lib import load, clean, fit\n\n\ndef old_pipeline():\n"
                "    data = load()\n    fit(data)\n    data = clean(data)\n"
            ),
            "reproduce.sh": "python run.py\n",
        },
    )
    j = judge_one(tmp_path, "D4", "`load` → `clean` → `fit`.")
    assert j.verdict == "aligned", j.reasoning
    assert "__main__" in j.reasoning and j.evidence[0].file == "run.py"
