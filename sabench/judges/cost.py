"""What a measurement's LLM judges would send, before anything is sent: the judges asked for on a
benchmark's command line, prompt tokens, calls, an estimated price, and the cap on spending.

The calibration benchmarks (``benchmarks/drift_injection.py``, ``benchmarks/sabench_agreement.py``)
take any judge; for an LLM judge they print ``cost: judge=<name> calls=N est_usd=X`` and refuse to
start above ``--max-usd``, which then caps the spending as the grid's LLM budget does
(:mod:`sabench.llm.budget`).
"""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path
from typing import Any

#: Completion tokens assumed per LLM judge call (a JudgeReply: three sentences, a few references).
REPLY_TOKENS = 200


def add_judge_options(ap: argparse.ArgumentParser, kinds: str) -> None:
    """``--judge`` (``kinds``: the judges the benchmark takes, for the help), ``--settings`` and
    ``--max-usd``."""
    from sabench.steps import json_object

    ap.add_argument(
        "--judge",
        action="append",
        default=[],
        help=f"a judge (repeatable or comma-separated: {kinds}; default static)",
    )
    ap.add_argument(
        "--settings", type=json_object, default={}, help="judge settings by judge name (JSON)"
    )
    ap.add_argument(
        "--max-usd", type=float, help="refuse to start above this estimated LLM cost; cap spending"
    )


def parse_judges(
    values: list[str], settings: dict[str, Any], *, cannot_run: str | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """``--judge`` values (repeatable or comma-separated; default static) with their ``--settings``;
    a ValueError names a judge that does not read code, or one that runs code where nothing can be
    run (``cannot_run`` says why)."""
    from sabench.judges.registry import available_judges, judge_kind

    names = [n.strip() for v in values for n in v.split(",") if n.strip()]
    judges = []
    for name in dict.fromkeys(names or ["static"]):
        kind = judge_kind(name)
        if kind is None or not kind.reads_code:
            raise ValueError(
                f"--judge {name!r}: not a judge that reads code (one of {available_judges()}; "
                "not reference)"
            )
        if kind.runs_code and cannot_run:
            raise ValueError(f"--judge {name!r} runs code: {cannot_run}")
        judges.append((name, dict(settings.get(name) or {})))
    return judges


def is_llm(name: str) -> bool:
    from sabench.judges.registry import judge_kind

    kind = judge_kind(name)
    return bool(kind and kind.model)


def encoder() -> Any:
    """tiktoken's o200k_base from litellm's bundled copy (no download)."""
    from sabench.llm.litellm_setup import get_litellm

    get_litellm()  # sets TIKTOKEN_CACHE_DIR to the bundled encodings
    import tiktoken

    return tiktoken.get_encoding("o200k_base")


def prompt_tokens(
    sub: Path, saus: list[dict[str, Any]], settings: dict[str, Any], index: Any = None
) -> list[int]:
    """Tokens of each SAU's prompt as the llm judge builds it for this submission, without an
    execution record (an executed run adds its few lines); empty when the judge would send
    nothing. ``index``: the submission's code index, when the caller has built it."""
    from sabench.index import build_index
    from sabench.judges.fabrication import fabricated_by_sau
    from sabench.judges.llm_judge import JUDGE_DEFAULTS, Retriever, build_messages, repo_overview

    opts = {k: settings.get(k, v) for k, v in JUDGE_DEFAULTS.items()}
    index = build_index(sub) if index is None else index
    retriever = Retriever(index, saus, None, **opts)
    if not retriever.ctx.has_code:
        return []
    overview = repo_overview(index, int(opts["max_files"]))
    fabricated = fabricated_by_sau(sub, saus)
    enc = encoder()
    out = []
    for sau in saus:
        facts = [f.describe() for f in fabricated.get(str(sau.get("sau_id") or ""), [])]
        messages = build_messages(sau, retriever.retrieve(sau), overview, None, facts)
        # encode_ordinary: code may say "<|endoftext|>", which is text here, not a special token
        out.append(sum(len(enc.encode_ordinary(m["content"])) for m in messages))
    return out


def samples(settings: dict[str, Any]) -> int:
    """How many times the judge asks about each SAU (its ``samples`` setting)."""
    return max(1, int(settings.get("samples", 1)))


def estimate_usd(name: str, settings: dict[str, Any], calls: int, tokens: int) -> float:
    """Dollars for ``calls`` requests of ``tokens`` prompt tokens in all; NaN when unpriced."""
    from sabench.llm import LLMSettings
    from sabench.llm.pricing import call_cost

    endpoint = {k: v for k, v in settings.items() if k in LLMSettings.__dataclass_fields__}
    llm = LLMSettings.from_dict(endpoint, model=name.split(":", 1)[1])
    cost, known = call_cost(llm.model, tokens, calls * REPLY_TOKENS, llm.prices)
    return cost if known else math.nan


def refusal(total_usd: float, max_usd: float) -> str | None:
    """Why a measurement estimated at ``total_usd`` must not start under ``--max-usd``; None when
    it may."""
    if math.isnan(total_usd):
        return (
            "the judge model's price is unknown: give "
            '--settings \'{"llm:<model>": {"prices": {...}}}\' to use --max-usd'
        )
    if total_usd > max_usd:
        return f"estimated LLM cost ${total_usd:.4f} is over --max-usd ${max_usd:g}: nothing sent"
    return None


def approve(
    estimates: list[tuple[str, dict[str, Any], int, int]], max_usd: float | None, ledger_dir: Path
) -> str | None:
    """Print ``cost: judge=<name> calls=N est_usd=X`` for each (judge, settings, calls, prompt
    tokens); under ``max_usd`` make it the LLM budget of this process and the workers it starts,
    read as every LLM job of the grid reads its budget (:mod:`sabench.llm.budget`). Returns why the
    measurement must not start, or None."""
    from sabench.llm.budget import BUDGET_ENV, LEDGER_ENV

    total = 0.0
    for name, settings, calls, tokens in estimates:
        usd = estimate_usd(name, settings, calls, tokens)
        print(f"cost: judge={name} calls={calls} est_usd={usd:.4f}", flush=True)
        total += usd
    if max_usd is None:
        return None
    why = refusal(total, max_usd)
    if why is None:
        os.environ[BUDGET_ENV] = str(max_usd)
        os.environ[LEDGER_ENV] = str(Path(ledger_dir) / "llm_spend.jsonl")
    return why
