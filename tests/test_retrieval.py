"""The llm judge's retrieval (sabench.judges.retrieval): which windows fill an SAU's excerpt budget
and in what order. Each test builds a small repository where one rule decides what is shown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from sabench.errors import UserError
from sabench.grid import SCHEMA_DIR, validate
from sabench.index import build_index
from sabench.judges.llm_judge import JUDGE_DEFAULTS, build_messages
from sabench.judges.retrieval import FILL_PRIORS, RETRIEVAL_DEFAULTS, Retriever

FILLER = ["x = 1"] * 30


def _retriever(root: Path, claim: str, **options: Any) -> tuple[Retriever, dict[str, Any]]:
    sau = {"sau_id": "p-D1-001", "dimension": "D1", "claim": claim}
    return Retriever(build_index(root), [sau], **options), sau


def _fill(root: Path, claim: str, **options: Any) -> list[tuple[str, int, int]]:
    """(path, first, last line) of the filling windows, in the order they fill the budget."""
    r, sau = _retriever(root, claim, **options)
    claim_obj = r.claim(sau)
    return [(r.index.files[fid].path, a, b) for fid, a, b in r._fill(claim_obj)]


def _starts(windows: list[tuple[str, int, int]]) -> list[tuple[str, int]]:
    return [(path, a) for path, a, _ in windows]


def _files(root: Path, claim: str, **options: Any) -> list[str]:
    return [path for path, _, _ in _fill(root, claim, **options)]


def test_retrieval_settings_are_the_judges() -> None:
    """Every retrieval setting is a judge setting (in its fingerprint) with the same default."""
    for key, value in RETRIEVAL_DEFAULTS.items():
        assert JUDGE_DEFAULTS[key] == value
    assert RETRIEVAL_DEFAULTS["fill_priors"] == FILL_PRIORS


def test_a_value_the_code_says_in_words_locates_a_window(tmp_path: Path) -> None:
    """A number of the claim written in a docstring or a string (not a literal, not an integer),
    ``0.95``, is where the code says the claim's value; ``fill_number_text`` off, it is not."""
    (tmp_path / "train.py").write_text(
        "\n".join(
            [
                '"""Trainer."""',
                *FILLER,
                "def make_optimizer(params):",
                '    """AdamW with betas (0.9, 0.95) as in the paper."""',
                "    return build(params)",
                *FILLER,
                'LABEL = "v0 0.95"',
                *FILLER,
            ]
        )
        + "\n"
    )
    claim = "The second moment decay is 0.95"
    on = _starts(_fill(tmp_path, claim, fill_priors={}))
    assert ("train.py", 33 - 1) in on  # the docstring's line, from one line above
    assert ("train.py", 65 - 1) in on  # the string's
    off = _fill(tmp_path, claim, fill_priors={}, fill_number_text=False)
    assert not any(a <= 33 <= b or a <= 65 <= b for _, a, b in off)


def test_a_paper_part_the_claim_cites_locates_the_code_that_cites_it(tmp_path: Path) -> None:
    """``Eq. (4)`` in the claim finds ``(Eq. 4)`` in the code before another equation's comment,
    which the word alone ranks first (it comes first)."""
    (tmp_path / "loss.py").write_text(
        "\n".join(
            [
                "import torch",
                *FILLER,
                "def other(a):",
                "    # eq. (5)",
                "    return a",
                *FILLER,
                "def loss_fn(a, b):",
                "    # see (Eq. 4)",
                "    return (a - b).abs().mean()",
                *FILLER,
            ]
        )
        + "\n"
    )
    claim = "The reconstruction objective follows Eq. (4)"
    assert _starts(_fill(tmp_path, claim, fill_priors={}))[0] == ("loss.py", 66 - 1)
    assert _starts(_fill(tmp_path, claim, fill_priors={}, fill_ref_weight=0.0))[0] == (
        "loss.py",
        33 - 1,
    )


def test_filling_windows_run_from_one_line_above_their_hit_to_four_below(tmp_path: Path) -> None:
    """A window is cut where SA-Bench's evidence is (two lines above a hit to five below): from
    ``fill_window // 2 - 1 - fill_offset`` lines above its centre."""
    (tmp_path / "a.py").write_text("\n".join([*FILLER, "warmup_steps = 500", *FILLER]) + "\n")
    claim = "A linear warmup over 500 steps"
    first = _fill(tmp_path, claim)[0]
    assert first == ("a.py", 30, 35)  # the hit is line 31
    assert _fill(tmp_path, claim, fill_offset=0)[0] == ("a.py", 29, 34)


