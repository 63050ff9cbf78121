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

from sabench import scoring, stats
from sabench.contracts import JUDGMENT_COLUMNS, SAU_COLUMNS
from sabench.errors import UserError
from sabench.faults import fault_path, read_fault
from sabench.grid import unpack_runs
from sabench.index.directed import scan_tree
from sabench.io import read_json, read_parquet_metadata, write_parquet, write_text
from sabench.judges import stability
from sabench.steps import json_object, step

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
    "n_runs_complete",
    "n_runs_incomplete",
    "incomplete_causes",
    "n_runs_failed_execution",
    "n_saus_judged",
    "n_saus_error",
]
#: One row per run of the configured grid that has no current judgments of a judge (``judge``
#: null: of any judge): the stage that did not complete, why (a fault cause of sabench.faults,
#: ``failed``, ``not_run`` or ``stale``) and the one line a user needs.
INCOMPLETE_COLUMNS = ["agent", "paper", "seed", "judge", "stage", "cause", "message"]
TREE_COLUMNS = ["agent", "paper", "seed", "judge", "score", "n_leaves", "n_leaves_judged"]
#: One row per line of a run's submission whose text addresses the judge (sabench.index.directed):
#: never evidence for any judge, listed so that a reader sees who tried.
DIRECTED_COLUMNS = ["agent", "paper", "seed", "file", "line", "text"]

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
    "incomplete_runs": INCOMPLETE_COLUMNS,
    "judge_directed_text": DIRECTED_COLUMNS,
    "judge_stability": stability.STABILITY_COLUMNS,
}
_INT_COLUMNS = {
    "n_sections",
    "n_chars",
    "n_saus",
    "n_error",
    "n_papers",
    "n_runs",
    "n_runs_complete",
    "n_runs_incomplete",
    "n_runs_failed_execution",
    "n_saus_judged",
    "n_saus_error",
    "n_leaves",
    "n_leaves_judged",
    "line",
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
_BOOL_COLUMNS = {"few_papers"}


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


def _last_line(path: Path) -> str:
    """The last non-empty line of a log: what a failed step said last."""
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, fh.seek(0, 2) - 4096))
            lines = fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    return next((ln.strip() for ln in reversed(lines) if ln.strip()), "")[:500]


def _why_missing(run_dir: Path, stage: str, log: Path) -> tuple[str, str]:
    """(cause, message) of a stage whose output is absent: its fault record when that is the
    newest word on it, ``failed`` when its job left a log, else ``not_run``."""
    fault = read_fault(run_dir, stage)
    fault_file = fault_path(run_dir, stage)
    if fault and (not log.is_file() or fault_file.stat().st_mtime + 5 >= log.stat().st_mtime):
        return str(fault.get("cause")), str(fault.get("message") or "")
    if log.is_file():
        return "failed", f"{log}: {_last_line(log)}"
    return "not_run", ""


def _judgment_frame(path: Path, run: Run) -> pd.DataFrame:
    """A run's judgments file, checked against the folder it lies in."""
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
    return frame


def _stale(frame: pd.DataFrame, sau_hash: str | None, submission_hash: str | None) -> str | None:
    """Why judgments are not of the run as it is now (another SAU set, another submission)."""
    hashes = {h if isinstance(h, str) and h else None for h in frame["sau_set_hash"]}
    other = sorted(str(h) for h in hashes if h != sau_hash)
    if other:
        return (
            f"judged against SAU set {other[0]}, the paper's is {sau_hash}; "
            "rerun its judges (SAU versions of one paper are never mixed)"
        )
    subs = {h for h in frame["submission_hash"] if isinstance(h, str) and h}
    if submission_hash and subs - {submission_hash}:
        return f"judged submission {sorted(subs)[0]}, the run's is {submission_hash}"
    return None


