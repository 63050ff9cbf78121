"""A rule's verdict, shared by the rules and the entry point."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Outcome:
    """A rule's verdict before it becomes a Judgment."""

    verdict: str
    score: float
    failure_mode: str | None
    reasoning: str
    evidence: list[tuple[int, int, int]]
    support: float = -1.0  # the continuous support behind a coverage-based verdict
    features: dict[str, float] = field(default_factory=dict)
    #: how sure the judge is of the verdict, in [0, 1] (:mod:`.confidence`; 0 until rated)
    confidence: float = 0.0
