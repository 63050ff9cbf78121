"""Collect every run of the grid into the result tables (``<results>/tables/*.parquet``).

Inputs per paper: ``papers/{paper}/paper.json`` and ``saus.parquet``; per run (agent x paper x seed):
``runs/{agent}/{paper}/{seed}/agent.json``, ``execution.json`` (optional: a grid without execution has
none) and ``judgments.parquet``. The numbers come from ``sabench.scoring``; this module only reads,
checks provenance (one SAU version per paper) and writes each table atomically.

Standalone: ``python -m sabench.aggregate --results results`` finds the runs from the folder layout.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from sabench import scoring
from sabench.contracts import JUDGMENT_COLUMNS, SAU_COLUMNS
from sabench.errors import UserError
from sabench.io import read_json, read_parquet_metadata, write_parquet

Run = tuple[str, str, str]

PAPER_COLUMNS = [
    "paper",
    "title",
    "sha256",
    "source_format",
    "n_sections",
    "n_chars",
    "n_saus",
    "sau_set_hash",
    "has_tree",
]
RUN_COLUMNS = [
    "agent",
    "paper",
    "seed",
    "agent_kind",
    "agent_status",
    "model",
    "steps",
    "agent_wall_s",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "agent_error",
    "execution_status",
    "exit_code",
    "execution_wall_s",
    "peak_mem_mb",
    "backend",
    "isolation",
    "image",
    "log_bytes",
    "metrics",
    "submission_hash",
]
COVERAGE_COLUMNS = [
    "agent",
    "judge",
    "n_runs",
    "n_runs_failed_execution",
    "n_saus_judged",
    "n_saus_error",
]
TREE_COLUMNS = ["agent", "paper", "seed", "judge", "score", "n_leaves", "n_leaves_judged"]

#: Every table ``aggregate`` writes, with its columns (``judgments``/``saus`` keep extra columns).
TABLES: dict[str, list[str]] = {
    "papers": PAPER_COLUMNS,
    "saus": [*SAU_COLUMNS, "sau_set_hash"],
    "runs": RUN_COLUMNS,
    "judgments": list(JUDGMENT_COLUMNS),
    "scores_by_run": scoring.RUN_SCORE_COLUMNS,
    "scores_by_agent": scoring.AGENT_SCORE_COLUMNS,
    "coverage": COVERAGE_COLUMNS,
    "tree_scores": TREE_COLUMNS,
    "error_taxonomy": scoring.TAXONOMY_COLUMNS,
    "judge_agreement": scoring.AGREEMENT_COLUMNS,
    "judge_confusion": scoring.CONFUSION_COLUMNS,
}
_INT_COLUMNS = {
    "n_sections",
    "n_chars",
    "n_saus",
    "n_error",
    "n_papers",
    "n_runs",
    "n_runs_failed_execution",
    "n_saus_judged",
    "n_saus_error",
    "n_leaves",
    "n_leaves_judged",
    "count",
    "n",
}
_FLOAT_COLUMNS = {
    "score",
    "ci_low",
    "ci_high",
    "share",
    "exact_agreement",
    "mae",
    "kappa_quadratic",
    "spearman",
}


# --------------------------------------------------------------------------- reading


def _read_table(path: Path) -> pd.DataFrame:
    """Read Parquet through pyarrow; a damaged file is the user's to fix, so say which."""
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path).to_pandas()
    except FileNotFoundError:
        raise UserError(path, None, "missing (did its stage run?)") from None
    except Exception as exc:  # pyarrow raises several types for a broken file
        raise UserError(path, None, f"unreadable Parquet: {exc}") from None


