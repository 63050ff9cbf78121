"""Scoring rules on hand-computed numbers, plus both benchmarks' own published scores as a check."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from sabench import scoring, stats


def judgments(rows: list[tuple], judge: str = "static") -> pd.DataFrame:
    """Rows of (agent, paper, seed, sau_id, dimension, verdict, score)."""
    frame = pd.DataFrame(
        rows, columns=["agent", "paper", "seed", "sau_id", "dimension", "verdict", "score"]
    )
    frame["judge"] = judge
    frame["failure_mode"] = None
    return frame


def by(frame: pd.DataFrame, **keys: str) -> pd.Series:
    mask = pd.Series(True, index=frame.index)
    for key, value in keys.items():
        mask &= frame[key] == value
    assert mask.sum() == 1, keys
    return frame[mask].iloc[0]


# --------------------------------------------------------------------------- SA-Bench's rule


RUNS = judgments(
    [
        ("A", "P1", "0", "a1", "D1", "aligned", 1.0),
        ("A", "P1", "0", "a2", "D1", "drifted", 0.0),
        ("A", "P1", "0", "b1", "D2", "partial", 0.5),
        ("A", "P1", "1", "a1", "D1", "aligned", 1.0),
        ("A", "P1", "1", "a2", "D1", "aligned", 1.0),
        ("A", "P1", "1", "b1", "D2", "error", math.nan),
        ("A", "P2", "0", "c1", "D1", "partial", 0.25),
        ("A", "P2", "0", "d1", "D3", "missing", 0.0),
        ("A", "P2", "0", "d2", "D3", "aligned", 1.0),
    ]
)


def test_run_scores_mean_of_dimension_means_with_errors_excluded() -> None:
    runs = scoring.run_scores(RUNS)
    assert by(runs, seed="0", paper="P1", dimension="D1")["score"] == 0.5
    assert by(runs, seed="0", paper="P1", dimension="overall")["score"] == 0.5
    # seed 1: D2 holds only an error -> NaN, left out of overall; the error is counted
    d2 = by(runs, seed="1", paper="P1", dimension="D2")
    assert math.isnan(d2["score"]) and d2["n_saus"] == 0 and d2["n_error"] == 1
    overall = by(runs, seed="1", paper="P1", dimension="overall")
    assert overall["score"] == 1.0 and overall["n_saus"] == 2 and overall["n_error"] == 1
    assert by(runs, paper="P2", dimension="overall")["score"] == pytest.approx(0.375)
    assert list(runs.columns) == scoring.RUN_SCORE_COLUMNS


@pytest.mark.parametrize("n_scored,n_error", [(1, 2), (1, 7), (2, 3), (3, 3), (4, 1)])
def test_a_score_resting_on_fewer_saus_than_errors_is_withheld(n_scored: int, n_error: int) -> None:
    """Errors leave SAUs out; a run whose judged SAUs are outnumbered by its errors (a check
    killed, a provider down for most of the run) gets no score, not a score of the few left."""
    rows = [("A", "P", "0", f"s{i}", "D2", "aligned", 1.0) for i in range(n_scored)]
    rows += [("A", "P", "0", f"e{i}", "D2", "error", math.nan) for i in range(n_error)]
    runs = scoring.run_scores(judgments(rows))
    for dim in ("overall", "D2"):
        row = by(runs, dimension=dim)
        assert (row["n_saus"], row["n_error"]) == (n_scored, n_error)
        assert math.isnan(row["score"]) == (n_error > n_scored), row.to_dict()
    agents = scoring.agent_scores(runs)
    overall = agents[agents["dimension"] == "overall"].iloc[0]
    assert overall["n_papers"] == (0 if n_error > n_scored else 1)


def test_undetermined_is_counted_but_neither_credit_nor_drift() -> None:
    """An abstention is judged (counted apart) and leaves the mean to the verdicts the judge gave:
    a drift beside it still costs the run, an abstention does not raise a score."""
    rows = [
        ("A", "P", "0", "a", "D1", "aligned", 1.0),
        ("A", "P", "0", "b", "D1", "drifted", 0.0),
        ("A", "P", "0", "u", "D1", "undetermined", math.nan),
    ]
    runs = scoring.run_scores(judgments(rows))
    row = by(runs, dimension="overall")
    assert row["score"] == 0.5
    assert (row["n_saus"], row["n_error"], row["n_undetermined"]) == (2, 0, 1)
    assert math.isnan(scoring.claim_scores(judgments(rows)).iloc[2])
    taxonomy = scoring.taxonomy_counts(judgments(rows))
    drifts = taxonomy[(taxonomy["dimension"] == "overall") & taxonomy["failure_mode"].notna()]
    assert drifts.empty  # an abstention has no failure mode: no drift type


@pytest.mark.parametrize("n_aligned,n_undetermined", [(0, 3), (1, 2), (2, 2), (3, 1)])
def test_a_run_the_judge_mostly_cannot_tell_gets_no_score(
    n_aligned: int, n_undetermined: int
) -> None:
    """Abstentions count with errors against the scored SAUs: a run whose every (or most)
    claims are undetermined gets no score, never the full credit of the few it could tell."""
    rows = [("A", "P", "0", f"s{i}", "D2", "aligned", 1.0) for i in range(n_aligned)]
    rows += [
        ("A", "P", "0", f"u{i}", "D2", "undetermined", math.nan) for i in range(n_undetermined)
    ]
    rows += [("A", "P", "0", "e", "D2", "error", math.nan)]
    row = by(scoring.run_scores(judgments(rows)), dimension="overall")
    assert (row["n_error"], row["n_undetermined"]) == (1, n_undetermined)
    assert math.isnan(row["score"]) == (n_undetermined + 1 > n_aligned), row.to_dict()


def test_agent_score_averages_seeds_within_paper_before_papers() -> None:
    agents = scoring.agent_scores(scoring.run_scores(RUNS))
    overall = by(agents, dimension="overall")
    # P1 = mean(0.5, 1.0) = 0.75, P2 = 0.375 -> 0.5625 (a flat mean over runs would give 0.625)
    assert overall["score"] == pytest.approx(0.5625)
    assert overall["n_papers"] == 2
    assert overall["ci_low"] <= overall["score"] <= overall["ci_high"]
    assert overall["ci_low"] >= 0.375 and overall["ci_high"] <= 0.75
    assert by(agents, dimension="D1")["score"] == pytest.approx((0.75 + 0.25) / 2)
    d2 = by(agents, dimension="D2")  # one paper: nothing to resample
    assert (d2["score"], d2["ci_low"], d2["ci_high"], d2["n_papers"]) == (0.5, 0.5, 0.5, 1)
    assert list(agents.columns) == scoring.AGENT_SCORE_COLUMNS
    assert list(agents["dimension"]) == ["overall", "D1", "D2", "D3"]


def test_few_papers_flags_intervals_below_the_threshold() -> None:
    """Two papers (RUNS) are flagged; the same runs spread over MIN_PAPERS papers are not."""
    assert scoring.agent_scores(scoring.run_scores(RUNS))["few_papers"].tolist() == [True] * 4
    many = pd.concat(
        [RUNS.assign(paper=RUNS["paper"] + f"-{i}") for i in range(3)], ignore_index=True
    )  # 6 papers in overall and D1; D2 and D3 each lie in 3 of them
    agents = scoring.agent_scores(scoring.run_scores(many)).set_index("dimension")
    assert agents["n_papers"].to_dict() == {"overall": 6, "D1": 6, "D2": 3, "D3": 3}
    assert agents["few_papers"].to_dict() == {"overall": False, "D1": False, "D2": True, "D3": True}
    assert agents["few_papers"].dtype == bool
    edge = RUNS[RUNS["paper"] == "P1"]
    edge = pd.concat(
        [edge.assign(paper=f"P{i}") for i in range(stats.MIN_PAPERS)], ignore_index=True
    )
    at_threshold = by(scoring.agent_scores(scoring.run_scores(edge)), dimension="overall")
    assert at_threshold["n_papers"] == stats.MIN_PAPERS and not at_threshold["few_papers"]
    assert scoring.agent_scores(scoring.run_scores(RUNS.iloc[:0])).columns.tolist() == (
        scoring.AGENT_SCORE_COLUMNS
    )


def test_fixed_verdicts_override_a_stray_score() -> None:
    frame = judgments([("A", "P", "0", "x", "D1", "missing", math.nan)])
    assert scoring.claim_scores(frame).tolist() == [0.0]


def test_bootstrap_is_deterministic_and_degenerate_cases() -> None:
    values = [0.1, 0.4, 0.35, 0.8, 0.6]
    assert stats.bootstrap_ci(values) == stats.bootstrap_ci(values)
    low, high = stats.bootstrap_ci(values)
    assert low < sum(values) / len(values) < high
    assert stats.bootstrap_ci([0.3]) == (0.3, 0.3)
    assert all(math.isnan(v) for v in stats.bootstrap_ci([]))


def test_error_taxonomy_shares_sum_to_one() -> None:
    tax = scoring.error_taxonomy(RUNS)
    overall = tax[tax["dimension"] == "overall"]
    assert overall["count"].sum() == len(RUNS)
    assert overall["share"].sum() == pytest.approx(1.0)
    assert by(overall, verdict="error")["count"] == 1
    assert list(tax.columns) == scoring.TAXONOMY_COLUMNS


# --------------------------------------------------------------------------- tree


def small_tree() -> pd.DataFrame:
    """root -> A (w 2): a1 (w 1), a2 (w 3); B (w 1): b1 (w 1), B1 (w 1): b2 (w 1)."""
    return pd.DataFrame(
        {
            "sau_id": ["a1", "a2", "b1", "b2"],
            "parent": ["root/A", "root/A", "root/B", "root/B/B1"],
            "weight": [1.0, 3.0, 1.0, 1.0],
            "parent_weights": [[1.0, 2.0], [1.0, 2.0], [1.0, 1.0], [1.0, 1.0, 1.0]],
        }
    )


def test_tree_score_weighted_bottom_up_and_pruned() -> None:
    saus = small_tree()
    weights = {"root": 1.0, "A": 2.0, "B": 1.0, "B1": 1.0}
    assert scoring.node_weights_from_saus(saus) == weights
    # A = (1*1 + 3*0)/4 = 0.25; b2 unjudged -> B1 pruned -> B = 1; root = (2*.25 + 1*1)/3 = 0.5
    assert scoring.tree_score(saus, {"a1": 1.0, "a2": 0.0, "b1": 1.0}, weights) == 0.5
    # an error (NaN) prunes like a missing row
    assert scoring.tree_score(saus, {"a1": 1.0, "a2": 0.0, "b1": 1.0, "b2": math.nan}) == 0.5
    # b2 scored 0 is not pruned: B1 = 0, B = 0.5, root = (0.5 + 0.5)/3
    assert scoring.tree_score(saus, {"a1": 1, "a2": 0, "b1": 1, "b2": 0}) == pytest.approx(1 / 3)
    # caller-given weights win over the column
    flat = {"A": 1.0, "B": 1.0}
    assert scoring.tree_score(saus, {"a1": 1.0, "a2": 0.0, "b1": 1.0}, flat) == 0.625
    assert math.isnan(scoring.tree_score(saus, {}))
    assert scoring.RubricTree.from_saus(saus).n_judged({"a1": 1.0, "b2": math.nan}) == 1


def test_conflicting_node_weights_are_refused() -> None:
    saus = small_tree()
    saus.at[1, "parent_weights"] = [1.0, 5.0]
    with pytest.raises(ValueError, match="'A'"):
        scoring.node_weights_from_saus(saus)


def test_has_tree() -> None:
    assert scoring.has_tree(small_tree())
    assert not scoring.has_tree(pd.DataFrame({"sau_id": ["x"], "parent": [None]}))


def _rubric_leaves(node: dict, ids: list[str], weights: list[float], out: list[dict]) -> None:
    if not node.get("sub_tasks"):
        out.append(
            {
                "sau_id": node["id"],
                "parent": "/".join(ids),
                "weight": float(node["weight"]),
                "parent_weights": weights,
            }
        )
    for child in node.get("sub_tasks") or []:
        _rubric_leaves(child, [*ids, node["id"]], [*weights, float(node["weight"])], out)


@pytest.mark.shared
def test_tree_score_matches_paperbench_grades(paperbench_data: Path) -> None:
    """grade.json's final_score of every case study, from the rubric and its graded leaves only."""
    cases = sorted((paperbench_data / "case_study").iterdir())
    assert cases
    for case in cases:
        rubric = json.loads((paperbench_data / "rubrics" / case.name / "rubric.json").read_text())
        leaves: list[dict] = []
        _rubric_leaves(rubric, [], [], leaves)
        grade = json.loads((case / "grade.json").read_text())
        scores = {n["id"]: float(n["score"]) for n in grade["node_results"]}
        assert len(scores) < len(leaves)  # code-only grading: the rest is pruned
        got = scoring.tree_score(pd.DataFrame(leaves), scores)
        assert round(got, 4) == pytest.approx(grade["final_score"]), case.name


