"""How sure the static judge is of each verdict: a confidence in [0, 1], calibrated on SA-Bench.

A verdict is only as good as what it rests on, so each one is described by three signals
(:class:`Signals`), all read off the rules' own outcome (:class:`.Outcome`: its verdict, support,
evidence and features) and the parsed claim, never recomputed:

* **strength**, how much evidence, in the verdict's direction: for a credited verdict the claim's
  term coverage; for ``missing`` how little support was found (1 - support); for a contradiction
  (``drifted``, ``placeholder``) how little else backs the claim (1 - coverage).
* **specificity**, what kind of evidence: 2 an exact match (every value found with its name,
  every formula or step matched, a result compared, a named setting with another value, a named
  item absent), 1 a name match (the claim's names or entities in code, a rule other than the
  bands decided, a contradiction only as a level lost beside support), 0 term coverage alone.
* **agreement**, how many of the independent rules say the same: the coverage bands alone, the
  claim's parts (values, steps, entities) found or not, no rule taking a level off, evidence
  located or not.

Their mean is a raw score in [0, 1]; :data:`TABLE` maps it, per verdict group, to the share of
such verdicts that SA-Bench's own judge scored on the same level (0, .25, .5, .75, 1): a
non-decreasing step map (binned rates pooled by adjacent violators), fitted on the SA-Bench
configurations in :data:`FIT_CONFIGS` (half of them, balanced over models and scaffolds) and
reported on the other half (docs/calibration.md, "Confidence and the cascade judge"). Regenerate
the table with::

    .venv/bin/python benchmarks/sabench_agreement.py --data ../shared/sabench --fit-confidence

Across groups the values say what SA-Bench's judge does: a ``missing`` on little support is
usually right, an ``aligned`` usually scored lower. The cascade judge
(:mod:`sabench.judges.cascade`) keeps the verdicts whose confidence reaches its threshold and asks
a model about the rest.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sabench.judges.static.claims import Claim
from sabench.judges.static.outcome import Outcome
from sabench.judges.static.params import BANDS, RULES

#: The verdict groups a table is fitted for: what a verdict says decides what evidence means.
GROUPS = ("absent", "low", "mid", "aligned", "contradicted")
#: Bins of the raw score per group.
BINS = 20
#: Weight of a group's mean in each bin's rate (a bin of few verdicts leans on its group).
PRIOR = 5.0
#: SA-Bench's configurations the table is fitted on: each model and each scaffold in both halves.
FIT_CONFIGS = (
    "claude-sonnet_basic",
    "deepseek_papercoder",
    "gemini-flash_basic",
    "gpt4o_papercoder",
    "openhands_claude",
    "openhands_gemini",
)

#: A step map of raw score to confidence per group: (from, confidence) pairs, the confidence of raw
#: scores from ``from`` up to the next step. Fitted on FIT_CONFIGS by
#: ``benchmarks/sabench_agreement.py --fit-confidence`` (see the module); paste its output here.
TABLE: dict[str, tuple[tuple[float, float], ...]] = {
    "absent": ((0.0, 0.428), (0.3, 0.476), (0.45, 0.572), (0.5, 0.812)),
    "low": ((0.0, 0.458), (0.5, 0.471), (0.55, 0.584), (0.65, 0.635), (0.7, 0.644)),
    "mid": ((0.0, 0.104), (0.55, 0.161), (0.75, 0.191)),
    "aligned": ((0.0, 0.198), (0.8, 0.274), (0.95, 0.431)),
    "contradicted": (
        (0.0, 0.293),
        (0.45, 0.382),
        (0.5, 0.392),
        (0.7, 0.435),
        (0.9, 0.493),
        (0.95, 0.55),
    ),
}
#: A table's type: per group its steps.
Table = dict[str, tuple[tuple[float, float], ...]]


@dataclass(frozen=True)
class Signals:
    """What one verdict rests on (see the module)."""

    group: str
    #: 0 term coverage alone, 1 a name match, 2 an exact match
    specificity: int
    #: the rules that say the same as the verdict, of ``asked``
    agreeing: int
    asked: int
    #: how much evidence in the verdict's direction, in [0, 1]
    strength: float

    @property
    def raw(self) -> float:
        """The three signals' mean, in [0, 1]: the table's input."""
        agreed = self.agreeing / self.asked if self.asked else 0.5
        return (self.specificity / 2 + agreed + _unit(self.strength)) / 3


#: The feature under which :func:`rate` leaves an outcome's raw score.
RAW = "confidence_raw"
#: A submission without code or config: nothing can be there, every rule agrees.
NOTHING_TO_READ = Signals("absent", 2, 3, 3, 1.0)


def _unit(x: float) -> float:
    return min(1.0, max(0.0, float(x)))


def group_of(verdict: str, score: float) -> str | None:
    """The table a verdict is read from; None for ``error`` and ``undetermined`` (no verdict, no
    confidence)."""
    if verdict == "missing":
        return "absent"
    if verdict in ("drifted", "placeholder"):
        return "contradicted"
    if verdict == "aligned":
        return "aligned"
    if verdict == "partial":
        return "low" if score <= 0.25 else "mid"
    return None


def signals(claim: Claim | None, outcome: Outcome) -> Signals | None:
    """The signals of one outcome of the rules; ``claim`` None: the submission has nothing to
    read (:data:`NOTHING_TO_READ`). None for an ``error`` verdict."""
    group = group_of(outcome.verdict, outcome.score)
    if group is None:
        return None
    if claim is None:
        return NOTHING_TO_READ
    f = outcome.features
    share = RULES["window_share"]
    cov = (1 - share) * f.get("cov_g", 0.0) + share * f.get("cov_w", 0.0)
    bands = BANDS.get(claim.dimension, BANDS["D2"])
    by_coverage = bisect.bisect_right(bands, cov) / 4  # the score the bands alone would give
    parts = next((f[k] for k in ("num_frac", "step_frac", "ent_frac") if k in f), None)
    demoted = f.get("demoted", 0.0) > 0
    located = bool(outcome.evidence)
    if group == "absent":
        decided = outcome.support < 0  # a rule said missing (docs only, a named item absent)
        exact = decided and bool(claim.names or claim.expected)
        votes = [by_coverage == 0, not located]
        strength = 1 - (outcome.support if outcome.support >= 0 else cov)
        specificity = 2 if exact else int(decided)
    elif group == "contradicted":
        votes = [by_coverage == 0, not demoted]
        strength = 1 - cov
        specificity = 1 if demoted else 2
    else:
        score = 1.0 if group == "aligned" else outcome.score
        anchored = f.get("anchored", 0.0) > 0
        checked = claim.numbers or claim.formulas or claim.steps
        exact = bool(claim.expected) or (anchored and bool(checked))
        named = anchored or (parts or 0.0) > 0
        votes = [0 < by_coverage >= score, not demoted, located]
        strength = cov
        specificity = 2 if exact else int(named)
    if parts is not None:
        votes.append(parts >= 0.5 if group in ("low", "mid", "aligned") else parts < 0.5)
    return Signals(group, specificity, sum(votes), len(votes), _unit(strength))


def calibrated(group: str | None, raw: float, table: Table | None = None) -> float:
    """The confidence of a verdict of ``group`` with raw score ``raw`` (0 for no verdict)."""
    steps = (TABLE if table is None else table).get(group or "")
    if not steps:
        return 0.0
    i = bisect.bisect_right([start for start, _ in steps], _unit(raw)) - 1
    return steps[max(i, 0)][1]


def confidence(sig: Signals | None, table: Table | None = None) -> float:
    """The calibrated confidence of a verdict with these signals (0 for no verdict)."""
    return 0.0 if sig is None else calibrated(sig.group, sig.raw, table)


def rate(claim: Claim | None, outcome: Outcome) -> Outcome:
    """The outcome with its confidence set, and its raw score among its features (:data:`RAW`,
    what a refit reads); the static judge's hook, ``claim`` as :func:`signals`."""
    sig = signals(claim, outcome)
    if sig is not None:
        outcome.features[RAW] = round(sig.raw, 6)
    outcome.confidence = round(confidence(sig), 4)
    return outcome


