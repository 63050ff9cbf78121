"""sabench.judges.cost: what a measurement's LLM judge would send, counted before anything is sent."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from sabench.judges.cost import estimate_usd, parse_judges, prompt_tokens, refusal

SAUS = [
    {
        "paper": "p",
        "sau_id": "p-D1-001",
        "dimension": "D1",
        "claim": "The tokenizer's end-of-text token ends every document.",
        "source": "",
    }
]


def test_prompt_tokens_count_special_token_text_as_text(tmp_path: Path) -> None:
    """Language-model code names the tokenizer's special tokens; counting must not refuse them."""
    code = 'def tokenize(doc):\n    eot = "{}"  # the end-of-text token\n    return doc + eot\n'
    special_dir, plain = tmp_path / "special", tmp_path / "plain"
    special_dir.mkdir()
    plain.mkdir()
    (special_dir / "data.py").write_text(code.format("<|endoftext|>"))
    (plain / "data.py").write_text(code.format("endoftext"))
    (special,) = prompt_tokens(special_dir, SAUS, {})
    (ordinary,) = prompt_tokens(plain, SAUS, {})
    assert special > ordinary > 100  # the shown line is there, its markers counted as text


def test_estimate_refusal_and_judges() -> None:
    priced = {"prices": {"input_per_mtok": 2.0, "output_per_mtok": 10.0}}
    # 10 calls of 1M prompt tokens in all, 200 reply tokens each: $2 + 2000 * $10 / 1M
    assert estimate_usd("llm:openai/some-model", priced, 10, 1_000_000) == pytest.approx(2.02)
    assert math.isnan(estimate_usd("llm:nobody/unpriced-model-x", {}, 10, 1000))
    assert refusal(1.0, 2.0) is None
    assert "over --max-usd $0.5" in str(refusal(1.0, 0.5))
    assert "price is unknown" in str(refusal(math.nan, 5.0))
    assert parse_judges([], {}) == [("static", {})]
    assert parse_judges(["static,llm:a/b", "static"], {"llm:a/b": {"samples": 3}}) == [
        ("static", {}),
        ("llm:a/b", {"samples": 3}),
    ]
    with pytest.raises(ValueError, match="'exec' runs code: no sandbox here"):
        parse_judges(["exec"], {}, cannot_run="no sandbox here")
    assert parse_judges(["exec"], {}) == [("exec", {})]
    with pytest.raises(ValueError, match="not a judge that reads code"):
        parse_judges(["reference"], {})
