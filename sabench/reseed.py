"""Results the run computed, decided by behaviour (docs/architecture.md, "The execution trace").

A run that completed is executed once more on a fresh copy with every seeded random generator's
seed salted (the trace program's ``reseed`` setting, ``sandbox/trace_site.py``). Where the
computation the run recorded moved (a recorded call of a submission function got other arguments
or gave another result) while a reported number stayed exactly the same, that number was not
computed from that computation: it is a constant, decoded, cached or overwritten. A run whose
computation did not move (no randomness, or none the run seeds) is inconclusive and says so.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

#: The salt added to every seed of the re-seeded run (any constant does; a large prime).
SALT = 1_000_003

COMPUTED, FABRICATED, INCONCLUSIVE = "computed", "fabricated", "inconclusive"


def _varying(value: Any) -> bool:
    """A reported number that randomness can move: a finite float that is not a whole number
    (counts, flags and saturated scores such as an accuracy of 1.0 stay put honestly)."""
    return isinstance(value, float) and math.isfinite(value) and not value.is_integer()


def _calls_by_site(calls: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], list[str]]:
    """Each function's recorded calls as sorted encodings: processes (pool workers) connect in any
    order, so calls are compared as a multiset per function, never by position."""
    out: dict[tuple[str, str], list[str]] = {}
    for call in calls:
        site = (str(call.get("module")), str(call.get("function")))
        data = {k: call.get(k) for k in ("args", "kwargs", "result")}
        out.setdefault(site, []).append(json.dumps(data, sort_keys=True, default=str))
    return {site: sorted(found) for site, found in out.items()}


def compare(
    metrics: Mapping[str, Any],
    reseeded_metrics: Mapping[str, Any],
    calls: Iterable[Mapping[str, Any]],
    reseeded_calls: Iterable[Mapping[str, Any]],
) -> dict[str, Any]:
    """The execution record's ``reseed`` entry: ``verdict`` (computed | fabricated |
    inconclusive), ``computation_moved``, and the reported numbers that ``stayed`` and ``moved``.
    ``fabricated``: the computation moved and not one reported number that randomness can move
    did; ``computed``: some did (the ones that stayed are listed, each suspect on its own)."""
    first, second = _calls_by_site(calls), _calls_by_site(reseeded_calls)
    moved_calls = [f"{m}.{f}" for (m, f), data in first.items() if second.get((m, f), data) != data]
    keys = sorted(k for k, v in metrics.items() if _varying(v) and k in reseeded_metrics)
    stayed = [k for k in keys if reseeded_metrics[k] == metrics[k]]
    moved = [k for k in keys if k not in stayed]
    if not moved_calls or not keys:
        verdict = INCONCLUSIVE
    elif moved:
        verdict = COMPUTED
    else:
        verdict = FABRICATED
    return {
        "verdict": verdict,
        "computation_moved": sorted(moved_calls)[:20],
        "stayed": stayed,
        "moved": moved,
    }


def stayed_of(metrics: Iterable[str], execution: Mapping[str, Any] | None) -> list[str]:
    """Of the reported ``metrics`` (dotted names), those that stayed the same when the run was
    re-seeded while its computation moved: numbers the run reported but did not compute. An
    honest number can stay (a stratified split's majority-class accuracy): docs/checks.md says so."""
    entry = (execution or {}).get("reseed") or {}
    if not entry.get("computation_moved"):
        return []
    stayed = set(entry.get("stayed") or [])
    return [m for m in metrics if m in stayed]


def stayed_reasoning(stayed: list[str]) -> str:
    return (
        f"Fabricated result: {', '.join(stayed[:3])} stayed the same when the run was "
        "re-seeded, while the computation it reports moved (execution.json reseed)"
    )