# --------------------------------------------------------------------------------------------
# Fitting (benchmarks/sabench_agreement.py --fit-confidence)
# --------------------------------------------------------------------------------------------


def pool_adjacent(values: Sequence[float], weights: Sequence[float]) -> list[float]:
    """The non-decreasing sequence nearest ``values`` in weighted squared error (pool adjacent
    violators): where a bin's rate falls below its left neighbour's, the two share their mean."""
    blocks: list[list[float]] = []  # [mean, weight, count]
    for v, w in zip(values, weights, strict=True):
        blocks.append([float(v), float(w), 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, w2, n2 = blocks.pop()
            m1, w1, n1 = blocks.pop()
            total = w1 + w2
            blocks.append([(m1 * w1 + m2 * w2) / total if total else m1, total, n1 + n2])
    out: list[float] = []
    for mean, _, count in blocks:
        out += [mean] * int(count)
    return out


def fit_table(
    verdicts: Iterable[tuple[str | None, float, bool]], bins: int = BINS, prior: float = PRIOR
) -> Table:
    """A table from (group, raw score, agreed) of verdicts: per group, the share of agreed
    verdicts in each of ``bins`` equal bins of the raw score, drawn towards the group's share with
    weight ``prior``, made non-decreasing and written as its steps."""
    counts = {g: ([0.0] * bins, [0.0] * bins) for g in GROUPS}
    for group, raw, agreed in verdicts:
        if group not in counts:
            continue
        hits, n = counts[group]
        b = min(int(_unit(raw) * bins), bins - 1)
        hits[b] += float(agreed)
        n[b] += 1.0
    table = {}
    for group, (hits, n) in counts.items():
        base = sum(hits) / sum(n) if sum(n) else 0.5
        rates = [(h + prior * base) / (m + prior) for h, m in zip(hits, n, strict=True)]
        fitted = [round(v, 3) for v in pool_adjacent(rates, [m + prior for m in n])]
        steps = [
            (round(i / bins, 4), v) for i, v in enumerate(fitted) if i == 0 or v != fitted[i - 1]
        ]
        table[group] = tuple(steps)
    return table


def table_source(table: Table) -> str:
    """The table as the constant :data:`TABLE`, to paste over it."""
    lines = ["TABLE: dict[str, tuple[tuple[float, float], ...]] = {"]
    for group in GROUPS:
        steps = ", ".join(f"({start!r}, {value!r})" for start, value in table[group])
        lines.append(f'    "{group}": ({steps}{"," if len(table[group]) == 1 else ""}),')
    lines.append("}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Abstaining
# --------------------------------------------------------------------------------------------

#: Below this calibrated confidence a verdict of weak overlap alone is no answer: SA-Bench's own
#: judge gave such verdicts another level more than three times in ten. Only the surest
#: ``missing`` (nothing located near the claim's words) stays.
ABSTAIN_BELOW = 0.7

#: What the judge says when it abstains: the claim was read and looked for, nothing decides.
UNDETERMINED_WHY = (
    "Undetermined: the claim names no code and its words are only weakly in live code; no value, "
    "formula, step, named item, stub or docs-only evidence decides, and word overlap alone (a "
    "verdict SA-Bench's judge often scored otherwise) cannot tell a partial implementation from a "
    "claim worded unlike its code."
)


def undecided(claim: Claim | None, outcome: Outcome, in_code: bool) -> bool:
    """Whether a verdict below full credit rests on weak term overlap alone: the coverage bands
    set its level (no rule decided it, none found a contradiction, no anchor forced it, none of
    the claim's values is missing from all live code), the
    claim names no code (no backticked name or formula to match) and under ``abstain_cov`` of its weighted
    terms are credited in code, yet some of its own words are in code that could implement it
    (``in_code``: live code, not a comment, not a stub), and its calibrated confidence is under
    :data:`ABSTAIN_BELOW`. Such a level is no evidence of drift: the claim may be worded unlike the
    code that implements it. A claim that names code, or whose
    words are mostly there, makes a missing part evidence; and where there is nothing to read
    (``claim`` None: no code or config) or none of the claim's words is in such code (an empty
    submission, stubs, comments), no code could implement it, so ``missing`` stands."""
    if (
        claim is None
        or claim.names
        or claim.formulas
        or outcome.verdict not in ("partial", "missing")
    ):
        return False
    f = outcome.features
    # a value of the claim in no live code at all is evidence of absence, not weak overlap
    decided_by_rule = outcome.support < 0 or f.get("forced", 0.0) > 0 or f.get("n_absent", 0.0) > 0
    contradicted = f.get("demoted", 0.0) > 0
    weak = f.get("cov_g", 0.0) < RULES["abstain_cov"]
    if not weak or not in_code or decided_by_rule or contradicted:
        return False
    return confidence(signals(claim, outcome)) < ABSTAIN_BELOW


def abstain(claim: Claim | None, outcome: Outcome, in_code: bool) -> Outcome:
    """The outcome, or ``undetermined`` where its evidence cannot decide (:func:`undecided`):
    counted as judged, never as drift, never as credit (sabench.scoring). The level the bands
    would have given stays in the reasoning."""
    if not undecided(claim, outcome, in_code):
        return outcome
    would = outcome.verdict if outcome.verdict == "missing" else f"partial {outcome.score:g}"
    why = f"{UNDETERMINED_WHY} (The bands alone: {would}; {outcome.reasoning.strip()})"
    return Outcome(
        "undetermined", 0.0, None, why, outcome.evidence, outcome.support, outcome.features
    )
