"""The offline ``static`` judge: does the submission's code say what the paper's claim says?

No model, no network: the submission is indexed once (:mod:`sabench.index`), then every SAU is judged
by general rules per dimension:

* D1 numbers: each number of the claim with its name ("learning rate of 0.05") is looked up among the
  code's named values (``lr = 0.05``, ``Adam(lr=...)``, ``--lr`` defaults, YAML keys); same value ->
  support, the same name with another value -> ``drifted``.
* D2 formulas: a backticked formula is compared with code statements as multisets of operands and
  operators after normalisation (``np.sum(x)`` = ``x.sum()``, ``**`` = ``^``): same operands and
  operators -> aligned; same operands, different operators -> ``drifted``.
* D3 protocol: named datasets, baselines and metrics must appear in code or config.
* D4 order: the claim's steps (``a → b → c``) are mapped to calls in the function that runs them
  (following calls into the repo); out of order -> ``drifted``.
* Everywhere: evidence only in docs/tests -> ``missing``; evidence in (or a claim naming) a stub
  function -> ``placeholder``; otherwise a weighted term coverage gives aligned / partial / missing on
  SA-Bench's scale (0, .25, .5, .75, 1). A level below aligned that only the coverage sets, for a
  claim that names no code and whose words are only weakly in live code, is no evidence either
  way: below a calibrated confidence of 0.7 the judge abstains, ``undetermined`` (:func:`.confidence.abstain`); with nothing of the
  claim located, or nothing to read, ``missing``.

A claim is implemented only by code that runs in the submission's own execution and whose result
reaches what the submission reports. Code that does not is text (comment credit, never a value, a
formula or a step): a statement whose result reaches no return value, written output, later call
or later live computation (:mod:`sabench.index.liveness`: dead stores, discarded pure expressions,
operands multiplied by a literal zero, branches under a constant false test), a definition nothing
live calls, and, when the execution record has ``lines_run`` (path -> lines that ran), every
statement of a Python code file that did not run (:mod:`.executed`). A formula found only in such
code is a ``placeholder``. Without ``lines_run`` the reasoning of every credited claim says that it
rests on dataflow only.

Layout: :mod:`.claims` parses claims, :mod:`.evidence` searches the index, :mod:`.rules` holds the
shared core and dispatches to one module per rule (:mod:`.numbers`, :mod:`.formulas`,
:mod:`.protocol`, :mod:`.order`, :mod:`.results`); :mod:`.params` has the rule parameters;
:mod:`.executed` reads the execution record's lines onto the index; :mod:`.confidence` says how sure
each verdict is (calibrated on SA-Bench).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from sabench.contracts import Evidence, Judgment
from sabench.index import CodeIndex, build_index
from sabench.judges.registry import JudgeInputs, source_hash
from sabench.judges.static.claims import (
    OPERATION_WORDS,
    Claim,
    Step,
    analyze_claim,
    analyze_claims,
    claim_frequencies,
    entity_keys,
    math_spans,
    span_operations,
)
from sabench.judges.static.confidence import abstain, rate
from sabench.judges.static.evidence import Presence, SubmissionContext, Window, rounded_value
from sabench.judges.static.executed import (
    SILENT_RUN,
    executed_index,
    lines_of_incomplete_run,
    lines_run,
    reported_anything,
    settle,
    unconfirmed,
)
from sabench.judges.static.formulas import formula_tokens
from sabench.judges.static.outcome import Outcome
from sabench.judges.static.params import BANDS, GENERIC, RULES
from sabench.judges.static.rules import ClaimJudge

__all__ = [
    "BANDS",
    "GENERIC",
    "JUDGE_VERSION",
    "OPERATION_WORDS",
    "RULES",
    "Claim",
    "ClaimJudge",
    "Outcome",
    "Presence",
    "Step",
    "SubmissionContext",
    "Window",
    "analyze_claim",
    "analyze_claims",
    "claim_frequencies",
    "entity_keys",
    "formula_tokens",
    "judge_outcomes",
    "judge_static",
    "math_spans",
    "rounded_value",
    "span_operations",
    "static_fingerprint",
]

JUDGE_VERSION = "1"


def static_fingerprint() -> str:
    """Hash of the judge's code (its sources in the judge registry) and its rule parameters."""
    h = hashlib.sha256()
    h.update(JUDGE_VERSION.encode())
    h.update(json.dumps([RULES, BANDS], sort_keys=True).encode())
    h.update(source_hash("static").encode())
    return f"static-{JUDGE_VERSION}-{h.hexdigest()[:12]}"