def _read_json(path: Path, *, required: bool = True) -> dict[str, Any]:
    if not path.is_file():
        if required:
            raise UserError(path, None, "missing (did its stage run?)")
        return {}
    try:
        data = read_json(path)
    except json.JSONDecodeError as exc:
        raise UserError(path, None, f"invalid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise UserError(path, None, "expected a JSON object")
    return data


def _concat(frames: Sequence[pd.DataFrame], columns: Sequence[str]) -> pd.DataFrame:
    """Concatenate through Arrow so all-null columns of one file take the others' types."""
    import pyarrow as pa

    frames = [f for f in frames if not f.empty]
    if not frames:
        return pd.DataFrame(columns=list(columns))
    tables = [pa.Table.from_pandas(f, preserve_index=False) for f in frames]
    return pa.concat_tables(tables, promote_options="permissive").to_pandas()


def _read_paper(root: Path, paper: str) -> tuple[dict[str, Any], pd.DataFrame, str | None]:
    folder = root / "papers" / paper
    meta = _read_json(folder / "paper.json")
    saus_path = folder / "saus.parquet"
    saus = _read_table(saus_path)
    missing = [c for c in SAU_COLUMNS if c not in saus.columns]
    if missing:
        raise UserError(saus_path, missing[0], "column missing")
    sau_hash = read_parquet_metadata(saus_path).get("sau_set_hash")
    saus["sau_set_hash"] = sau_hash
    sections = meta.get("sections") or []
    row = {
        "paper": paper,
        "title": meta.get("title"),
        "sha256": meta.get("sha256"),
        "source_format": meta.get("source_format"),
        "n_sections": len(sections) if isinstance(sections, list) else 0,
        "n_chars": meta.get("n_chars"),
        "n_saus": len(saus),
        "sau_set_hash": sau_hash,
        "has_tree": scoring.has_tree(saus),
    }
    return row, saus, sau_hash


def _run_row(root: Path, run: Run) -> dict[str, Any]:
    agent, paper, seed = run
    folder = root / "runs" / agent / paper / seed
    a = _read_json(folder / "agent.json")
    e = _read_json(folder / "execution.json", required=False)
    return {
        "agent": agent,
        "paper": paper,
        "seed": seed,
        "agent_kind": a.get("kind"),
        "agent_status": a.get("status"),
        "model": a.get("model"),
        "steps": a.get("steps"),
        "agent_wall_s": a.get("wall_s"),
        "prompt_tokens": a.get("prompt_tokens"),
        "completion_tokens": a.get("completion_tokens"),
        "cost_usd": a.get("cost_usd"),
        "agent_error": a.get("error"),
        "execution_status": e.get("status"),
        "exit_code": e.get("exit_code"),
        "execution_wall_s": e.get("wall_s"),
        "peak_mem_mb": e.get("peak_mem_mb"),
        "backend": e.get("backend"),
        "isolation": e.get("isolation"),
        "image": e.get("image"),
        "log_bytes": e.get("log_bytes"),
        "metrics": json.dumps(e.get("metrics") or {}, sort_keys=True, default=str),
        "submission_hash": a.get("submission_hash"),
    }


def _read_judgments(root: Path, run: Run, sau_hash: str | None) -> pd.DataFrame:
    """One run's judgments, refused when they were made against another SAU version of the paper."""
    agent, paper, seed = run
    path = root / "runs" / agent / paper / seed / "judgments.parquet"
    frame = _read_table(path)
    missing = [c for c in JUDGMENT_COLUMNS if c not in frame.columns]
    if missing:
        raise UserError(path, missing[0], "column missing")
    if frame.empty:
        return frame
    frame["seed"] = frame["seed"].astype(str)
    for col, want in zip(("agent", "paper", "seed"), run, strict=True):
        other = set(frame[col].astype(str)) - {want}
        if other:
            raise UserError(path, col, f"rows name {sorted(other)[0]!r}, the folder {want!r}")
    hashes = {h if isinstance(h, str) and h else None for h in frame["sau_set_hash"]}
    stale = sorted(str(h) for h in hashes if h != sau_hash)
    if stale:
        raise UserError(
            path,
            "sau_set_hash",
            f"judged against SAU set {stale[0]} but papers/{paper}/saus.parquet is {sau_hash}; "
            "rerun its judges (SAU versions of one paper are never mixed)",
        )
    return frame


# --------------------------------------------------------------------------- derived tables


def coverage(runs: pd.DataFrame, judgments: pd.DataFrame) -> pd.DataFrame:
    """Per agent and judge: runs in the grid, runs whose execution did not end ``ok``, SAUs scored
    and SAUs with an ``error`` verdict (excluded from the scores, so reported here)."""
    if judgments.empty:
        return pd.DataFrame(columns=COVERAGE_COLUMNS)
    failed = runs["execution_status"].notna() & (runs["execution_status"] != "ok")
    per_agent = (
        runs.assign(failed=failed)
        .groupby("agent")
        .agg(n_runs=("seed", "size"), n_runs_failed_execution=("failed", "sum"))
    )
    is_error = scoring.claim_scores(judgments).isna()
    counts = (
        judgments.assign(is_error=is_error.to_numpy())
        .groupby(["agent", "judge"])
        .agg(
            n_saus_judged=("is_error", lambda s: int((~s).sum())),
            n_saus_error=("is_error", "sum"),
        )
        .reset_index()
    )
    out = counts.merge(per_agent, left_on="agent", right_index=True, how="left")
    return out[COVERAGE_COLUMNS].sort_values(["agent", "judge"]).reset_index(drop=True)


def tree_scores(saus: pd.DataFrame, judgments: pd.DataFrame) -> pd.DataFrame:
    """PaperBench's weighted tree score per run and judge, for papers whose SAUs carry a tree."""
    rows = []
    if judgments.empty or saus.empty:
        return pd.DataFrame(columns=TREE_COLUMNS)
    values = judgments.assign(value=scoring.claim_scores(judgments).to_numpy())
    for paper, paper_saus in saus.groupby("paper", sort=True):
        if not scoring.has_tree(paper_saus):
            continue
        try:
            tree = scoring.RubricTree.from_saus(paper_saus)
        except ValueError as exc:
            raise UserError(f"papers/{paper}/saus.parquet", "parent", str(exc)) from None
        judged = values[values["paper"] == paper]
        for (agent, seed, judge), group in judged.groupby(["agent", "seed", "judge"], sort=True):
            leaf_scores = dict(zip(group["sau_id"], group["value"], strict=True))
            rows.append(
                {
                    "agent": agent,
                    "paper": paper,
                    "seed": seed,
                    "judge": judge,
                    "score": tree.score(leaf_scores),
                    "n_leaves": len(tree.leaves),
                    "n_leaves_judged": tree.n_judged(leaf_scores),
                }
            )
    return pd.DataFrame(rows, columns=TREE_COLUMNS)


def _typed(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Fixed column order and dtypes, so even an empty table has a stable Parquet schema."""
    frame = frame.copy()
    for col in columns:
        if col not in frame.columns:
            frame[col] = None
    extra = [c for c in frame.columns if c not in columns]
    frame = frame[[*columns, *extra]]
    for col in columns:
        if col in _INT_COLUMNS:
            values = pd.to_numeric(frame[col])
            frame[col] = values.astype("Int64" if values.isna().any() else "int64")
        elif col in _FLOAT_COLUMNS:
            frame[col] = pd.to_numeric(frame[col]).astype(float)
        elif frame.empty and frame[col].dtype == object:
            frame[col] = frame[col].astype("string")
    return frame.reset_index(drop=True)


# --------------------------------------------------------------------------- entry points


def aggregate(
    results_root: Path,
    runs: Iterable[tuple[str, str, str | int]],
    papers: Iterable[str],
    out_tables: Path,
) -> dict[str, pd.DataFrame]:
    """Read every input of the grid, compute the tables, write ``out_tables/<name>.parquet``.

    Raises UserError (naming the file) on a missing or malformed input and when a run was judged
    against another SAU version of its paper than ``papers/{paper}/saus.parquet``.
    """
    results_root, out_tables = Path(results_root), Path(out_tables)
    grid: list[Run] = [(str(a), str(p), str(s)) for a, p, s in runs]
    paper_list = list(dict.fromkeys([*papers, *(p for _, p, _ in grid)]))

    paper_rows, sau_frames, hashes = [], [], {}
    for paper in paper_list:
        row, saus, sau_hash = _read_paper(results_root, paper)
        paper_rows.append(row)
        sau_frames.append(saus)
        hashes[paper] = sau_hash
    run_rows = [_run_row(results_root, run) for run in grid]
    judgment_frames = [_read_judgments(results_root, run, hashes[run[1]]) for run in grid]

    papers_t = pd.DataFrame(paper_rows, columns=PAPER_COLUMNS)
    saus_t = _concat(sau_frames, TABLES["saus"])
    runs_t = pd.DataFrame(run_rows, columns=RUN_COLUMNS)
    judgments_t = _concat(judgment_frames, JUDGMENT_COLUMNS)
    by_run = scoring.run_scores(judgments_t)
    agreement, confusion = scoring.agreement(judgments_t)
    tables = {
        "papers": papers_t,
        "saus": saus_t,
        "runs": runs_t,
        "judgments": judgments_t,
        "scores_by_run": by_run,
        "scores_by_agent": scoring.agent_scores(by_run),
        "coverage": coverage(runs_t, judgments_t),
        "tree_scores": tree_scores(saus_t, judgments_t),
        "error_taxonomy": scoring.error_taxonomy(judgments_t),
        "judge_agreement": agreement,
        "judge_confusion": confusion,
    }
    tables = {name: _typed(frame, TABLES[name]) for name, frame in tables.items()}
    for name, frame in tables.items():
        write_parquet(out_tables / f"{name}.parquet", frame, table=name)
    return tables


def discover(results_root: Path) -> tuple[list[Run], list[str]]:
    """Runs (folders holding a judgments.parquet) and papers (holding a saus.parquet), sorted."""
    results_root = Path(results_root)
    runs = sorted(
        tuple(p.relative_to(results_root / "runs").parts[:3])
        for p in results_root.glob("runs/*/*/*/judgments.parquet")
    )
    papers = sorted(p.parent.name for p in results_root.glob("papers/*/saus.parquet"))
    return [(a, p, s) for a, p, s in runs], papers


def _fmt(score: float, low: float, high: float) -> str:
    if math.isnan(score):
        return "–"
    if math.isnan(low) or (low == high == score):
        return f"{score:.3f}"
    return f"{score:.3f} [{low:.2f}, {high:.2f}]"


def summary_markdown(tables: dict[str, pd.DataFrame]) -> str:
    """Scores by agent x dimension for each judge (95% bootstrap CI over papers), plus coverage."""
    scores = tables.get("scores_by_agent", pd.DataFrame(columns=scoring.AGENT_SCORE_COLUMNS))
    cov = tables.get("coverage", pd.DataFrame(columns=COVERAGE_COLUMNS))
    if scores.empty:
        return "No scores: no run was judged.\n"
    lines: list[str] = []
    dims = [d for d in scoring.DIMENSION_ORDER if d in set(scores["dimension"])]
    for judge in sorted(scores["judge"].unique()):
        sub = scores[scores["judge"] == judge]
        lines += [f"### Judge `{judge}`", ""]
        lines.append("| agent | " + " | ".join(dims) + " | papers | SAUs judged | errors |")
        lines.append("|---" * (len(dims) + 4) + "|")
        for agent in sorted(sub["agent"].unique()):
            rows = sub[sub["agent"] == agent].set_index("dimension")
            cells = [
                _fmt(*rows.loc[d, ["score", "ci_low", "ci_high"]]) if d in rows.index else "–"
                for d in dims
            ]
            n_papers = int(rows.loc["overall", "n_papers"]) if "overall" in rows.index else 0
            c = cov[(cov["agent"] == agent) & (cov["judge"] == judge)]
            judged = int(c["n_saus_judged"].iloc[0]) if len(c) else 0
            errors = int(c["n_saus_error"].iloc[0]) if len(c) else 0
            name = str(agent).replace("|", "\\|")
            lines.append(
                f"| {name} | " + " | ".join(cells) + f" | {n_papers} | {judged} | {errors} |"
            )
        lines.append("")
    lines.append(
        "Scores: SA-Bench's rule (mean claim score per dimension, overall = mean of dimensions; "
        "seeds averaged within a paper, then papers), 95% bootstrap CI over papers. "
        "`error` verdicts are excluded and counted."
    )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Aggregate a results folder into its tables.")
    parser.add_argument("--results", type=Path, required=True, help="the results root")
    parser.add_argument("--out", type=Path, help="tables folder (default: <results>/tables)")
    args = parser.parse_args(argv)
    runs, papers = discover(args.results)
    try:
        tables = aggregate(args.results, runs, papers, args.out or args.results / "tables")
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(summary_markdown(tables), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
