"""LLM SAU extraction against the scripted server: chunks, grounding (fuzzy), cited work apart,
duplicates merged, ids and origin, reruns from the cache, failures."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from openai_server import ScriptedServer, request_text

from sabench.extract import chunk_paper, extract_paper, extract_saus
from sabench.grounding import locate, normalize
from sabench.llm import LLMError

REPO = Path(__file__).resolve().parents[1]
PAPER_DIR = REPO / "resources" / "papers" / "ridge-gd"
TEXT = (PAPER_DIR / "paper.md").read_text()
MODEL = "llm:openai/scripted"


def unit(claim: str, quote: str, attribution: str = "own") -> dict[str, str]:
    return {"claim": claim, "quote": quote, "attribution": attribution}


#: What the scripted model proposes per dimension (each returned for the chunk holding its quote).
UNITS: dict[str, list[dict[str, str]]] = {
    "D1": [
        unit(
            "Gradient descent uses a learning rate of 0.05.",
            "Learning rate 0.05, 500 epochs of full-batch gradient descent",
        ),
        # the same claim again, in other words: merged
        unit(
            "The learning rate of gradient descent is 0.05.",
            "Learning rate 0.05, 500 epochs of full-batch gradient descent",
        ),
        unit(
            "`linear-gauss` has an intercept of 3.0 and noise with standard deviation 0.5.",
            "the intercept is 3.0 and the targets carry Gaussian noise with a standard "
            "deviation of 0.5",
        ),
        # a misquoted number: not grounded
        unit(
            "Gradient descent runs for 50 epochs.",
            "Learning rate 0.5, 50 epochs of full-batch gradient descent",
        ),
        # a true quote, but the claim's number is not the paper's: not grounded either
        unit(
            "`sine-noisy` has 3000 samples.",
            "`sine-noisy` has 300 samples of a scalar input `x` drawn uniformly from [-3, 3]",
        ),
    ],
    "D2": [
        unit(
            "The objective is `mean((X @ w + b - y) ** 2) + lam * sum(w ** 2)`.",
            "loss = mean((X @ w + b - y) ** 2) + lam * sum(w ** 2)",
        ),
        # prior work the paper cites: kept apart
        unit(
            "The stopping time of gradient descent corresponds to an equivalent ridge penalty.",
            "the continuous-time analysis of Ali et al. even relates the stopping time to an "
            "equivalent ridge penalty",
            "cited",
        ),
    ],
    "D3": [
        unit(
            "The `mean_predictor` baseline predicts the training mean for every test sample.",
            "The `mean_predictor` baseline ignores the features and predicts the mean of the "
            "training targets",
        ),
        # invented: no such text
        unit("Results are averaged over 10 random seeds.", "averaged over ten random seeds"),
    ],
    "D4": [
        unit(
            "Standardisation statistics come from the training split only: `split` → "
            "`standardise`.",
            # one word differs from the paper (data/split): a fuzzy match, still grounded
            "using the mean and standard deviation of the training data only; the same statistics "
            "are applied to the test split",
        ),
    ],
}


def extraction_responder(request: dict[str, Any]) -> dict[str, Any] | None:
    """Answers extraction prompts (None for others): the units whose quote is in the chunk."""
    text = request_text(request)
    m = re.search(r"^Dimension (D\d),", text, re.M)
    if not m or "<<<" not in text:
        return None
    chunk = normalize(text.split("<<<", 1)[1].split(">>>", 1)[0])
    first = "Part 1 of" in text
    out = []
    for u in UNITS[m.group(1)]:
        in_paper = locate(u["quote"], normalize(TEXT))[1] >= 0
        # a real quote comes with the chunk that holds it, an invented one with the first
        if (locate(u["quote"], chunk)[1] >= 0) if in_paper else first:
            out.append(u)
    return {"json": {"units": out}}


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer([extraction_responder]) as s:
        yield s


def settings(server: ScriptedServer, tmp_path: Path) -> dict[str, Any]:
    return {
        "api_base": server.url,
        "cache_dir": str(tmp_path / "cache"),
        "backoff_s": 0.01,
        "max_retries": 1,
    }


def test_chunks_split_at_headings() -> None:
    chunks = chunk_paper(TEXT, 2000)
    assert len(chunks) == 4 and all(len(c.text) <= 2000 for c in chunks)
    assert [c.heading for c in chunks][1:] == ["2 Method", "3 Experimental setup", "4 Results"]
    assert "".join(c.text for c in chunks).replace("\n", "") == TEXT.replace("\n", "")
    one = chunk_paper(TEXT, 100_000)
    assert len(one) == 1
    long = chunk_paper("para one. " * 500, 2000)
    assert all(len(c.text) <= 2000 for c in long) and len(long) >= 3


def test_grounding() -> None:
    norm = normalize(TEXT)
    assert locate("Learning rate 0.05, 500 epochs", norm)[0] == 100
    score, pos = locate("predicts the mean of the training target for every test samples", norm)
    assert 90 <= score < 100 and pos > 0
    assert locate("Learning rate 0.5, 500 epochs of full-batch gradient descent", norm)[1] < 0
    assert locate("we use a batch size of 32 for every run", norm)[1] < 0
    assert locate("seed 0", norm)[1] >= 0 and locate("seed 7", norm)[1] < 0


def test_extraction_grounds_separates_and_merges(server: ScriptedServer, tmp_path: Path) -> None:
    options = {"chunk_chars": 2000}
    rows, report = extract_saus("ridge-gd", TEXT, MODEL, settings(server, tmp_path), options)
    assert server.count == 4 * 4  # chunks x dimensions
    claims = {r["sau_id"]: r for r in rows}
    assert list(claims) == [
        "ridge-gd-D1-001",
        "ridge-gd-D1-002",
        "ridge-gd-D2-001",
        "ridge-gd-D3-001",
        "ridge-gd-D4-001",
    ]
    # ids follow the quotes' order in the paper: the noise (setup) before the hyperparameters
    assert "intercept of 3.0" in claims["ridge-gd-D1-001"]["claim"]
    assert "learning rate of 0.05" in claims["ridge-gd-D1-002"]["claim"]
    for r in rows:
        assert r["origin"] == "llm:openai/scripted" and r["paper"] == "ridge-gd"
        assert r["grounded"] is True and r["category"] == "own work" and r["weight"] == 1.0
        assert r["source"]  # the quote
    assert report.merged == 1
    assert len(report.ungrounded) == 3 and len(report.cited) == 1
    assert any("50 epochs" in u for u in report.ungrounded)
    assert any("3000 samples" in u for u in report.ungrounded)
    assert any("stopping time" in c for c in report.cited)
    # kept and flagged instead of dropped
    server.reset()
    rows2, _ = extract_saus(
        "ridge-gd",
        TEXT,
        MODEL,
        settings(server, tmp_path),
        {**options, "keep_ungrounded": True, "keep_cited": True},
    )
    assert server.count == 0, "same prompts: answered from the cache"
    flagged = [r for r in rows2 if r["grounded"] is False]
    assert len(flagged) == 3
    assert [r["category"] for r in rows2 if r["category"] == "cited work"] == ["cited work"]


def test_extract_paper_writes_the_sau_table(server: ScriptedServer, tmp_path: Path) -> None:
    out = tmp_path / "saus.parquet"
    extract_paper(PAPER_DIR, PAPER_DIR / "paper.md", out, MODEL, settings(server, tmp_path))
    frame = pd.read_parquet(out)
    assert len(frame) == 5 and frame["grounded"].all()
    assert set(frame["dimension"]) == {"D1", "D2", "D3", "D4"}
    assert (frame["origin"] == "llm:openai/scripted").all()
    n = server.count
    extract_paper(
        PAPER_DIR, PAPER_DIR / "paper.md", tmp_path / "b.parquet", MODEL, settings(server, tmp_path)
    )
    assert server.count == n
    pd.testing.assert_frame_equal(frame, pd.read_parquet(tmp_path / "b.parquet"))


def test_a_failed_call_fails_the_extraction(server: ScriptedServer, tmp_path: Path) -> None:
    server.set_script(
        [{"match": "Dimension D3,", "replies": [{"status": 500}]}, extraction_responder]
    )
    with pytest.raises(LLMError):
        extract_saus("ridge-gd", TEXT, MODEL, settings(server, tmp_path))
    # the calls that succeeded are cached: the retry asks only for what failed
    server.set_script([extraction_responder])
    server.reset()
    rows, _ = extract_saus("ridge-gd", TEXT, MODEL, settings(server, tmp_path))
    assert server.count == 1 and rows
    server.set_script(
        [{"match": "Dimension D2,", "replies": [{"content": "nonsense"}]}, extraction_responder]
    )
    with pytest.raises(RuntimeError, match="invalid structured output"):
        extract_saus("ridge-gd", TEXT, MODEL, settings(server, tmp_path / "fresh"))