def read_run_judgments(
    root: Path,
    run: Run,
    sau_hash: str | None,
    submission_hash: str | None,
    judges: Sequence[str] | None,
) -> tuple[list[pd.DataFrame], list[dict[str, Any]]]:
    """The current judgments of one run, per judge, and a row for each judge that has none.

    ``judgments.parquet`` (all judges, merged) is read when present; a judge it lacks is read from
    its own ``judge/<judge>.parquet``, so that after a failed grid the judges that completed count.
    ``judges`` None: every judge found."""
    from sabench.grid import judge_slug

    agent, paper, seed = run
    folder = root / "runs" / agent / paper / seed
    merged = folder / "judgments.parquet"
    files = [merged] if merged.is_file() else []
    if not files and judges is None:
        files = sorted((folder / "judge").glob("*.parquet"))
    by_judge: dict[str, tuple[pd.DataFrame, Path]] = {}
    for path in files:
        frame = _judgment_frame(path, run)
        by_judge.update({str(j): (g, path) for j, g in frame.groupby("judge", sort=False)})
    wanted = list(judges) if judges is not None else list(by_judge)
    frames, incomplete = [], []
    if not wanted:  # no judge named and none found: the run was never judged
        cause, message = _why_missing(folder, "judge", folder / "logs" / "judgments.log")
        return [], [_incomplete(run, None, "judge", cause, message)]
    for judge in wanted:
        frame, path = by_judge.get(judge, (None, folder / "judge" / f"{judge_slug(judge)}.parquet"))
        if frame is None and path.is_file():
            frame = _judgment_frame(path, run)
        stage = f"judge-{judge_slug(judge)}"
        if frame is None:
            cause, message = _why_missing(folder, stage, folder / "logs" / f"{stage}.log")
            incomplete.append(_incomplete(run, judge, stage, cause, message))
            continue
        why = _stale(frame, sau_hash, submission_hash) if not frame.empty else None
        if why:
            incomplete.append(_incomplete(run, judge, stage, "stale", f"{path}: {why}"))
            continue
        frames.append(frame)
    return frames, incomplete


def _incomplete(
    run: Run, judge: str | None, stage: str, cause: str, message: str
) -> dict[str, Any]:
    agent, paper, seed = run
    return {
        "agent": agent,
        "paper": paper,
        "seed": seed,
        "judge": judge,
        "stage": stage,
        "cause": cause,
        "message": message,
    }


# --------------------------------------------------------------------------- derived tables


