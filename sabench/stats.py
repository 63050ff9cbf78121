"""Every statistic sabench reports, implemented once: scoring, the judges and the benchmarks use these.

Agreement of two raters on paired scores (``agreement_metrics``)
    Exact agreement and quadratic-weighted Cohen's kappa are categorical: they compare scores snapped
    to SA-Bench's grid ``SCORE_LEVELS`` (0, .25, .5, .75, 1). MAE and Spearman's rho use the raw
    scores.

Interval of an agent's score (``bootstrap_ci``)
    Percentile bootstrap of the mean over papers, fixed seed (reruns are byte-identical). An interval
    over fewer than ``MIN_PAPERS`` papers says little and is flagged (``few_papers``).

Interval of a rate (``wilson_interval``)
    Wilson's score interval of k successes in n trials (the canary papers' fabrication rate): it
    stays inside [0, 1] and is not empty at k = 0 or k = n, where the normal interval collapses.

Degenerate inputs: one answer each, the one scipy / scikit-learn give where they give one
    * no pairs (length 0): every measure is NaN; ``bootstrap_ci`` gives ``(nan, nan)``.
    * a NaN score in either sequence: NaN (propagated, as scipy's default ``nan_policy``); callers
      drop unscored pairs first. ``bootstrap_ci`` instead leaves NaN values out: a paper without a
      score is not a paper to resample.
    * kappa when the chance disagreement is zero (both raters gave one and the same level
      throughout, length 1 included): NaN, as ``cohen_kappa_score``; two constant raters on
      different levels give 0.0.
    * Spearman with fewer than 2 pairs or a constant side: NaN, as ``scipy.stats.spearmanr``; ties
      share their average rank.
    * ``bootstrap_ci`` of one value: ``(value, value)``, nothing to resample.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

#: SA-Bench's claim score scale; the categorical measures snap scores onto it.
SCORE_LEVELS = (0.0, 0.25, 0.5, 0.75, 1.0)
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0
BOOTSTRAP_LEVEL = 0.95
#: An interval over fewer papers than this is flagged (``few_papers``) in every table and report.
MIN_PAPERS = 5
#: How summary.md and the report mark such a score, and the footnote that explains the mark.
FEW_PAPERS_MARK = "†"
FEW_PAPERS_NOTE = f"{FEW_PAPERS_MARK} interval over fewer than {MIN_PAPERS} papers"


def _floats(values: Iterable[float]) -> np.ndarray:
    return np.asarray(list(values), dtype=float)


def _pairs(a: Iterable[float], b: Iterable[float]) -> tuple[np.ndarray, np.ndarray] | None:
    """Both sides as float arrays; None when there are no pairs or a NaN makes every measure NaN."""
    x, y = _floats(a), _floats(b)
    if x.shape != y.shape:
        raise ValueError(f"paired scores of different lengths: {x.size} and {y.size}")
    if x.size == 0 or np.isnan(x).any() or np.isnan(y).any():
        return None
    return x, y


def snap(values: Iterable[float], levels: Sequence[float] = SCORE_LEVELS) -> np.ndarray:
    """Each value replaced by the nearest level (ties go to the lower one; NaN stays NaN)."""
    data = _floats(values)
    grid = np.asarray(levels, dtype=float)
    if not data.size:
        return data
    out = grid[np.abs(data[:, None] - grid[None, :]).argmin(axis=1)]
    return np.where(np.isnan(data), math.nan, out)


def nearest_level(value: float, levels: Sequence[float] = SCORE_LEVELS) -> float:
    """The level nearest one score (ties go to the lower one)."""
    return float(snap([value], levels)[0])


def exact_agreement(a: Iterable[float], b: Iterable[float]) -> float:
    """Share of pairs with equal scores (to float tolerance)."""
    pairs = _pairs(a, b)
    return math.nan if pairs is None else float(np.mean(np.isclose(*pairs)))


def mean_absolute_error(a: Iterable[float], b: Iterable[float]) -> float:
    pairs = _pairs(a, b)
    return math.nan if pairs is None else float(np.mean(np.abs(pairs[0] - pairs[1])))


def kappa_quadratic(
    a: Iterable[float], b: Iterable[float], levels: Sequence[float] | None = SCORE_LEVELS
) -> float:
    """Cohen's kappa with quadratic weights ``(v_i - v_j)^2`` on the category values.

    With ``levels`` the inputs are snapped onto them and all levels are categories (equal to
    scikit-learn's ``cohen_kappa_score(weights="quadratic", labels=levels)`` for an evenly spaced
    grid); with ``None`` the categories are the values seen. NaN when undefined (see the module).
    """
    pairs = _pairs(a, b)
    if pairs is None:
        return math.nan
    x, y = pairs
    if levels is not None:
        x, y = snap(x, levels), snap(y, levels)
        cats = np.asarray(levels, dtype=float)
    else:
        cats = np.unique(np.concatenate([x, y]))
    ix = np.searchsorted(cats, x)
    iy = np.searchsorted(cats, y)
    k = cats.size
    observed = np.zeros((k, k))
    np.add.at(observed, (ix, iy), 1.0)
    observed /= x.size
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    weights = (cats[:, None] - cats[None, :]) ** 2
    denom = float((weights * expected).sum())
    if denom == 0.0:
        return math.nan
    return float(1.0 - (weights * observed).sum() / denom)


def spearman(a: Iterable[float], b: Iterable[float]) -> float:
    """Spearman's rho: Pearson on average ranks (ties shared); NaN when undefined (see the module)."""
    pairs = _pairs(a, b)
    if pairs is None or pairs[0].size < 2:
        return math.nan
    x = pd.Series(pairs[0]).rank(method="average").to_numpy()
    y = pd.Series(pairs[1]).rank(method="average").to_numpy()
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(np.corrcoef(x, y)[0, 1])


def agreement_metrics(judge: Sequence[float], reference: Sequence[float]) -> dict[str, float]:
    """The four agreement numbers of one judge against the reference on paired scores."""
    sj, sr = snap(judge), snap(reference)
    return {
        "n": len(judge),
        "exact_agreement": exact_agreement(sj, sr),
        "mae": mean_absolute_error(judge, reference),
        "kappa_quadratic": kappa_quadratic(sj, sr),
        "spearman": spearman(judge, reference),
    }


def bootstrap_ci(
    values: Iterable[float],
    *,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    level: float = BOOTSTRAP_LEVEL,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean (NaN values left out; see the module for the rest)."""
    data = np.asarray([v for v in values if not math.isnan(v)], dtype=float)
    if data.size == 0:
        return math.nan, math.nan
    if data.size == 1:
        return float(data[0]), float(data[0])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, data.size, size=(n_resamples, data.size))
    means = data[idx].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return float(low), float(high)


def wilson_interval(k: int, n: int, level: float = BOOTSTRAP_LEVEL) -> tuple[float, float]:
    """Wilson's score interval of the rate ``k / n``; ``(nan, nan)`` when ``n`` is 0."""
    if n <= 0:
        return math.nan, math.nan
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    rate = k / n
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low = 0.0 if k == 0 else max(0.0, centre - half)
    return low, 1.0 if k == n else min(1.0, centre + half)


def few_papers(n_papers: int) -> bool:
    """Whether an interval over ``n_papers`` papers is too thin to read like the others."""
    return n_papers < MIN_PAPERS