@pytest.mark.shared
def test_run_score_matches_sabench_reference(sabench_data: Path) -> None:
    """SA-Bench's own overall_score of a run equals our rule on its claim scores."""
    files = sorted((sabench_data / "reference").glob("*/*.json"))[:40]
    assert files
    for path in files:
        ref = json.loads(path.read_text())
        rows = []
        for dim, block in ref["dimensions"].items():
            for claim in block["claims"]:
                s = float(claim["score"])
                verdict = {1.0: "aligned", 0.0: "drifted"}.get(s, "partial")
                rows.append(("A", ref["paper_id"], "0", claim["id"], dim, verdict, s))
        runs = scoring.run_scores(judgments(rows))
        overall = by(runs, dimension="overall")["score"]
        assert overall == pytest.approx(ref["overall_score"], abs=1e-4), path


# --------------------------------------------------------------------------- agreement


def test_kappa_identical_and_hand_computed() -> None:
    assert stats.kappa_quadratic([0, 0.25, 0.5, 1, 1], [0, 0.25, 0.5, 1, 1]) == 1.0
    # binary: po = .75, pe = .5 -> 0.5 (quadratic = unweighted for two levels)
    assert stats.kappa_quadratic([0, 0, 1, 1], [0, 1, 1, 1], levels=None) == pytest.approx(0.5)
    assert stats.kappa_quadratic([0, 0, 1, 1], [0, 1, 1, 1]) == pytest.approx(0.5)
    # three levels: observed weighted disagreement 1/12, expected 15/36 -> 1 - 1/5
    assert stats.kappa_quadratic([0, 0.5, 1], [0, 1, 1], levels=(0, 0.5, 1)) == pytest.approx(0.8)
    # a constant rater against a varied one: no better than chance
    assert stats.kappa_quadratic([0, 0, 0, 0], [0, 0.5, 1, 0]) == pytest.approx(0.0)
    assert math.isnan(stats.kappa_quadratic([0, 0], [0, 0]))
    assert math.isnan(stats.kappa_quadratic([], []))


