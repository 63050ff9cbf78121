"""Mutants of one submission: every drift type for every eligible SAU."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sabench.drift.mutants import DRIFT_TYPES, Mutant, Submission
from sabench.drift.normalisation import normalisation_mutant
from sabench.drift.operators import operator_mutant
from sabench.drift.removal import removal_mutant
from sabench.drift.split import split_mutant
from sabench.drift.stub import stub_mutant
from sabench.drift.swap import swap_mutant
from sabench.drift.values import value_mutant


def make_mutants(
    submission: Path | Submission,
    saus: list[dict[str, Any]],
    *,
    eligible: Iterable[str] | None = None,
    cited: dict[str, list[tuple[str, int, int]]] | None = None,
    max_per_type: int | None = None,
    types: Iterable[str] = tuple(DRIFT_TYPES),
) -> list[Mutant]:
    """Mutants for the SAUs of ``eligible`` (default all), at most ``max_per_type`` per drift type
    (SAUs in id order). ``cited``: SAU id -> lines another judge cited for it (file, start, end)."""
    from sabench.judges.static import analyze_claims

    sub = submission if isinstance(submission, Submission) else Submission(Path(submission))
    if not sub.texts:
        return []
    wanted = None if eligible is None else set(eligible)
    cited = cited or {}
    claims = {c.sau_id: c for c in analyze_claims(saus)}
    counts: dict[str, int] = {}
    out: list[Mutant] = []
    types = [t for t in DRIFT_TYPES if t in set(types)]
    for sau in sorted(saus, key=lambda s: str(s["sau_id"])):
        if wanted is not None and str(sau["sau_id"]) not in wanted:
            continue
        claim = claims[str(sau["sau_id"])]
        lines = cited.get(str(sau["sau_id"]), [])
        for kind in types:
            dim = DRIFT_TYPES[kind]
            if dim is not None and sau["dimension"] != dim:
                continue
            if max_per_type is not None and counts.get(kind, 0) >= max_per_type:
                continue
            try:
                if kind == "value":
                    mutant = value_mutant(sub, sau, claim, lines)
                elif kind == "operator":
                    mutant = operator_mutant(sub, sau, claim, lines)
                elif kind == "removal":
                    mutant = removal_mutant(sub, sau, claim)
                elif kind == "swap":
                    mutant = swap_mutant(sub, sau, claim, lines)
                elif kind == "normalisation":
                    mutant = normalisation_mutant(sub, sau, claim, lines)
                elif kind == "split":
                    mutant = split_mutant(sub, sau, claim, lines)
                else:
                    mutant = stub_mutant(sub, sau, claim, lines)
            except (ValueError, IndexError, KeyError, RecursionError, AssertionError):
                mutant = None
            if mutant is not None:
                out.append(mutant)
                counts[kind] = counts.get(kind, 0) + 1
    return out
