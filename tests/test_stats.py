"""sabench.stats against scipy and scikit-learn, on random inputs and on every degenerate one."""

from __future__ import annotations

import importlib.util
import math
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score

from sabench import stats

REPO = Path(__file__).resolve().parents[1]
LEVELS = np.asarray(stats.SCORE_LEVELS)
SEEDS = range(300)


def same(ours: float, theirs: float) -> bool:
    """Equal to float tolerance, NaN equal to NaN."""
    return (math.isnan(ours) and math.isnan(theirs)) or ours == pytest.approx(theirs, abs=1e-12)


def sk_kappa(a: np.ndarray, b: np.ndarray) -> float:
    """scikit-learn's quadratic kappa on SA-Bench's grid (categories = level indices)."""
    ia = np.abs(a[:, None] - LEVELS[None, :]).argmin(axis=1)
    ib = np.abs(b[:, None] - LEVELS[None, :]).argmin(axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # UndefinedMetricWarning: the NaN case, compared below
        return float(cohen_kappa_score(ia, ib, weights="quadratic", labels=range(LEVELS.size)))


def sp_rho(a: np.ndarray, b: np.ndarray) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConstantInputWarning / too few values: NaN
        return float(sps.spearmanr(a, b).statistic)


def random_pair(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Grid scores, raw scores near the grid, constant raters, correlated raters, lengths 1-40."""
    n = int(rng.integers(1, 41))
    kind = rng.integers(0, 4)
    a = rng.choice(LEVELS, n)
    if kind == 0:
        b = rng.choice(LEVELS, n)
    elif kind == 1:  # a noisy copy: kappa and rho well above 0
        b = np.clip(a + rng.choice([-0.25, 0, 0, 0.25], n), 0, 1)
    elif kind == 2:  # raw scores, snapped by the measures
        a, b = rng.random(n), rng.random(n)
    else:  # one rater constant
        b = np.full(n, rng.choice(LEVELS))
    return a, b


@pytest.mark.parametrize("seed", SEEDS)
def test_agreement_matches_scipy_and_sklearn(seed: int) -> None:
    a, b = random_pair(np.random.default_rng(seed))
    m = stats.agreement_metrics(a.tolist(), b.tolist())
    sa, sb = stats.snap(a), stats.snap(b)
    assert m["n"] == a.size
    assert same(m["kappa_quadratic"], sk_kappa(a, b))
    assert same(m["spearman"], sp_rho(a, b))
    assert same(m["exact_agreement"], float(np.mean(sa == sb)))
    assert same(m["mae"], float(np.mean(np.abs(a - b))))


def test_spearman_with_many_ties_matches_scipy() -> None:
    rng = np.random.default_rng(1)
    for _ in range(200):
        n = int(rng.integers(2, 30))
        a, b = rng.integers(0, 3, n).astype(float), rng.integers(0, 4, n).astype(float)
        assert same(stats.spearman(a, b), sp_rho(a, b))


def test_kappa_on_a_noisy_copy_is_high_and_perfect_on_a_copy() -> None:
    rng = np.random.default_rng(2)
    a = rng.choice(LEVELS, 200)
    assert stats.kappa_quadratic(a, a) == 1.0
    noisy = np.clip(a + rng.choice([-0.25, 0, 0.25], 200), 0, 1)
    assert 0.7 < stats.kappa_quadratic(a, noisy) < 1.0


def test_degenerate_inputs_have_one_answer() -> None:
    measures = (
        stats.kappa_quadratic,
        stats.spearman,
        stats.exact_agreement,
        stats.mean_absolute_error,
    )
    for f in measures:  # no pairs, or a NaN anywhere: NaN
        assert math.isnan(f([], [])), f
        assert math.isnan(f([0.5, math.nan], [0.5, 0.25])), f
        assert math.isnan(f([0.5, 1.0], [math.nan, 0.25])), f
        with pytest.raises(ValueError, match="different lengths"):
            f([0.5, 1.0], [0.5])
    # both raters constant on the same level (length 1 included): kappa undefined, as scikit-learn
    for x in ([0.5], [0.75] * 7):
        assert math.isnan(stats.kappa_quadratic(x, x))
        assert math.isnan(sk_kappa(np.asarray(x), np.asarray(x)))
    # both constant, on different levels: always disagree, no better than chance -> 0.0
    assert stats.kappa_quadratic([0.0] * 3, [1.0] * 3) == 0.0 == sk_kappa(np.zeros(3), np.ones(3))
    # one rater constant, the other not: 0.0
    assert stats.kappa_quadratic([0, 0, 0, 0], [0, 0.5, 1, 0]) == pytest.approx(0.0)
    # Spearman: one pair, or a constant side -> NaN, as scipy
    assert math.isnan(stats.spearman([0.3], [0.4])) and math.isnan(sp_rho([0.3], [0.4]))
    assert math.isnan(stats.spearman([1, 1, 1], [1, 2, 3]))
    assert stats.exact_agreement([0.5], [0.5]) == 1.0 and stats.mean_absolute_error([1], [0]) == 1


def test_snap_is_nearest_level_ties_lower_nan_kept() -> None:
    rng = np.random.default_rng(3)
    x = rng.random(1000)
    brute = [min(stats.SCORE_LEVELS, key=lambda level, v=v: abs(level - v)) for v in x]
    assert stats.snap(x).tolist() == brute
    assert stats.snap([0.125, 0.375, 0.625, 0.875]).tolist() == [0.0, 0.25, 0.5, 0.75]
    assert stats.snap([]).size == 0
    got = stats.snap([math.nan, 0.3])
    assert math.isnan(got[0]) and got[1] == 0.25
    assert stats.nearest_level(0.74) == 0.75 and math.isnan(stats.nearest_level(math.nan))


# --------------------------------------------------------------------------- bootstrap


@pytest.mark.parametrize("seed", range(8))
def test_bootstrap_matches_scipy_percentile_within_monte_carlo_error(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    values = rng.beta(2, 3, int(rng.integers(5, 40)))
    n = 20000
    ours = stats.bootstrap_ci(values, n_resamples=n, seed=seed)
    theirs = sps.bootstrap(
        (values,), np.mean, n_resamples=n, method="percentile", rng=np.random.default_rng(seed)
    ).confidence_interval
    # a 2.5% quantile of 20000 resampled means moves by about 0.03 standard errors of the mean
    tol = 0.08 * values.std(ddof=1) / math.sqrt(values.size)
    assert ours[0] == pytest.approx(theirs.low, abs=tol)
    assert ours[1] == pytest.approx(theirs.high, abs=tol)


def test_bootstrap_properties() -> None:
    rng = np.random.default_rng(4)
    widths = []
    for size in (5, 20, 80, 320):
        values = rng.random(size)
        low, high = stats.bootstrap_ci(values)
        assert low < values.mean() < high
        assert stats.bootstrap_ci(values) == (low, high)  # same seed, same interval
        assert stats.bootstrap_ci(values, seed=1) != (low, high)
        widths.append(high - low)
    assert widths == sorted(widths, reverse=True)  # shrinks with more papers
    assert widths[-1] < widths[0] / 4
    low90, high90 = stats.bootstrap_ci(values, level=0.9)
    assert low < low90 < high90 < high


def test_bootstrap_degenerate_inputs() -> None:
    assert all(math.isnan(v) for v in stats.bootstrap_ci([]))
    assert all(math.isnan(v) for v in stats.bootstrap_ci([math.nan]))
    assert stats.bootstrap_ci([0.3]) == (0.3, 0.3)
    assert stats.bootstrap_ci([0.3, math.nan]) == (0.3, 0.3)  # NaN papers are left out
    assert stats.bootstrap_ci([0.4] * 6) == pytest.approx((0.4, 0.4), abs=1e-15)
    assert stats.bootstrap_ci([0.1, math.nan, 0.9]) == stats.bootstrap_ci([0.1, 0.9])


def test_few_papers_threshold() -> None:
    assert stats.MIN_PAPERS == 5
    assert [stats.few_papers(n) for n in range(7)] == [True] * 5 + [False] * 2
    assert stats.FEW_PAPERS_NOTE == "† interval over fewer than 5 papers"


# --------------------------------------------------------------------------- one implementation


#: A statistic defined (its name a whole ``_`` component) or computed by hand: stats.py's business.
STAT_DEF = re.compile(
    r"def (\w+_)?(kappa|spearman|pearson|bootstrap|percentile|quantile|snap|to_level|level|"
    r"agreement_metrics)(_\w+)?\(|corrcoef|np\.quantile|np\.percentile|\.rank\("
)


def test_no_second_implementation_outside_stats() -> None:
    sources = [*(REPO / "sabench").rglob("*.py"), *(REPO / "benchmarks").glob("*.py")]
    found = [
        f"{path.relative_to(REPO)}:{i}"
        for path in sources
        if path.name != "stats.py"
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if STAT_DEF.search(line)
    ]
    assert not found, found


def load_benchmark(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_static_benchmark_reports_the_shared_numbers() -> None:
    """Its table is stats.agreement_metrics: kappa NaN (once 0.0) when both raters are constant."""
    bench = load_benchmark("sabench_agreement")
    rng = np.random.default_rng(5)
    pred, ref = rng.choice(LEVELS, 60), rng.choice(LEVELS, 60)
    rows = [
        ("c", "p", f"s{i}", f"D{i % 4 + 1}", p, r, "partial")
        for i, (p, r) in enumerate(zip(pred, ref, strict=True))
    ]
    overall = bench.report(rows)["overall"]
    m = stats.agreement_metrics(pred.tolist(), ref.tolist())
    assert overall["kappa_qw"] == round(m["kappa_quadratic"], 3)
    assert overall["spearman"] == round(m["spearman"], 3)
    assert (overall["exact"], overall["mae"]) == (
        round(m["exact_agreement"], 3),
        round(m["mae"], 3),
    )
    constant = [("c", "p", "s", "D1", 0.5, 0.5, "partial")] * 3
    assert math.isnan(bench.report(constant)["overall"]["kappa_qw"])