def test_other_agreement_measures() -> None:
    assert stats.spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert math.isnan(stats.spearman([1, 1, 1], [1, 2, 3]))
    assert stats.exact_agreement([0, 0.5, 1], [0, 0.5, 0]) == pytest.approx(2 / 3)
    assert stats.mean_absolute_error([0, 0.5, 1], [0, 0.25, 0]) == pytest.approx(1.25 / 3)
    assert stats.snap([0.1, 0.3, 0.74, 0.9]).tolist() == [0.0, 0.25, 0.75, 1.0]


def test_agreement_against_reference() -> None:
    ref = judgments(
        [
            ("A", "P", "0", "x", "D1", "aligned", 1.0),
            ("A", "P", "0", "y", "D1", "drifted", 0.0),
            ("A", "P", "0", "z", "D2", "aligned", 1.0),
            ("A", "P", "0", "w", "D2", "aligned", 1.0),
        ],
        judge="reference",
    )
    judge = judgments(
        [
            ("A", "P", "0", "x", "D1", "aligned", 1.0),
            ("A", "P", "0", "y", "D1", "missing", 0.0),
            ("A", "P", "0", "z", "D2", "drifted", 0.0),
            ("A", "P", "0", "w", "D2", "error", math.nan),
        ]
    )
    table, confusion = scoring.agreement(pd.concat([ref, judge], ignore_index=True))
    overall = by(table, dimension="overall")
    assert overall["judge"] == "static" and overall["n"] == 3  # the error pair is dropped
    assert overall["exact_agreement"] == pytest.approx(2 / 3)
    assert overall["mae"] == pytest.approx(1 / 3)
    assert by(table, dimension="D1")["kappa_quadratic"] == 1.0
    assert list(table["dimension"]) == ["overall", "D1", "D2"]
    assert int(by(confusion, reference_verdict="aligned", judge_verdict="error")["count"]) == 1
    assert confusion["count"].sum() == 4
    no_ref_table, no_ref_conf = scoring.agreement(judge)
    assert no_ref_table.empty and list(no_ref_table.columns) == scoring.AGREEMENT_COLUMNS
    assert no_ref_conf.empty and list(no_ref_conf.columns) == scoring.CONFUSION_COLUMNS
