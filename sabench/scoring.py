"""Scoring rules: pure functions on DataFrames, so every number in the tables can be unit-tested.

SA-Bench's rule (``run_scores`` -> ``paper_scores`` -> ``agent_scores``)
    A claim's score comes from its verdict (aligned 1; drifted, missing, placeholder 0; partial keeps the
    judge's score). ``error`` rows (or rows without a score) are excluded from every mean and counted
    apart: a judge failure is never drift. ``undetermined`` rows (the judge looked and cannot tell)
    are excluded the same way and counted apart again (``n_undetermined``): judged, so coverage,
    but never drift and never credit; a run with more such rows than scored ones gets no score. A run's dimension score is the mean claim score in that
    dimension; its ``overall`` score is the mean over the dimensions it has scores in. An agent's score is
    the mean over papers of the mean over seeds within the paper (so a paper with three seeds weighs as
    much as one with one), with a percentile bootstrap CI over papers (``sabench.stats``);
    ``few_papers`` flags an interval over fewer than ``stats.MIN_PAPERS`` papers.

PaperBench's weighted tree (``RubricTree``, ``tree_score``)
    Only leaves are SAUs. Each leaf row carries ``parent``: the ids of its ancestors from the root down,
    joined by ``/`` (``"root/a/b"``), and its own ``weight``. Inner nodes are not rows; their weights come
    from a mapping ``node_weights: {node id: weight}`` given by the caller. ``node_weights_from_saus``
    builds it from the ``parent_weights`` column the rubric import writes (one weight per ``parent``
    component, same order); ids missing from the mapping weigh 1. Leaves without a usable score (no
    judgment, or ``error``) are pruned, not scored 0; an inner node whose children are all pruned is
    pruned too; parents are weight-averaged bottom-up. SAUs without a ``parent`` hang from the root.

Agreement (``agreement``)
    A judge against the ``reference`` judge on the SAUs both scored (errors on either side dropped),
    measured by ``sabench.stats.agreement_metrics`` (``sabench.stats`` gives the definitions and the
    answers for degenerate inputs).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

from sabench.contracts import DIMENSIONS, UNDETERMINED, UNSCORED_VERDICTS, VERDICT_SCORES
from sabench.stats import (
    BOOTSTRAP_LEVEL,
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    agreement_metrics,
    bootstrap_ci,
    few_papers,
)

OVERALL = "overall"
#: Order of the ``dimension`` column in every score table.
DIMENSION_ORDER = (OVERALL, *DIMENSIONS)
RUN_KEYS = ["agent", "paper", "seed"]

RUN_SCORE_COLUMNS = [
    "agent",
    "paper",
    "seed",
    "judge",
    "dimension",
    "score",
    "n_saus",
    "n_error",
    "n_undetermined",
]
AGENT_SCORE_COLUMNS = [
    "agent",
    "judge",
    "dimension",
    "score",
    "ci_low",
    "ci_high",
    "n_papers",
    "few_papers",
]
PAPER_SCORE_COLUMNS = ["agent", "judge", "dimension", "paper", "score", "n_seeds"]
TAXONOMY_COLUMNS = ["agent", "judge", "dimension", "verdict", "failure_mode", "count", "share"]
AGREEMENT_COLUMNS = [
    "judge",
    "dimension",
    "n",
    "exact_agreement",
    "mae",
    "kappa_quadratic",
    "spearman",
]
CONFUSION_COLUMNS = ["judge", "reference_verdict", "judge_verdict", "count"]


# --------------------------------------------------------------------------- claim scores


def claim_scores(judgments: pd.DataFrame) -> pd.Series:
    """The score each row counts with: fixed by the verdict, the judge's own for ``partial``, NaN for
    ``error`` and ``undetermined`` (or a row without a score), so a mean with ``skipna`` leaves
    them out."""
    fixed = judgments["verdict"].map(VERDICT_SCORES)
    own = pd.to_numeric(judgments["score"], errors="coerce").astype(float)
    score = fixed.astype(float).where(fixed.notna(), own)
    return score.where(~judgments["verdict"].isin(UNSCORED_VERDICTS))


def _dimension_key(values: pd.Series) -> pd.Series:
    order = {d: i for i, d in enumerate(DIMENSION_ORDER)}
    return values.map(lambda d: (order.get(d, len(order)), str(d)))


def sort_by_dimension(frame: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Sort by ``keys`` with ``dimension`` in the order overall, D1..D4, then anything else."""
    if frame.empty:
        return frame.reset_index(drop=True)
    sort_keys = {k: (_dimension_key if k == "dimension" else None) for k in keys}
    out = frame.sort_values(
        list(keys),
        key=lambda s: sort_keys[s.name](s) if sort_keys.get(s.name) else s.astype(str),
        kind="mergesort",
    )
    return out.reset_index(drop=True)


