"""D3 protocol: the datasets, baselines and metrics a claim names must appear in code or config."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sabench.judges.static.claims import Claim
from sabench.judges.static.outcome import Outcome
from sabench.judges.static.params import RULES

if TYPE_CHECKING:
    from sabench.judges.static.rules import ClaimJudge


def judge_protocol(
    judge: ClaimJudge, claim: Claim, cov: float, ev: list[tuple[int, int, int]]
) -> Outcome:
    ents = claim.entities
    if not ents:
        return judge.by_support(cov, ev, "Weighted term coverage")
    found, missing = [], []
    evidence = list(ev)
    for e in ents:
        p = judge.ctx.key(e)
        if p.credit > 0:
            found.append((e, p.credit))
            site = next((s for s in p.sites if s[0] in judge.ctx.code_fids), None)
            if site:
                evidence.append(judge.loc(*site))
        else:
            missing.append(e)
    frac = sum(c for _, c in found) / len(ents)
    judge.features.update(ent_frac=frac, n_ent=len(ents))
    s = RULES["entity_share"] * frac + (1 - RULES["entity_share"]) * cov
    what = "datasets/baselines/metrics" if claim.dimension == "D3" else "items"
    msg = f"{len(found)}/{len(ents)} named {what} found in code"
    extra = f"Absent: {', '.join(missing[:5])}." if missing else ""
    return judge.by_support(s, list(dict.fromkeys(evidence))[:4], msg, extra)
