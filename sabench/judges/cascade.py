"""The ``cascade:<model>`` judge: the static judge where it is sure, ``llm:<model>`` for the rest.

The static judge costs nothing and says how sure it is of each verdict (a confidence calibrated
against SA-Bench's verdicts, :mod:`sabench.judges.static.confidence`). Its verdicts whose
confidence reaches ``threshold`` stand; the other SAUs of the run go to the LLM judge with the
cascade's model and LLM settings, which asks about those alone (each with the prompt it would send
judging the whole run), so a run costs what the uncertain SAUs cost. Every row says which judge decided (``decided_by``: ``static`` or ``llm:<model>``); a
static row keeps its confidence, an LLM row has none (the model's verdicts are not calibrated) and
its reasoning says what the static judge thought. The spending goes through the LLM judge's
client, so the grid's ``llm_budget_usd`` and a benchmark's ``--max-usd`` cap it as they cap an
``llm:<model>`` judge, and the answers share that judge's cache (a grid with both pays once). A
fault of the LLM part (the provider failing, a rate limit) is a fault of the run, raised as the
LLM judge raises it, never a verdict: the static verdicts of a run are not kept without the rest.

Settings: ``threshold`` (default :data:`DEFAULT_THRESHOLD`) and those of an ``llm:<model>`` judge
(config/schema/config.schema.yaml, ``$defs.cascade_judge``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from sabench.contracts import Judgment
from sabench.judges.registry import JudgeInputs

#: Static verdicts at or above this confidence stand (docs/calibration.md has the curve).
DEFAULT_THRESHOLD = 0.5
#: The cascade's own settings; the rest go to its LLM judge.
CASCADE_DEFAULTS: dict[str, Any] = {"threshold": DEFAULT_THRESHOLD}
STATIC = "static"


def llm_name(name: str, settings: dict[str, Any] | None = None) -> str:
    """The LLM judge a cascade asks: ``cascade:openai/gpt-4o`` -> ``llm:openai/gpt-4o``."""
    model = name.split(":", 1)[1] if ":" in name else (settings or {}).get("model", "")
    return f"llm:{model}"


def split_settings(name: str, settings: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    """(threshold, the LLM judge's settings); a threshold outside [0, 1] is the user's error."""
    from sabench.errors import UserError

    value = settings.get("threshold", DEFAULT_THRESHOLD)
    try:
        threshold = float(value)
    except (TypeError, ValueError):
        threshold = math.nan
    if isinstance(value, bool) or not 0.0 <= threshold <= 1.0:
        raise UserError(
            None, f"judge_settings[{name}].threshold", f"{value!r} is not a number in [0, 1]"
        )
    return threshold, {k: v for k, v in settings.items() if k not in CASCADE_DEFAULTS}


def confident(judgment: Judgment, threshold: float) -> bool:
    """Whether a static verdict stands: a verdict (not ``error``) at or above the threshold."""
    c = judgment.confidence
    return judgment.verdict != "error" and c is not None and c >= threshold


def judge_cascade(
    name: str,
    settings: dict[str, Any],
    submission: Path | str,
    saus: list[dict[str, Any]],
    execution: dict[str, Any] | None = None,
    *,
    log_path: Path | None = None,
    client: Any = None,
) -> list[Judgment]:
    """Judge every SAU of one run: the static verdicts at or above ``threshold``, the LLM judge's
    for the rest (one judgment per SAU, in the SAUs' order)."""
    from sabench.judges.llm_judge import judge_llm
    from sabench.judges.static import judge_static

    threshold, llm_settings = split_settings(name, settings)
    llm = llm_name(name, settings)
    static = judge_static(submission, saus, execution)
    for j in static:
        j.decided_by = STATIC
    sent = [i for i, j in enumerate(static) if not confident(j, threshold)]
    if not sent:
        return static
    answers = judge_llm(
        llm,
        llm_settings,
        submission,
        saus,  # the run's claims: each prompt is the one the llm judge alone would send
        execution,
        log_path=log_path,
        client=client,
        only={static[i].sau_id for i in sent},
    )
    out = list(static)
    for i, answer in zip(sent, answers, strict=True):
        before = static[i]
        answer.decided_by = llm
        answer.confidence = None
        sure = "no confidence" if before.confidence is None else f"{before.confidence:.2f}"
        answer.reasoning = (
            f"{answer.reasoning} [static: {before.verdict}, confidence {sure} < {threshold:g}]"
        ).strip()
        out[i] = answer
    return out


def judge(inputs: JudgeInputs) -> list[Judgment]:
    """The registry's entry point: as the llm judge, the run's execution log for result claims."""
    return judge_cascade(
        inputs.name,
        inputs.settings,
        inputs.submission,
        inputs.saus,
        inputs.execution,
        log_path=inputs.folder / "execution.log",
    )
