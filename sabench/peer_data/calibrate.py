"""Calibration tables of a results folder against the benchmark's own published numbers.

    python -m sabench.peer_data.calibrate --results results-sabench --sabench-data ../shared/sabench
    python -m sabench.peer_data.calibrate --results results-paperbench \\
        --paperbench-data ../shared/paperbench

Prints Markdown: for SA-Bench, per agent the ``reference`` judge's overall score from our tables next
to the mean over papers of SA-Bench's per-paper ``overall_score`` (its published numbers, rounded to 4
places in its files) and the ``static`` judge's score; for PaperBench, per case the ``reference``
judge's weighted tree score next to grade.json's ``final_score``; then the judge agreement table and,
when the drift rule ran, the drift-injection summary.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pandas as pd


def _fmt(value: float, digits: int = 4) -> str:
    return (
        "–"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else (f"{value:.{digits}f}")
    )


def _markdown(frame: pd.DataFrame, digits: int = 4) -> str:
    cols = list(frame.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in frame.itertuples(index=False):
        cells = []
        for col, v in zip(cols, row, strict=True):
            if col == "difference":
                cells.append(f"{v:+.5f}".replace("-0.00000", "+0.00000"))
            elif isinstance(v, float):
                cells.append(_fmt(v, digits))
            else:
                cells.append(str(v).replace("|", "\\|"))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def sabench_table(tables: Path, data: Path) -> pd.DataFrame:
    """Per agent: our reference-judge score, SA-Bench's published per-paper mean, the static score."""
    scores = pd.read_parquet(tables / "scores_by_agent.parquet")
    overall = scores[scores["dimension"] == "overall"]
    by_run = pd.read_parquet(tables / "scores_by_run.parquet")
    rows = []
    for agent in sorted(overall[overall["judge"] == "reference"]["agent"]):
        papers = sorted(
            by_run[(by_run["agent"] == agent) & (by_run["judge"] == "reference")]["paper"].unique()
        )
        published = [
            json.loads((data / "reference" / agent / f"{p}.json").read_text())["overall_score"]
            for p in papers
        ]
        ours = overall[(overall["agent"] == agent) & (overall["judge"] == "reference")]
        static = overall[(overall["agent"] == agent) & (overall["judge"] == "static")]
        ours_v = float(ours["score"].iloc[0])
        pub_v = sum(published) / len(published) if published else math.nan
        rows.append(
            {
                "agent": agent,
                "papers": len(papers),
                "reference judge (ours)": ours_v,
                "SA-Bench per-paper mean": pub_v,
                "difference": ours_v - pub_v,
                "static judge": float(static["score"].iloc[0]) if len(static) else math.nan,
            }
        )
    return pd.DataFrame(rows)


def paperbench_table(tables: Path, data: Path) -> pd.DataFrame:
    from sabench.scoring import claim_scores, tree_score

    trees = pd.read_parquet(tables / "tree_scores.parquet")
    saus = pd.read_parquet(tables / "saus.parquet")
    judgments = pd.read_parquet(tables / "judgments.parquet")
    judgments = judgments.assign(value=claim_scores(judgments).to_numpy())
    rows = []
    for paper in sorted(trees["paper"].unique()):
        grade = json.loads((data / "case_study" / paper / "grade.json").read_text())
        ref = trees[(trees["paper"] == paper) & (trees["judge"] == "reference")]
        static = trees[(trees["paper"] == paper) & (trees["judge"] == "static")]
        mine = judgments[judgments["paper"] == paper]
        graded = set(mine[mine["judge"] == "reference"]["sau_id"])
        static_rows = mine[(mine["judge"] == "static") & mine["sau_id"].isin(graded)]
        same_leaves = (
            tree_score(
                saus[saus["paper"] == paper],
                dict(zip(static_rows["sau_id"], static_rows["value"], strict=True)),
            )
            if len(static_rows)
            else math.nan
        )
        rows.append(
            {
                "paper": paper,
                "leaves graded": int(ref["n_leaves_judged"].iloc[0]) if len(ref) else 0,
                "leaves": int(ref["n_leaves"].iloc[0]) if len(ref) else 0,
                "reference tree score (ours)": float(ref["score"].iloc[0])
                if len(ref)
                else math.nan,
                "grade.json final_score": float(grade["final_score"]),
                "static, graded leaves": same_leaves,
                "static, all leaves": float(static["score"].iloc[0]) if len(static) else math.nan,
            }
        )
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    from sabench.steps import ArgumentParser

    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, required=True)
    parser.add_argument("--sabench-data", type=Path)
    parser.add_argument("--paperbench-data", type=Path)
    args = parser.parse_args(argv)
    tables = args.results / "tables"
    if not (tables / "scores_by_agent.parquet").is_file():
        print(f"error: {tables}: no tables (run the workflow first)", file=sys.stderr)
        return 2
    if args.sabench_data:
        print("### SA-Bench: agent scores (overall)\n")
        print(_markdown(sabench_table(tables, args.sabench_data)))
        print()
    if args.paperbench_data:
        print("### PaperBench: weighted rubric-tree scores\n")
        print(_markdown(paperbench_table(tables, args.paperbench_data)))
        print()
    agreement = pd.read_parquet(tables / "judge_agreement.parquet")
    if not agreement.empty:
        print("### Agreement with judge `reference`\n")
        print(_markdown(agreement, 3))
        print()
    drift = tables / "drift_injection.parquet"
    if drift.is_file():
        from sabench.drift import drift_summary

        print("### Drift injection\n")
        print(_markdown(drift_summary(pd.read_parquet(drift)), 3))
    return 0


if __name__ == "__main__":
    sys.exit(main())