def run_scores(judgments: pd.DataFrame) -> pd.DataFrame:
    """Per run and judge: the mean claim score per dimension and the mean of those (``overall``).

    ``n_saus`` counts the scored claims, ``n_error`` and ``n_undetermined`` the excluded ones (the
    judge failed, the judge abstained); a dimension with only those has a NaN score and does not
    enter ``overall``. A score that would rest on fewer SAUs than were left out
    (``n_error + n_undetermined > n_saus``) is withheld (NaN): errors and abstentions are not the
    submission's, but a score of the few claims left says little of the run
    (``coverage.n_runs_unscored``), and a judge that cannot tell most claims must not credit the
    run with the few it can.
    """
    if judgments.empty:
        return pd.DataFrame(columns=RUN_SCORE_COLUMNS)
    frame = judgments[[*RUN_KEYS, "judge", "dimension"]].copy()
    frame["seed"] = frame["seed"].astype(str)
    frame["value"] = claim_scores(judgments).to_numpy()
    frame["is_scored"] = frame["value"].notna()
    frame["is_undetermined"] = (judgments["verdict"] == UNDETERMINED).to_numpy()
    frame["is_error"] = ~frame["is_scored"] & ~frame["is_undetermined"]
    keys = [*RUN_KEYS, "judge"]
    counted = {
        "n_saus": ("is_scored", "sum"),
        "n_error": ("is_error", "sum"),
        "n_undetermined": ("is_undetermined", "sum"),
    }
    dims = (
        frame.groupby([*keys, "dimension"], sort=False)
        .agg(score=("value", "mean"), **counted)
        .reset_index()
    )
    overall = (
        dims.groupby(keys, sort=False)
        .agg(score=("score", "mean"), **{n: (n, "sum") for n in counted})
        .reset_index()
    )
    overall["dimension"] = OVERALL
    out = pd.concat([overall, dims], ignore_index=True)[RUN_SCORE_COLUMNS]
    for n in counted:
        out[n] = out[n].astype("int64")
    out["score"] = out["score"].astype(float).where(~withheld(out))
    return sort_by_dimension(out, ["agent", "paper", "seed", "judge", "dimension"])


def withheld(runs: pd.DataFrame) -> pd.Series:
    """Rows of ``scores_by_run`` whose score is withheld: more SAUs in error or undetermined than
    scored."""
    return runs["n_error"] + runs["n_undetermined"] > runs["n_saus"]


def paper_scores(runs: pd.DataFrame) -> pd.DataFrame:
    """Seeds averaged within a paper (NaN runs skipped): the unit the bootstrap resamples."""
    if runs.empty:
        return pd.DataFrame(columns=PAPER_SCORE_COLUMNS)
    out = (
        runs.groupby(["agent", "judge", "dimension", "paper"], sort=False)
        .agg(score=("score", "mean"), n_seeds=("score", "count"))
        .reset_index()
    )
    out["n_seeds"] = out["n_seeds"].astype("int64")
    return sort_by_dimension(out[PAPER_SCORE_COLUMNS], ["agent", "judge", "dimension", "paper"])


def agent_scores(
    runs: pd.DataFrame,
    *,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    level: float = BOOTSTRAP_LEVEL,
    seed: int = BOOTSTRAP_SEED,
) -> pd.DataFrame:
    """Per agent, judge and dimension: the mean over papers of the seed-averaged paper score.

    ``few_papers`` is true when the interval rests on fewer than ``stats.MIN_PAPERS`` papers.
    """
    papers = paper_scores(runs)
    rows = []
    for (agent, judge, dim), group in papers.groupby(["agent", "judge", "dimension"], sort=False):
        values = group["score"].dropna().to_numpy(dtype=float)
        low, high = bootstrap_ci(values, n_resamples=n_resamples, level=level, seed=seed)
        rows.append(
            {
                "agent": agent,
                "judge": judge,
                "dimension": dim,
                "score": float(values.mean()) if values.size else math.nan,
                "ci_low": low,
                "ci_high": high,
                "n_papers": int(values.size),
                "few_papers": few_papers(int(values.size)),
            }
        )
    out = pd.DataFrame(rows, columns=AGENT_SCORE_COLUMNS)
    out["n_papers"] = out["n_papers"].astype("int64")
    out["few_papers"] = out["few_papers"].astype(bool)
    return sort_by_dimension(out, ["agent", "judge", "dimension"])