def test_priors_move_config_blocks_up(tmp_path: Path) -> None:
    """Of two windows whose words score alike, the one in a config file ranks before the one in
    a function's body; without priors (or without the config prior) the file order stands."""
    # live code (it runs and its results are returned): dead stores carry no evidence
    body = ["def run(cfg):", *[f"    step{i} = cfg.get('s{i}')" for i in range(40)]]
    body[25] = "    gamma = cfg['discount_factor']"
    body += [
        "    return gamma, " + ", ".join(f"step{i}" for i in range(40) if i != 24),
        "",
        "run({})",
    ]
    (tmp_path / "agent.py").write_text("\n".join(body) + "\n")
    (tmp_path / "zz.yaml").write_text(
        "\n".join([*[f"k{i}: {i}" for i in range(30)], "discount_factor: 0.99"]) + "\n"
    )
    claim = "The discount factor"
    assert _files(tmp_path, claim, fill_priors={}) == ["agent.py", "zz.yaml"]
    assert _files(tmp_path, claim) == ["zz.yaml", "agent.py"]
    # a partial mapping keeps the other priors' defaults
    assert _files(tmp_path, claim, fill_priors={"comment": 0.0}) == ["zz.yaml", "agent.py"]
    assert _files(tmp_path, claim, fill_priors={"config": 0.0}) == ["agent.py", "zz.yaml"]


def test_retrieve_shows_a_said_value_within_the_budget(tmp_path: Path) -> None:
    """End to end: the excerpt lines of an SAU include the docstring that says its value, and the
    budget holds."""
    (tmp_path / "model.py").write_text(
        "\n".join(
            [
                "import torch",
                *FILLER,
                "class Net:",
                '    """Dropout probability 0.3 on the attention weights."""',
                "    def forward(self, x):",
                "        return x",
                *FILLER,
            ]
        )
        + "\n"
    )
    r, sau = _retriever(tmp_path, "Attention dropout of 0.3", max_evidence_lines=12)
    bundle = r.retrieve(sau)
    assert bundle.n_lines <= 12
    assert bundle.contains("model.py", 33, 33)


def test_excerpts_name_the_lines_nothing_runs(tmp_path: Path) -> None:
    """The LLM judge is told which shown lines no entry point reaches, in the excerpt's heading
    ("all" for an excerpt nothing runs)."""
    (tmp_path / "losses.py").write_text(
        "def focal_loss(p, gamma=2.0):\n    return -((1 - p) ** gamma) * p\n\n\n"
        "def mse_loss(p):\n    return p**2\n"
    )
    (tmp_path / "train.py").write_text(
        "from losses import mse_loss\n\nif __name__ == '__main__':\n    mse_loss(0.5)\n"
    )
    (tmp_path / "focal_v0.py").write_text("def focal_loss(p, gamma=2.0):\n    return p * gamma\n")
    r, sau = _retriever(tmp_path, "The focal loss uses gamma = 2.0.")
    shown = {e.path: e for e in r.retrieve(sau).excerpts}
    assert shown["losses.py"].never_run == "1-2", shown["losses.py"]
    assert shown["train.py"].never_run == ""
    assert shown["focal_v0.py"].never_run == "all"  # a module nothing imports
    (_, user) = build_messages(sau, r.retrieve(sau), [])
    text = user["content"]
    assert "### losses.py (lines 1-6; never run: 1-2)" in text
    assert "### focal_v0.py (lines 1-2; never run: all)" in text


def test_every_judge_setting_is_in_the_config_schema_with_its_default() -> None:
    """A judge setting the docs name can be set in config.yaml (the schema admits it) and the
    schema's default is the code's; a partial ``fill_priors`` mapping validates, a typo does not."""
    schema = yaml.safe_load((SCHEMA_DIR / "config.schema.yaml").read_text())
    props = schema["$defs"]["llm_judge"]["properties"]
    for key, value in JUDGE_DEFAULTS.items():
        assert key in props, key
        if isinstance(value, dict):
            assert {k: v["default"] for k, v in props[key]["properties"].items()} == value
        else:
            assert props[key]["default"] == value, key
    ok = {
        "judges": ["llm:openai/x"],
        "judge_settings": {"llm:openai/x": {"fill_priors": {"config": 1}}},
    }
    validate(ok, "config.schema.yaml", "config.yaml")
    bad = {
        "judges": ["llm:openai/x"],
        "judge_settings": {"llm:openai/x": {"fill_priors": {"cfg": 1}}},
    }
    with pytest.raises(UserError):
        validate(bad, "config.schema.yaml", "config.yaml")