def judge_static(
    submission: Path | str,
    saus: list[dict[str, Any]],
    execution: dict[str, Any] | None = None,
    index: CodeIndex | None = None,
) -> list[Judgment]:
    """Judge every SAU of one run from the submission's code alone (and, for claims with expected
    results, from the execution record's metrics when one is given)."""
    submission = Path(submission)
    if not submission.is_dir():
        if submission.exists():
            return [
                _judgment(
                    sau, Outcome("error", 0.0, None, f"{submission} is not a folder", []), None
                )
                for sau in saus
            ]
        index = CodeIndex(root=submission)
    if index is None:
        try:
            index = build_index(submission)
        except OSError as exc:
            return [
                _judgment(
                    sau, Outcome("error", 0.0, None, f"cannot read submission: {exc}", []), None
                )
                for sau in saus
            ]
    return [_judgment(sau, o, index) for sau, o in judge_outcomes(index, saus, execution)]


def judge_outcomes(
    index: CodeIndex, saus: list[dict[str, Any]], execution: dict[str, Any] | None = None
) -> list[tuple[dict[str, Any], Outcome]]:
    """The rules' outcomes per SAU (with the continuous support, for calibration studies), each
    with its calibrated confidence (:mod:`.confidence`). A run that did not complete is judged
    twice, on the code it ran and with the benefit of the doubt for the rest (:func:`.settle`)."""
    recorded = lines_run(execution) is not None
    claims = analyze_claims(saus)
    index_run = executed_index(index, execution)
    if not SubmissionContext(index_run).has_code:
        why = "The submission is empty." if index.empty else "The submission has no code or config."
        return [(sau, rate(None, Outcome("missing", 0.0, "omission", why, []))) for sau in saus]
    outcomes = _outcomes(index_run, claims, execution)
    if lines_of_incomplete_run(execution) is not None:
        if reported_anything(index, execution):
            ran = _outcomes(executed_index(index, execution, reached=True), claims, execution)
        else:
            ran = [Outcome("missing", 0.0, "omission", SILENT_RUN, []) for _ in claims]
        outcomes = [settle(r, d, index) for r, d in zip(ran, outcomes, strict=True)]
    elif not recorded:
        outcomes = [
            unconfirmed(o, index) if o.verdict in ("aligned", "partial") else o for o in outcomes
        ]
    return [(sau, rate(c, o)) for sau, c, o in zip(saus, claims, outcomes, strict=True)]


def _outcomes(
    index: CodeIndex, claims: list[Claim], execution: dict[str, Any] | None
) -> list[Outcome]:
    judge = ClaimJudge(SubmissionContext(index), execution)
    out = []
    for claim in claims:
        try:
            outcome = judge.judge(claim)
        except Exception as exc:  # a rule bug must not sink the run: fall back to coverage
            try:
                cov, _, wins = judge.coverage(claim.terms)
                judge.cov, judge.dim = cov, claim.dimension
                judge.anchored = judge.fn_anchor = False
                ev = [judge.loc(w.fid, w.start, w.end) for w in wins[:2]]
                outcome = judge.by_support(
                    cov, ev, f"Weighted term coverage (rules failed: {type(exc).__name__})"
                )
            except Exception as exc2:
                outcome = Outcome("error", 0.0, None, f"static judge failed: {exc2!r}", [])
        out.append(abstain(claim, outcome, _in_live_code(judge, claim)))
    return out


def _in_live_code(judge: ClaimJudge, claim: Claim) -> bool:
    """Whether one of the claim's own words (not a generic one) is on a line of live code outside
    a stub (full credit): code that could implement the claim, the ground for abstaining; and
    none is in a stub, which the judge can see: a placeholder where the claim would be."""
    own = [judge.ctx.term(t) for t in claim.terms if t not in GENERIC]
    in_stub = any(fn.stub for fn in judge.ctx.index.functions) and any(
        fn is not None and fn.stub
        for p in own
        for fid, ln, _ in p.hits
        for fn in [judge.ctx.function_at(fid, ln)]
    )
    return not in_stub and any(p.credit >= 1.0 for p in own)


def _judgment(sau: dict[str, Any], o: Outcome, index: CodeIndex | None) -> Judgment:
    evidence = []
    if index is not None:
        for fid, start, end in o.evidence:
            f = index.files[fid]
            if f.lines:
                evidence.append(Evidence(f.path, start, end))
    score = o.score if o.verdict == "partial" else None
    return Judgment(
        sau_id=str(sau.get("sau_id") or sau.get("id") or ""),
        dimension=str(sau.get("dimension") or ""),
        verdict=o.verdict,
        score=score,
        failure_mode=o.failure_mode,
        evidence=evidence,
        reasoning=o.reasoning.strip(),
        confidence=o.confidence,
    )


def judge(inputs: JudgeInputs) -> list[Judgment]:
    """The registry's entry point: the code and the execution record, nothing else."""
    return judge_static(inputs.submission, inputs.saus, inputs.execution)