TAXONOMY_KEYS = ["agent", "judge", "dimension", "verdict", "failure_mode"]


def taxonomy_counts(judgments: pd.DataFrame) -> pd.DataFrame:
    """The ``count`` of each verdict x failure mode per agent, judge and dimension (``overall``
    included): counts of disjoint sets of judgments add up, so a large grid is counted in chunks."""
    frame = judgments[TAXONOMY_KEYS].copy()
    frame = pd.concat([frame.assign(dimension=OVERALL), frame], ignore_index=True)
    frame["failure_mode"] = frame["failure_mode"].astype(object)
    counts = frame.groupby(TAXONOMY_KEYS, dropna=False, sort=False).size().rename("count")
    return counts.reset_index()


def taxonomy_shares(counts: pd.DataFrame) -> pd.DataFrame:
    """The error taxonomy of :func:`taxonomy_counts` (or their sum over chunks)."""
    if counts.empty:
        return pd.DataFrame(columns=TAXONOMY_COLUMNS)
    counts = counts.copy()
    keys = ["agent", "judge", "dimension"]
    counts["count"] = counts["count"].astype("int64")
    counts["share"] = counts["count"] / counts.groupby(keys)["count"].transform("sum")
    counts["failure_mode"] = counts["failure_mode"].astype(object)
    counts.loc[counts["failure_mode"].isna(), "failure_mode"] = None
    return sort_by_dimension(counts[TAXONOMY_COLUMNS], TAXONOMY_KEYS)


def error_taxonomy(judgments: pd.DataFrame) -> pd.DataFrame:
    """Counts of verdict x failure mode per agent, judge and dimension, with their share.

    Rows with ``dimension == "overall"`` sum D1..D4: sum one or the other, never both. Shares are over
    all rows of the group, ``error`` included, so they add up to 1.
    """
    if judgments.empty:
        return pd.DataFrame(columns=TAXONOMY_COLUMNS)
    return taxonomy_shares(taxonomy_counts(judgments))


# --------------------------------------------------------------------------- PaperBench tree


def node_weights_from_saus(saus: pd.DataFrame) -> dict[str, float]:
    """Inner-node weights from the ``parent_weights`` column (aligned with the ``parent`` path).

    Raises ValueError when one node is given two different weights.
    """
    weights: dict[str, float] = {}
    if "parent_weights" not in saus.columns:
        return weights
    for parent, pws in zip(saus["parent"], saus["parent_weights"], strict=True):
        if not isinstance(parent, str) or not parent or pws is None:
            continue
        ids = parent.split("/")
        pws = list(pws)
        if len(pws) != len(ids):
            raise ValueError(f"parent {parent!r} has {len(ids)} ids but {len(pws)} weights")
        for node, w in zip(ids, pws, strict=True):
            if node in weights and weights[node] != float(w):
                raise ValueError(f"node {node!r} has weights {weights[node]} and {w}")
            weights[node] = float(w)
    return weights


def has_tree(saus: pd.DataFrame) -> bool:
    """Whether a paper's SAUs form a rubric tree (any leaf names a parent)."""
    if "parent" not in saus.columns:
        return False
    return bool(saus["parent"].map(lambda p: isinstance(p, str) and p != "").any())


@dataclass
class RubricTree:
    """A rubric tree built once per paper and scored once per run and judge."""

    #: node key (the tuple of ids from the root) -> child keys, in first-seen order.
    children: dict[tuple[str, ...], list[tuple[str, ...]]] = field(default_factory=dict)
    #: leaf key -> SAU id.
    leaves: dict[tuple[str, ...], str] = field(default_factory=dict)
    weights: dict[tuple[str, ...], float] = field(default_factory=dict)

    @classmethod
    def from_saus(
        cls, saus: pd.DataFrame, node_weights: Mapping[str, float] | None = None
    ) -> RubricTree:
        """Leaves are the SAU rows; inner nodes the components of their ``parent`` paths."""
        node_weights = node_weights_from_saus(saus) if node_weights is None else node_weights
        tree = cls()
        root: tuple[str, ...] = ()
        tree.children[root] = []
        for sau_id, parent, weight in zip(
            saus["sau_id"], saus["parent"], saus["weight"], strict=True
        ):
            path = tuple(parent.split("/")) if isinstance(parent, str) and parent else ()
            for depth in range(1, len(path) + 1):
                key = path[:depth]
                if key not in tree.children:
                    tree.children[key] = []
                    tree.children[key[:-1]].append(key)
                    tree.weights[key] = float(node_weights.get(key[-1], 1.0))
            leaf = (*path, f"\x00{sau_id}")  # \x00 keeps a leaf apart from a same-named node
            if leaf in tree.leaves:
                raise ValueError(f"SAU {sau_id!r} appears twice under {parent!r}")
            tree.leaves[leaf] = str(sau_id)
            tree.children[path].append(leaf)
            tree.weights[leaf] = 1.0 if weight is None or pd.isna(weight) else float(weight)
        return tree

    def score(self, scores: Mapping[str, float]) -> float:
        """The root's score; NaN when every leaf is pruned."""
        value = self._score((), scores)
        return math.nan if value is None else value

    def n_judged(self, scores: Mapping[str, float]) -> int:
        return sum(1 for s in self.leaves.values() if _usable(scores.get(s)))

    def _score(self, key: tuple[str, ...], scores: Mapping[str, float]) -> float | None:
        if key in self.leaves:
            value = scores.get(self.leaves[key])
            return float(value) if _usable(value) else None
        total = weight_sum = 0.0
        for child in self.children[key]:
            value = self._score(child, scores)
            if value is None:
                continue
            total += self.weights[child] * value
            weight_sum += self.weights[child]
        return total / weight_sum if weight_sum > 0 else None


