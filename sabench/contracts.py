"""The data contracts shared by every stage (see docs/architecture.md, "Data contracts").

Column names here are relied upon by users' scripts: change them only on purpose.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import cache
from pathlib import Path
from typing import Any

DIMENSIONS = ("D1", "D2", "D3", "D4")
DIMENSION_NAMES = {
    "D1": "numerical values",
    "D2": "formulas and algorithms",
    "D3": "experimental protocol",
    "D4": "pipeline order",
}

VERDICTS = ("aligned", "partial", "drifted", "missing", "placeholder", "undetermined", "error")
FAILURE_MODES = (
    "implementation_mismatch",
    "placeholder",
    "omission",
    "cited_work_confusion",
    "external_knowledge_gap",
    "fabricated_result",
    "crashed_under_check",
    "check_dependent",
)
#: The code under test ended or hung its check (exit, a kill of the check's process, a hang).
CRASHED = "crashed_under_check"
#: The code under test returned under a check what it did not return in its own run.
CHECK_DEPENDENT = "check_dependent"
#: Verdicts whose score is fixed; ``partial`` keeps the judge's own score, ``error`` is excluded.
VERDICT_SCORES = {"aligned": 1.0, "drifted": 0.0, "missing": 0.0, "placeholder": 0.0}
#: The judge looked and cannot tell (its evidence decides neither way): the claim was judged
#: (coverage), but the verdict is no drift and no credit, so it has no score and is counted apart
#: from the means, like ``error`` (sabench.scoring).
UNDETERMINED = "undetermined"
#: Verdicts without a score: a judge that failed (``error``) or abstained (``undetermined``).
UNSCORED_VERDICTS = ("error", UNDETERMINED)
#: The most a claim gets from code its run never reached (a run that did not complete): it may say
#: what the paper says, and work under a check, but nothing shows that the submission's own
#: execution uses it. Full credit would let a run that breaks at its first call (or raises on
#: purpose) keep every claim after the break; none would score 0 a run that stops for want of a
#: dataset or a GPU. Both judges cap at it (judges/static/executed.py, judges/exec_judge.py).
UNREACHED_CAP = 0.25

#: ``untraced``: the run ended as ``ok`` but its record of what ran cannot be trusted (altered, cut
#: short, or a Python process that sent none: sabench.runtrace); judged like a run that did not
#: complete, every claim capped at ``UNREACHED_CAP`` (judges/run.py).
EXECUTION_STATUSES = (
    "ok",
    "untraced",
    "failed",
    "timeout",
    "oom",
    "output_limit",
    "no_reproduce_script",
    "sandbox_error",
)
#: What the agent did (scored). An infrastructure fault is no status of a record: the step leaves
#: ``faults/<stage>.json`` instead and the run stays incomplete (sabench.faults).
AGENT_STATUSES = ("replayed", "empty", "missing_source", "submitted", "limit", "error")

SAU_COLUMNS = (
    "paper",
    "sau_id",
    "dimension",
    "claim",
    "source",
    "weight",
    "origin",
    "category",
    "parent",
    "grounded",
    "check",
    "expected",
)

JUDGMENT_COLUMNS = (
    "agent",
    "paper",
    "seed",
    "sau_id",
    "dimension",
    "judge",
    "score",
    "verdict",
    "failure_mode",
    "evidence",
    "reasoning",
    "confidence",
    "decided_by",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "cached",
    "latency_s",
    "judge_fingerprint",
    "sau_set_hash",
    "submission_hash",
)


@dataclass(frozen=True)
class Evidence:
    """A span of a file in the submission (1-based, inclusive lines)."""

    file: str
    start: int
    end: int


@dataclass
class Judgment:
    """One judge's verdict on one SAU of one run."""

    sau_id: str
    dimension: str
    verdict: str
    score: float | None
    failure_mode: str | None = None
    evidence: list[Evidence] = field(default_factory=list)
    reasoning: str = ""
    #: how sure the judge is of the verdict, in [0, 1]; None where the judge does not say (the
    #: static judge's is calibrated against SA-Bench's verdicts: judges/static/confidence.py)
    confidence: float | None = None
    #: the judge that gave the verdict, where a judge delegates (cascade: static or llm:<model>)
    decided_by: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cached: bool = False
    latency_s: float = 0.0

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}")
        if self.failure_mode is not None and self.failure_mode not in FAILURE_MODES:
            raise ValueError(f"unknown failure mode {self.failure_mode!r}")
        if self.verdict in VERDICT_SCORES:
            self.score = VERDICT_SCORES[self.verdict]
        elif self.verdict in UNSCORED_VERDICTS:
            self.score = None
        elif self.score is None or not 0.0 < self.score < 1.0:
            raise ValueError(f"a partial verdict needs a score in (0, 1), got {self.score!r}")

    def row(self) -> dict[str, Any]:
        """The judgment as a table row (shallow: ``asdict``'s deep copies were a batch's
        largest cost after the judging)."""
        data = {name: getattr(self, name) for name in _field_names(type(self))}
        data["evidence"] = [{"file": e.file, "start": e.start, "end": e.end} for e in self.evidence]
        return data


@cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


def run_of_folder(run_dir: str | Path) -> tuple[str, str, str]:
    """(agent, paper, seed) of a run folder as the workflow lays it out,
    ``<results>/runs/<agent>/<paper>/<seed>``: the steps take them from there when not given."""
    parts = Path(run_dir).resolve().parts
    return parts[-3], parts[-2], parts[-1]


def paper_folder(run_dir: str | Path) -> Path | None:
    """The paper's folder beside a run folder: ``<results>/runs/<agent>/<paper>/<seed>`` ->
    ``<results>/papers/<paper>`` (its ``agent_view/`` and ``saus.parquet``)."""
    folder = Path(run_dir).resolve()
    return folder.parents[3] / "papers" / folder.parent.name if len(folder.parents) > 3 else None
