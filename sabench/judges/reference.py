"""The ``reference`` judge: another benchmark's own verdicts, imported for calibration.

It never reads the submission. Settings (``judge_settings.reference``, filled in by ``sabench_data``
and ``paperbench_data``):

``path``
    Template of the verdict file of one run, with ``{agent}``, ``{paper}`` and ``{seed}``.
``format``
    ``sabench`` (SA-Bench's ``reference/<config>/<paper>.json``: per dimension, claims with ``id``,
    ``score`` in {0, .25, .5, .75, 1}, ``evidence`` and ``judge_reasoning``), ``paperbench``
    (``grade.json``: ``node_results`` with leaf ``id``, ``score`` 0/1 and ``reasoning``) or ``auto``.

A row is emitted only for an SAU the file has a verdict for (an SAU without one is not judged, so a
PaperBench leaf its code-only grading skipped is pruned from the tree, as in PaperBench); a run
without a verdict file gets no rows. Score to verdict:

* 1 -> ``aligned``; strictly between 0 and 1 -> ``partial`` with that score;
* 0 -> ``placeholder``, ``drifted`` or ``missing``, read from the judge's own explanation: cue words
  of a stub (placeholder, stub, dummy, TODO, NotImplementedError) give ``placeholder``; cue words of
  a contradiction (instead of, rather than, mismatch, contradicts, does not match, differs, incorrect,
  wrong, deviates, inconsistent) give ``drifted`` (``implementation_mismatch``); anything else is
  ``missing`` (``omission``), the reading of a 0 that SA-Bench's scale gives when nothing is said.
  The score is 0 in all three cases, so every aggregate is the benchmark's own number.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from sabench.contracts import Evidence, Judgment
from sabench.errors import UserError, parse_error
from sabench.judges.registry import JudgeInputs

FORMATS = ("auto", "sabench", "paperbench")
_PLACEHOLDER = re.compile(
    r"\b(placeholders?|stub(?:s|bed)?|dummy|todo|not yet implemented|notimplementederror)\b", re.I
)
_MISMATCH = re.compile(
    r"\b(instead of|rather than|mismatch(?:es|ed)?|contradict\w*|does not match|doesn't match|"
    r"differs?|incorrect(?:ly)?|wrong|deviat\w*|inconsistent)\b",
    re.I,
)
_LINES = re.compile(r"^\s*L?(\d+)\s*(?:[-–:]\s*L?(\d+))?\s*$")
MAX_REASONING = 4000


def zero_verdict(reasoning: str) -> tuple[str, str]:
    """(verdict, failure mode) of a 0 score, from the judge's explanation (see the module doc)."""
    if _PLACEHOLDER.search(reasoning):
        return "placeholder", "placeholder"
    if _MISMATCH.search(reasoning):
        return "drifted", "implementation_mismatch"
    return "missing", "omission"


def verdict_of(score: float, reasoning: str) -> tuple[str, str | None]:
    if score >= 1.0:
        return "aligned", None
    if score <= 0.0:
        return zero_verdict(reasoning)
    return "partial", None


def _evidence(items: Any) -> list[Evidence]:
    out = []
    for item in items or []:
        if not isinstance(item, dict) or not item.get("file"):
            continue
        match = _LINES.match(str(item.get("lines") or ""))
        if not match:
            continue
        start = int(match.group(1))
        end = int(match.group(2) or start)
        if start >= 1 and end >= start:
            out.append(Evidence(str(item["file"]), start, end))
    return out


def _reality(text: str) -> str:
    """PaperBench's reasoning: what the judge found (its ``# Reality`` part), not what it expected."""
    match = re.search(r"#+\s*Reality\b(.*?)(?:#+\s*Score\b|$)", text, re.S | re.I)
    return match.group(1) if match else text


def _verdict(node: Any, path: Path, where: str, reasoning_key: str) -> dict[str, Any] | None:
    """One scored item of a verdict file, checked (None when it has no score)."""
    if not isinstance(node, dict) or "id" not in node:
        raise UserError(path, where, f"expected an object with id and score, not {node!r:.60}")
    if node.get("score") is None:
        return None
    score = node["score"]
    if isinstance(score, bool) or not isinstance(score, int | float):
        raise UserError(path, f"{where}.score", f"expected a number, not {score!r:.60}")
    reasoning = str(node.get(reasoning_key) or "")
    return {"score": float(score), "reasoning": reasoning}


def read_verdicts(path: Path, fmt: str = "auto") -> dict[str, dict[str, Any]]:
    """SAU id -> {score, reasoning, evidence} from one verdict file."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise parse_error(path, exc) from None
    except UnicodeDecodeError:
        raise UserError(path, None, "not UTF-8 text") from None
    if not isinstance(data, dict):
        raise UserError(path, None, "expected an object (node_results, or dimensions with claims)")
    if fmt == "auto":
        fmt = "paperbench" if "node_results" in data else "sabench"
    out: dict[str, dict[str, Any]] = {}
    if fmt == "paperbench":
        nodes = data.get("node_results") or []
        if not isinstance(nodes, list):
            raise UserError(path, "node_results", "expected a list")
        for i, node in enumerate(nodes):
            found = _verdict(node, path, f"node_results[{i}]", "reasoning")
            if found is not None:
                out[str(node["id"])] = {
                    **found,
                    "cue": _reality(found["reasoning"]),
                    "evidence": [],
                }
        return out
    dimensions = data.get("dimensions") or {}
    if not isinstance(dimensions, dict):
        raise UserError(path, "dimensions", "expected an object of dimensions")
    for dim, block in dimensions.items():
        claims = (block.get("claims") or []) if isinstance(block, dict) else None
        if not isinstance(claims, list):
            raise UserError(path, f"dimensions.{dim}", "expected an object with a list of claims")
        for i, claim in enumerate(claims):
            found = _verdict(claim, path, f"dimensions.{dim}.claims[{i}]", "judge_reasoning")
            if found is not None:
                out[str(claim["id"])] = {
                    **found,
                    "cue": found["reasoning"],
                    "evidence": _evidence(claim.get("evidence")),
                }
    return out


def verdict_path(settings: dict[str, Any], run: dict[str, Any]) -> Path:
    template = str(settings["path"])
    return Path(
        template.format(
            agent=run.get("agent", ""), paper=run.get("paper", ""), seed=run.get("seed", "0")
        )
    )


def judge_reference(
    settings: dict[str, Any], saus: list[dict[str, Any]], run: dict[str, Any]
) -> list[Judgment]:
    """One Judgment per SAU of ``saus`` that the run's verdict file scores; none without a file."""
    fmt = settings.get("format", "auto")
    if fmt not in FORMATS:
        raise ValueError(f"judge reference: format {fmt!r} is not one of {', '.join(FORMATS)}")
    path = verdict_path(settings, run)
    if not path.is_file():
        return []
    verdicts = read_verdicts(path, fmt)
    out = []
    for sau in saus:
        found = verdicts.get(str(sau["sau_id"]))
        if found is None:
            continue
        score = min(max(found["score"], 0.0), 1.0)
        verdict, failure = verdict_of(score, found["cue"])
        out.append(
            Judgment(
                sau_id=str(sau["sau_id"]),
                dimension=str(sau["dimension"]),
                verdict=verdict,
                score=score,
                failure_mode=failure,
                evidence=found["evidence"],
                reasoning=found["reasoning"][:MAX_REASONING],
            )
        )
    return out


def judge(inputs: JudgeInputs) -> list[Judgment]:
    """The registry's entry point: the verdicts of the run named by its agent record."""
    return judge_reference(inputs.settings, inputs.saus, inputs.run or {})