def _usable(value: float | None) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def tree_score(
    saus: pd.DataFrame,
    scores: Mapping[str, float],
    node_weights: Mapping[str, float] | None = None,
) -> float:
    """PaperBench's weighted tree score of one run; ``scores`` maps SAU id -> leaf score
    (NaN or absent = pruned). ``node_weights`` defaults to ``node_weights_from_saus(saus)``."""
    return RubricTree.from_saus(saus, node_weights).score(scores)


# --------------------------------------------------------------------------- agreement


PAIR_COLUMNS = ["judge", "dimension", "verdict", "value", "verdict_ref", "value_ref"]


def agreement_pairs(judgments: pd.DataFrame, reference: str = "reference") -> pd.DataFrame:
    """Each judgment of another judge next to ``reference``'s on the same run and SAU (its verdict
    and claim score, and the reference's). Pairs never cross runs, so a grid chunked by runs gives
    its pairs chunk by chunk, in the same order."""
    if judgments.empty or reference not in set(judgments["judge"]):
        return pd.DataFrame(columns=PAIR_COLUMNS)
    frame = judgments[[*RUN_KEYS, "sau_id", "dimension", "judge", "verdict"]].copy()
    frame["seed"] = frame["seed"].astype(str)
    frame["value"] = claim_scores(judgments).to_numpy()
    ref = frame[frame["judge"] == reference].drop(columns="judge")
    others = frame[frame["judge"] != reference].drop(columns="dimension")
    pairs = others.merge(ref, on=[*RUN_KEYS, "sau_id"], suffixes=("", "_ref"))
    return pairs[PAIR_COLUMNS]


def agreement_tables(pairs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(agreement per judge and dimension incl. ``overall``, verdict confusion counts) of
    :func:`agreement_pairs` (or their concatenation over chunks, in order)."""
    if pairs.empty:
        return pd.DataFrame(columns=AGREEMENT_COLUMNS), pd.DataFrame(columns=CONFUSION_COLUMNS)
    confusion = (
        pairs.groupby(["judge", "verdict_ref", "verdict"], sort=True)
        .size()
        .rename("count")
        .reset_index()
        .rename(columns={"verdict_ref": "reference_verdict", "verdict": "judge_verdict"})
    )
    confusion["count"] = confusion["count"].astype("int64")
    scored = pairs.dropna(subset=["value", "value_ref"])
    rows = []
    for judge, group in scored.groupby("judge", sort=True):
        subsets = [(OVERALL, group), *group.groupby("dimension", sort=True)]
        for dim, sub in subsets:
            metrics = agreement_metrics(sub["value"].tolist(), sub["value_ref"].tolist())
            rows.append({"judge": judge, "dimension": dim, **metrics})
    table = pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)
    table["n"] = table["n"].astype("int64")
    return sort_by_dimension(table, ["judge", "dimension"]), confusion[CONFUSION_COLUMNS]


def agreement(
    judgments: pd.DataFrame, reference: str = "reference"
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every other judge against ``reference`` on the same run and SAU.

    Returns (agreement per judge and dimension incl. ``overall``, verdict confusion counts); both empty
    with the right columns when no judge is named ``reference``. The confusion keeps ``error`` rows
    (they show where a judge fails); the metrics drop them.
    """
    return agreement_tables(agreement_pairs(judgments, reference))
