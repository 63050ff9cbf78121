"""The static judge's confidence: bounded, monotone in the evidence, higher on exact matches, fitted
by a monotone map, and an annotation only (the verdicts do not change with it)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest

from sabench.judges.static import analyze_claims, judge_static
from sabench.judges.static import confidence as conf
from sabench.judges.static.outcome import Outcome

REPO = Path(__file__).resolve().parents[1]
DRIFTED = REPO / "resources" / "submissions" / "drifted" / "ridge-gd"


def saus() -> list[dict[str, str]]:
    import yaml

    data = yaml.safe_load((REPO / "resources/papers/ridge-gd/saus.yaml").read_text())
    return [
        {"paper": "ridge-gd", "sau_id": s["id"], "dimension": s["dimension"], "claim": s["claim"]}
        for s in data["saus"]
    ]


def claim(text: str, dimension: str = "D1"):
    return analyze_claims([{"sau_id": "p-1", "dimension": dimension, "claim": text}])[0]


def aligned(features: dict[str, float], support: float = -1.0) -> Outcome:
    return Outcome("aligned", 1.0, None, "x", [(0, 1, 1)], support, dict(features))


# --------------------------------------------------------------------------------- the table


def test_the_fitted_table_is_bounded_and_monotone() -> None:
    assert set(conf.TABLE) == set(conf.GROUPS)
    for group, steps in conf.TABLE.items():
        starts, values = [s for s, _ in steps], [v for _, v in steps]
        assert starts[0] == 0.0 and starts == sorted(set(starts)) and starts[-1] < 1.0, group
        assert all(0.0 <= v <= 1.0 for v in values), group
        assert values == sorted(values), f"{group} is not non-decreasing"
        # each step is read from its start up to the next one
        for (start, value), nxt in zip(steps, [*starts[1:], 1.0], strict=True):
            assert conf.calibrated(group, start) == value
            assert conf.calibrated(group, (start + nxt) / 2) == value


def test_confidence_is_bounded_for_any_raw_score() -> None:
    for group in (*conf.GROUPS, None, "nope"):
        for raw in (-5.0, -0.1, 0.0, 0.05, 0.5, 0.999, 1.0, 1.5, 9.0):
            assert 0.0 <= conf.calibrated(group, raw) <= 1.0
    assert conf.calibrated(None, 1.0) == 0.0 == conf.confidence(None)


def test_confidence_is_monotone_in_each_signal() -> None:
    """More evidence in the verdict's direction, more specific evidence or more rules agreeing
    never lower the raw score or the confidence (within a verdict group)."""
    rng = random.Random(7)
    for _ in range(2000):
        group = rng.choice(conf.GROUPS)
        asked = rng.randint(1, 4)
        a = conf.Signals(group, rng.randint(0, 2), rng.randint(0, asked), asked, rng.random())
        b = conf.Signals(
            group,
            rng.randint(a.specificity, 2),
            rng.randint(a.agreeing, asked),
            asked,
            rng.uniform(a.strength, 1.0),
        )
        assert 0.0 <= a.raw <= b.raw <= 1.0
        assert conf.confidence(a) <= conf.confidence(b)


def test_higher_on_an_exact_match_than_on_a_name_or_on_nothing() -> None:
    """Three aligned verdicts on the same coverage: every value found with its name (exact), the
    claim's entities found (names), term coverage alone (nothing specific)."""
    features = {"cov_g": 0.9, "cov_w": 0.7, "docs": 0.0}
    values = claim("The learning rate is 0.05 and the batch size is 64.")
    exact = conf.signals(values, aligned({**features, "anchored": 1.0, "num_frac": 1.0}))
    names = conf.signals(
        claim("We evaluate on ImageNet with ResNet-50.", "D3"),
        aligned({**features, "anchored": 1.0, "ent_frac": 1.0}),
    )
    nothing = conf.signals(claim("The model is trained with early stopping."), aligned(features))
    assert exact and names and nothing
    assert (exact.specificity, names.specificity, nothing.specificity) == (2, 1, 0)
    assert exact.raw > names.raw > nothing.raw
    assert conf.confidence(exact) >= conf.confidence(names) >= conf.confidence(nothing)
    assert conf.confidence(exact) > conf.confidence(nothing)


def test_a_contradiction_of_its_own_is_surer_than_a_level_lost() -> None:
    """A named setting with another value (the rule's own drift) against a drift reached by
    demotion beside support (a stub or an inverse operator costing the last level)."""
    values = claim("The learning rate is 0.05.")
    base = {"cov_g": 0.8, "cov_w": 0.6, "num_frac": 0.0, "n_conf": 1.0}
    own = Outcome("drifted", 0.0, "implementation_mismatch", "x", [], -1.0, dict(base))
    demoted = Outcome("drifted", 0.0, "implementation_mismatch", "x", [], -1.0, {**base})
    demoted.features["demoted"] = 1.0
    a, b = conf.signals(values, own), conf.signals(values, demoted)
    assert a and b and a.raw > b.raw and conf.confidence(a) >= conf.confidence(b)


