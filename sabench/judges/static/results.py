"""Claims with expected results, judged from the execution record's metrics; a result the code
writes as a literal (:mod:`sabench.judges.fabrication`), or one that stayed the same when the run
was re-seeded while its computation moved (:mod:`sabench.reseed`), is ``fabricated_result`` and
scores 0."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sabench.index import squash
from sabench.judges.fabrication import FABRICATED, matching, reasoning
from sabench.judges.static.claims import Claim
from sabench.judges.static.outcome import Outcome
from sabench.reseed import stayed_of, stayed_reasoning

if TYPE_CHECKING:
    from sabench.judges.static.rules import ClaimJudge


def judge_results(
    judge: ClaimJudge, claim: Claim, ev: list[tuple[int, int, int]]
) -> Outcome | None:
    writes = judge.literal_writes
    fabricated = [f for exp in claim.expected for f in matching(writes, str(exp["metric"]))]
    if fabricated:  # the number was typed in, not computed: whatever it is, it scores 0
        fids = [(judge.index.file_id(f.file), f.line) for f in fabricated]
        sites = [judge.loc(fid, line) for fid, line in fids if fid is not None]
        return Outcome("drifted", 0.0, FABRICATED, reasoning(fabricated), sites or ev)
    if judge.execution is None:  # not executed: the other rules judge the claim
        return None
    ex = judge.execution
    stayed = stayed_of((str(exp["metric"]) for exp in claim.expected), ex)
    if stayed:  # the same number whatever the run computed: not computed by it
        return Outcome("drifted", 0.0, FABRICATED, f"{stayed_reasoning(stayed)}.", ev)
    metrics = _flatten(ex.get("metrics") or {})
    status = ex.get("status")
    lookup = {squash(k): v for k, v in metrics.items()}
    bad, ok, absent = [], [], []
    for exp in claim.expected:
        key = str(exp["metric"])
        val = metrics.get(key, lookup.get(squash(key)))
        if not isinstance(val, int | float) or isinstance(val, bool):
            absent.append(key)
            continue
        target = float(exp["value"])
        tol = exp.get("tolerance", 0.0)
        if isinstance(tol, str) and tol.strip().endswith("%"):
            allowed = abs(target) * float(tol.strip()[:-1]) / 100.0
        else:
            allowed = float(tol or 0.0)
        (ok if abs(float(val) - target) <= allowed + 1e-12 else bad).append(
            f"{key} = {val:g} (paper {target:g})"
        )
    if absent:
        why = f"execution {status}" if status and status != "ok" else "no such result"
        return Outcome(
            "missing", 0.0, "omission", f"{why}: {', '.join(absent[:3])} not reported.", ev
        )
    if bad:
        return Outcome(
            "drifted",
            0.0,
            "implementation_mismatch",
            f"Results differ from the paper: {'; '.join(bad[:3])}.",
            ev,
        )
    return Outcome("aligned", 1.0, None, f"Results match: {'; '.join(ok[:3])}.", ev)


def _flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(d, dict):
        for k, v in d.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            if isinstance(v, dict):
                out.update(_flatten(v, key))
            else:
                out[key] = v
    return out