def coverage(
    runs: pd.DataFrame,
    judgments: pd.DataFrame,
    grid: Sequence[Run] | None = None,
    judges: Sequence[str] | None = None,
    incomplete: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Per agent and judge: runs in the grid, runs with current judgments and those without (with
    their causes, ``cause=count``), runs whose execution did not end ``ok``, SAUs scored and SAUs
    with an ``error`` verdict (excluded from the scores, so reported here)."""
    grid = (
        list(grid)
        if grid is not None
        else list(runs[["agent", "paper", "seed"]].itertuples(index=False, name=None))
    )
    incomplete = incomplete if incomplete is not None else pd.DataFrame(columns=INCOMPLETE_COLUMNS)
    judge_names = list(judges) if judges is not None else []
    judge_names = list(
        dict.fromkeys([*judge_names, *judgments.get("judge", pd.Series(dtype=str)).unique()])
    )
    if not grid or not judge_names:
        return pd.DataFrame(columns=COVERAGE_COLUMNS)
    failed = runs["execution_status"].notna() & (runs["execution_status"] != "ok")
    n_failed = runs.assign(failed=failed).groupby("agent")["failed"].sum()
    is_error = scoring.claim_scores(judgments).isna() if not judgments.empty else pd.Series()
    counts = (
        judgments.assign(is_error=is_error.to_numpy())
        .groupby(["agent", "judge"])
        .agg(
            n_saus_judged=("is_error", lambda s: int((~s).sum())),
            n_saus_error=("is_error", "sum"),
        )
        if not judgments.empty
        else pd.DataFrame(columns=["n_saus_judged", "n_saus_error"])
    )
    n_grid: dict[str, int] = {}
    for agent, _, _ in grid:
        n_grid[agent] = n_grid.get(agent, 0) + 1
    rows = []
    for agent in dict.fromkeys(a for a, _, _ in grid):
        for judge in judge_names:
            mine = incomplete[
                (incomplete["agent"] == agent)
                & (incomplete["judge"].isna() | (incomplete["judge"] == judge))
            ]
            per_run = mine.drop_duplicates(["paper", "seed"])
            causes = per_run["cause"].value_counts()
            n_incomplete = len(per_run)
            got = counts.loc[(agent, judge)] if (agent, judge) in counts.index else None
            rows.append(
                {
                    "agent": agent,
                    "judge": judge,
                    "n_runs": n_grid[agent],
                    "n_runs_complete": n_grid[agent] - n_incomplete,
                    "n_runs_incomplete": n_incomplete,
                    "incomplete_causes": ", ".join(
                        f"{c}={int(n)}" for c, n in sorted(causes.items())
                    ),
                    "n_runs_failed_execution": int(n_failed.get(agent, 0)),
                    "n_saus_judged": int(got["n_saus_judged"]) if got is not None else 0,
                    "n_saus_error": int(got["n_saus_error"]) if got is not None else 0,
                }
            )
    out = pd.DataFrame(rows, columns=COVERAGE_COLUMNS)
    return out.sort_values(["agent", "judge"]).reset_index(drop=True)


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
        elif col in _BOOL_COLUMNS:
            frame[col] = frame[col].astype(bool)
        elif frame.empty and frame[col].dtype == object:
            frame[col] = frame[col].astype("string")
    return frame.reset_index(drop=True)


# --------------------------------------------------------------------------- entry points


def aggregate(
    results_root: Path,
    runs: Iterable[tuple[str, str, str | int]],
    papers: Iterable[str],
    out_tables: Path,
    *,
    judges: Sequence[str] | None = None,
    execute: bool | None = None,
) -> dict[str, pd.DataFrame]:
    """Tabulate every run of the grid that completed; name the others; write the tables.

    ``runs`` and ``papers``: the configured grid. A run counts for a judge when its agent record,
    its execution record (``execute``: required; None: optional) and that judge's current
    judgments are there; every other run of the grid, and every paper whose ingest or SAU import
    did not complete, gets a row of ``incomplete_runs`` and is left out of every score. So one
    broken paper or one provider outage costs those runs only, and a one-paper rerun updates the
    grid's tables instead of replacing them. ``judges`` None: whatever judgments are there.
    Raises UserError (naming the file) when a file that is there is malformed.
    """
    results_root, out_tables = Path(results_root), Path(out_tables)
    grid: list[Run] = [(str(a), str(p), str(s)) for a, p, s in runs]
    paper_list = list(dict.fromkeys([*papers, *(p for _, p, _ in grid)]))

    paper_rows, sau_frames, hashes, broken = [], [], {}, {}
    for paper in paper_list:
        folder = results_root / "papers" / paper
        logs = results_root / "logs"
        if not (folder / "paper.json").is_file():
            broken[paper] = (
                "ingest",
                *_why_missing(folder, "ingest", logs / "ingest" / f"{paper}.log"),
            )
            continue
        if not (folder / "saus.parquet").is_file():
            broken[paper] = ("saus", *_why_missing(folder, "saus", logs / "saus" / f"{paper}.log"))
            continue
        row, saus, sau_hash = _read_paper(results_root, paper)
        paper_rows.append(row)
        sau_frames.append(saus)
        hashes[paper] = sau_hash
    run_rows: list[dict[str, Any]] = []
    judgment_frames: list[pd.DataFrame] = []
    incomplete: list[dict[str, Any]] = []
    directed: list[tuple[str, str, str, str, int, str]] = []
    for run in grid:
        agent, paper, seed = run
        folder = results_root / "runs" / agent / paper / seed
        if paper in broken:
            stage, cause, message = broken[paper]
            incomplete.append(_incomplete(run, None, stage, cause, message))
            continue
        if not (folder / "agent.json").is_file():
            cause, message = _why_missing(folder, "reproduce", folder / "agent.log")
            incomplete.append(_incomplete(run, None, "reproduce", cause, message))
            continue
        row = _run_row(results_root, run)
        run_rows.append(row)
        directed += [
            (agent, paper, seed, d.file, d.line, d.text[:300])
            for d in scan_tree(folder / "submission")
        ]
        if execute and not (folder / "execution.json").is_file():
            cause, message = _why_missing(folder, "execute", folder / "execution.log")
            incomplete.append(_incomplete(run, None, "execute", cause, message))
            continue
        frames, missing = read_run_judgments(
            results_root, run, hashes[paper], row["submission_hash"], judges
        )
        judgment_frames += frames
        incomplete += missing

    papers_t = pd.DataFrame(paper_rows, columns=PAPER_COLUMNS)
    saus_t = _concat(sau_frames, TABLES["saus"])
    runs_t = pd.DataFrame(run_rows, columns=RUN_COLUMNS)
    judgments_t = _concat(judgment_frames, JUDGMENT_COLUMNS)
    incomplete_t = pd.DataFrame(incomplete, columns=INCOMPLETE_COLUMNS)
    by_run = scoring.run_scores(judgments_t)
    agreement, confusion = scoring.agreement(judgments_t)
    tables = {
        "papers": papers_t,
        "saus": saus_t,
        "runs": runs_t,
        "judgments": judgments_t,
        "scores_by_run": by_run,
        "scores_by_agent": scoring.agent_scores(by_run),
        "coverage": coverage(runs_t, judgments_t, grid, judges, incomplete_t),
        "tree_scores": tree_scores(saus_t, judgments_t),
        "error_taxonomy": scoring.error_taxonomy(judgments_t),
        "judge_agreement": agreement,
        "judge_confusion": confusion,
        "incomplete_runs": incomplete_t,
        "judge_directed_text": pd.DataFrame(directed, columns=DIRECTED_COLUMNS),
        "judge_stability": stability.judge_stability(judgments_t),
    }
    tables = {name: _typed(frame, TABLES[name]) for name, frame in tables.items()}
    for name, frame in tables.items():
        write_parquet(out_tables / f"{name}.parquet", frame, table=name)
    return tables


#: Left in the tables folder while the tables miss runs of the grid; an input of the aggregate
#: rule while it exists (rules/aggregate.smk), so that the next run of the workflow rebuilds the
#: tables and, to do so, redoes the runs that did not complete (Snakemake alone would not: the
#: tables are there and newer than every input that is).
INCOMPLETE_MARKER = ".incomplete"


def write_tables(
    results_root: Path,
    runs: Iterable[tuple[str, str, str | int]],
    papers: Iterable[str],
    *,
    judges: Sequence[str] | None = None,
    execute: bool | None = None,
) -> str:
    """The tables and ``summary.md`` under ``<results>/tables`` (the aggregate rule, and the
    workflow's onerror after a failed job); returns the summary."""
    out = Path(results_root) / "tables"
    tables = aggregate(results_root, runs, papers, out, judges=judges, execute=execute)
    summary = summary_markdown(tables)
    write_text(out / "summary.md", summary)
    marker = out / INCOMPLETE_MARKER
    n_incomplete = len(tables["incomplete_runs"].drop_duplicates(["agent", "paper", "seed"]))
    if n_incomplete:
        write_text(
            marker,
            f"{n_incomplete} run(s) of the grid are not complete (incomplete_runs.parquet); "
            "the next run of the workflow redoes them and rebuilds these tables.\n",
        )
    else:
        marker.unlink(missing_ok=True)
    return summary


def discover(results_root: Path) -> tuple[list[Run], list[str]]:
    """Runs (the folders runs/<agent>/<paper>/<seed>) and papers (the folders papers/<paper>) of a
    results folder, sorted: what a standalone aggregation takes for the grid."""
    results_root = Path(results_root)
    runs = sorted(
        tuple(p.relative_to(results_root / "runs").parts)
        for p in results_root.glob("runs/*/*/*")
        if p.is_dir()
    )
    papers = sorted(p.name for p in results_root.glob("papers/*") if p.is_dir())
    return [(a, p, s) for a, p, s in runs], papers


def _fmt(score: float, low: float, high: float) -> str:
    if math.isnan(score):
        return "–"
    if math.isnan(low) or (low == high == score):
        return f"{score:.3f}"
    return f"{score:.3f} [{low:.2f}, {high:.2f}]"


def _cell(row: pd.Series) -> str:
    text = _fmt(row["score"], row["ci_low"], row["ci_high"])
    return f"{text} {stats.FEW_PAPERS_MARK}" if row["few_papers"] and text != "–" else text


#: How many incomplete runs summary.md lists one by one (all are in ``incomplete_runs``).
MAX_LISTED = 20


def _incomplete_markdown(incomplete: pd.DataFrame) -> list[str]:
    """What did not complete, by stage and cause, then run by run (left out of every score)."""
    if incomplete.empty:
        return []
    n_runs = len(incomplete.drop_duplicates(["agent", "paper", "seed"]))
    lines = [
        "### Not complete",
        "",
        f"{n_runs} run(s) of the grid have no current judgments of at least one judge; they are "
        "left out of every score above. Faults (outside the agent's control) are never scores: "
        "fix the cause and run the same command again to redo them.",
        "",
        "| stage | cause | runs |",
        "|---|---|---|",
    ]
    groups = incomplete.groupby(["stage", "cause"], sort=True)
    for (stage, cause), group in groups:
        n = len(group.drop_duplicates(["agent", "paper", "seed"]))
        lines.append(f"| {stage} | {cause} | {n} |")
    lines.append("")
    for item in incomplete.head(MAX_LISTED).itertuples(index=False):
        message = f": {item.message}" if item.message else ""
        lines.append(
            f"- `{item.agent}/{item.paper}/{item.seed}` {item.stage}: {item.cause}{message}"
        )
    if len(incomplete) > MAX_LISTED:
        lines.append(f"- ... {len(incomplete) - MAX_LISTED} more in `incomplete_runs.parquet`")
    lines.append("")
    return lines


def summary_markdown(tables: dict[str, pd.DataFrame]) -> str:
    """Scores by agent x dimension for each judge (95% bootstrap CI over papers), plus coverage."""
    scores = tables.get("scores_by_agent", pd.DataFrame(columns=scoring.AGENT_SCORE_COLUMNS))
    cov = tables.get("coverage", pd.DataFrame(columns=COVERAGE_COLUMNS))
    incomplete = tables.get("incomplete_runs", pd.DataFrame(columns=INCOMPLETE_COLUMNS))
    if scores.empty and incomplete.empty:
        return "No scores: no run was judged.\n"
    lines: list[str] = []
    dims = [d for d in scoring.DIMENSION_ORDER if d in set(scores["dimension"])] or ["overall"]
    for judge in sorted({*scores["judge"], *cov["judge"]}):
        sub = scores[scores["judge"] == judge]
        lines += [f"### Judge `{judge}`", ""]
        lines.append(
            "| agent | " + " | ".join(dims) + " | papers | runs complete | SAUs judged | errors |"
        )
        lines.append("|---" * (len(dims) + 5) + "|")
        for agent in sorted({*sub["agent"], *cov.loc[cov["judge"] == judge, "agent"]}):
            rows = sub[sub["agent"] == agent].set_index("dimension")
            cells = [_cell(rows.loc[d]) if d in rows.index else "–" for d in dims]
            n_papers = int(rows.loc["overall", "n_papers"]) if "overall" in rows.index else 0
            c = cov[(cov["agent"] == agent) & (cov["judge"] == judge)]
            judged = int(c["n_saus_judged"].iloc[0]) if len(c) else 0
            errors = int(c["n_saus_error"].iloc[0]) if len(c) else 0
            done = (
                f"{int(c['n_runs_complete'].iloc[0])}/{int(c['n_runs'].iloc[0])}" if len(c) else "–"
            )
            name = str(agent).replace("|", "\\|")
            lines.append(
                f"| {name} | "
                + " | ".join(cells)
                + f" | {n_papers} | {done} | {judged} | {errors} |"
            )
        lines.append("")
    lines += _incomplete_markdown(incomplete)
    lines.append(
        "Scores: SA-Bench's rule (mean claim score per dimension, overall = mean of dimensions; "
        "seeds averaged within a paper, then papers), 95% bootstrap CI over papers. "
        "`error` verdicts are excluded and counted."
    )
    if any(stats.FEW_PAPERS_MARK in line for line in lines):
        lines.append(stats.FEW_PAPERS_NOTE)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Aggregate a results folder into its tables.")
    parser.add_argument("--results", type=Path, required=True, help="the results root")
    parser.add_argument(
        "--out", type=Path, help="tables folder (default: <results>/tables; not with --grid)"
    )
    parser.add_argument(
        "--grid",
        type=json_object,
        help="the grid the tables cover, as the aggregate rule gives it (JSON: runs as"
        " sabench.grid.pack_runs blocks, papers, judges, execute); without it, the runs found"
        " under --results",
    )
    args = parser.parse_args(argv)
    if args.grid is not None:
        if args.out:
            parser.error("--out: the tables of --grid go to <results>/tables")
        with step(None, "aggregate") as log:
            grid = args.grid
            summary = write_tables(
                args.results,
                unpack_runs(grid["runs"]),
                list(grid["papers"]),
                judges=list(grid["judges"]),
                execute=bool(grid["execute"]),
            )
            log.info("tables in %s\n%s", args.results / "tables", summary)
        return 0
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