def test_a_missing_verdict_is_surer_the_less_support_it_had() -> None:
    text = claim("The learning rate is 0.05.")
    out = []
    for support in (0.3, 0.2, 0.1, 0.0):
        o = Outcome("missing", 0.0, "omission", "x", [], support, {"cov_g": support})
        sig = conf.signals(text, o)
        assert sig is not None and sig.group == "absent"
        out.append((sig.raw, conf.confidence(sig)))
    assert out == sorted(out)
    assert out[-1][0] > out[0][0]


# --------------------------------------------------------------------------------- the judge


def test_every_static_judgment_carries_a_bounded_confidence() -> None:
    judgments = judge_static(DRIFTED, saus())
    assert judgments and all(0.0 <= j.confidence <= 1.0 for j in judgments)
    assert all(j.decided_by is None for j in judgments)
    assert len({j.confidence for j in judgments}) > 1  # it tells verdicts apart


def test_nothing_to_read_is_the_surest_missing_and_an_error_has_none(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    got = judge_static(empty, saus()[:3])
    top = conf.confidence(conf.NOTHING_TO_READ)
    assert top == conf.TABLE["absent"][-1][1] == max(v for _, v in conf.TABLE["absent"])
    assert [(j.verdict, j.confidence) for j in got] == [("missing", top)] * 3
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert [j.confidence for j in judge_static(a_file, saus()[:2])] == [0.0, 0.0]
    error = Outcome("error", 0.0, None, "x", [])
    assert conf.signals(claim("x"), error) is None and conf.rate(None, error).confidence == 0.0


def test_the_confidence_is_an_annotation_the_verdicts_stay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Any table gives the same verdicts, scores, evidence and reasoning: only confidence moves."""
    before = judge_static(DRIFTED, saus())
    monkeypatch.setattr(conf, "TABLE", {g: ((0.0, 1.0),) for g in conf.GROUPS})
    after = judge_static(DRIFTED, saus())
    strip = [(j.sau_id, j.verdict, j.score, j.evidence, j.reasoning) for j in before]
    assert strip == [(j.sau_id, j.verdict, j.score, j.evidence, j.reasoning) for j in after]
    assert {j.confidence for j in after} == {1.0} != {j.confidence for j in before}


# --------------------------------------------------------------------------------- the fit


def test_pool_adjacent_is_monotone_and_keeps_the_weighted_mean() -> None:
    assert conf.pool_adjacent([0.1, 0.2, 0.3], [1, 1, 1]) == [0.1, 0.2, 0.3]
    assert conf.pool_adjacent([0.5, 0.1], [3, 1]) == pytest.approx([0.4, 0.4])
    rng = random.Random(3)
    for _ in range(300):
        n = rng.randint(1, 12)
        values = [rng.random() for _ in range(n)]
        weights = [rng.uniform(0.1, 5) for _ in range(n)]
        fitted = conf.pool_adjacent(values, weights)
        assert len(fitted) == n and fitted == sorted(fitted)
        mean = sum(v * w for v, w in zip(values, weights, strict=True))
        assert sum(f * w for f, w in zip(fitted, weights, strict=True)) == pytest.approx(mean)
    # the nearest monotone sequence: no non-decreasing candidate on a grid is closer
    values, weights = [0.6, 0.2, 0.5, 0.4], [1.0, 2.0, 1.0, 1.0]
    best = conf.pool_adjacent(values, weights)

    def loss(seq: list[float] | tuple[float, ...]) -> float:
        return sum(w * (s - v) ** 2 for s, v, w in zip(seq, values, weights, strict=True))

    grid = [i / 20 for i in range(21)]
    candidates = (c for c in itertools.product(grid, repeat=4) if list(c) == sorted(c))
    assert loss(best) <= min(loss(c) for c in candidates) + 1e-12


def test_fit_table_follows_the_data_and_leans_on_the_group_where_bins_are_thin() -> None:
    rng = random.Random(11)
    rows = []
    for _ in range(4000):
        raw = rng.random()
        rows.append(("absent", raw, rng.random() < 0.2 + 0.7 * raw))
    rows += [("aligned", 0.99, True)] * 2 + [("aligned", 0.0, False)] * 2
    table = conf.fit_table(rows)
    absent = [v for _, v in table["absent"]]
    assert absent == sorted(absent) and absent[0] < 0.35 and absent[-1] > 0.75
    assert len(absent) > conf.BINS // 2  # it follows the data, bin by bin
    assert table["mid"] == ((0.0, 0.5),)  # no data: no opinion
    # two verdicts per end: drawn to their group's share (0.5) with weight PRIOR
    low, high = table["aligned"][0][1], table["aligned"][-1][1]
    assert low == pytest.approx(0.5 * conf.PRIOR / (2 + conf.PRIOR), abs=1e-3)
    assert high == pytest.approx(1 - low, abs=1e-3) and table["aligned"][-1][0] == 0.95
    source = conf.table_source(table)
    scope: dict[str, object] = {}
    exec(source, scope)  # the printed constant is the table
    assert scope["TABLE"] == table


def test_the_module_names_the_command_that_regenerates_its_table() -> None:
    assert "benchmarks/sabench_agreement.py --data ../shared/sabench --fit-confidence" in (
        conf.__doc__ or ""
    )
    assert len(conf.FIT_CONFIGS) == 6
