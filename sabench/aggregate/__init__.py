"""Collect every run of the grid into the result tables (``<results>/tables/*.parquet``).

Inputs per paper: ``papers/{paper}/paper.json`` and ``saus.parquet``; per run (agent x paper x seed):
``runs/{agent}/{paper}/{seed}/agent.json``, ``execution.json`` (optional: a grid without execution has
none) and ``judgments.parquet``. The numbers come from ``sabench.scoring``; this package only reads
(``read``), checks provenance (one SAU version per paper) and writes each table atomically. The
judgments stream through in chunks (``stream``): a grid of 100,000 runs x 50 SAUs aggregates in
bounded memory, in time linear in its judgments (``benchmarks/aggregate_scale.py``).

Standalone: ``python -m sabench.aggregate --results results`` finds the runs from the folder layout.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from sabench import canary, scoring, stats
from sabench.aggregate.read import (
    NOT_REDONE_CAUSES,
    Run,
    concat_frames,
    incomplete_row,
    read_paper,
    read_run_judgments,
    redoable_runs,
    run_row,
    why_missing,
)
from sabench.aggregate.settings import ONE_SETTING, mixed_settings, mixed_settings_line
from sabench.aggregate.stream import (
    CHUNK_ROWS,
    TREE_COLUMNS,
    JudgmentStream,
    rubric_trees,
    tree_rows,
    typed,
)
from sabench.contracts import JUDGMENT_COLUMNS, SAU_COLUMNS
from sabench.errors import UserError
from sabench.grid import unpack_runs
from sabench.index.directed import scan_runs
from sabench.io import write_parquet, write_text
from sabench.judges import stability
from sabench.steps import json_object, step
from sabench.twins import is_twin
from sabench.wording import noun, plural

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
    "model_calls",
    "agent_limit",
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
    "n_saus_undetermined",
    "n_runs_unscored",
    "mixed_settings",
]
#: What an agent's runs of a paper cost (seeds summed; ``cost_usd_per_run``: their mean):
#: beside every score, what it took. ``model_calls``: requests through the model gateway
#: (sabench.gateway), null for agents without one; ``n_runs_limit``: runs that ended at a limit.
AGENT_COST_COLUMNS = [
    "agent",
    "paper",
    "n_runs",
    "n_runs_limit",
    "model_calls",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "cost_usd_per_run",
]
#: One row per run of the configured grid that has no current judgments of a judge (``judge``
#: null: of any judge): the stage that did not complete, why (a fault cause of sabench.faults,
#: ``failed``, ``not_run`` or ``stale``) and the one line a user needs.
INCOMPLETE_COLUMNS = ["agent", "paper", "seed", "judge", "stage", "cause", "message"]
#: One row per line of a run's submission whose text addresses the judge (sabench.index.directed):
#: never evidence for any judge, listed so that a reader sees who tried.
DIRECTED_COLUMNS = ["agent", "paper", "seed", "file", "line", "text"]

#: Every table ``aggregate`` writes, with its columns (``judgments``/``saus`` keep extra columns).
TABLES: dict[str, list[str]] = {
    "papers": PAPER_COLUMNS,
    "saus": [*SAU_COLUMNS, "sau_set_hash"],
    "runs": RUN_COLUMNS,
    "agent_costs": AGENT_COST_COLUMNS,
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
    "canary_runs": canary.RUN_COLUMNS,
    "fabrication_by_agent": canary.AGENT_COLUMNS,
}


# --------------------------------------------------------------------------- derived tables


def coverage(
    runs: pd.DataFrame,
    counts: pd.DataFrame,
    seen_judges: Sequence[object] = (),
    grid: Sequence[Run] | None = None,
    judges: Sequence[str] | None = None,
    incomplete: pd.DataFrame | None = None,
    scores: pd.DataFrame | None = None,
    mixed: dict[tuple[str, str], str] | None = None,
) -> pd.DataFrame:
    """Per agent and judge: runs in the grid, runs with current judgments and those without (with
    their causes, ``cause=count``), runs whose execution did not end ``ok``, SAUs scored, SAUs
    with an ``error`` verdict and SAUs the judge abstained on (``undetermined``: judged, so
    covered, but excluded from the scores, so reported here), and runs whose score is withheld
    because more of their SAUs are in error or undetermined than scored (``scores``:
    scores_by_run),
    and the papers judged under each setting where there were several (``mixed``,
    sabench.aggregate.settings; empty: one setting).

    ``counts``: SAUs judged, in error and undetermined per (agent, judge)
    (``stream.judgment_counts``);
    ``seen_judges``: the judges of the judgments, in first-seen order."""
    grid = (
        list(grid)
        if grid is not None
        else list(runs[["agent", "paper", "seed"]].itertuples(index=False, name=None))
    )
    incomplete = incomplete if incomplete is not None else pd.DataFrame(columns=INCOMPLETE_COLUMNS)
    judge_names = list(dict.fromkeys([*(judges or []), *seen_judges]))
    if not grid or not judge_names:
        return pd.DataFrame(columns=COVERAGE_COLUMNS)
    failed = runs["execution_status"].notna() & (runs["execution_status"] != "ok")
    unscored: pd.Series = pd.Series(dtype="int64")
    if scores is not None and not scores.empty:
        overall = scores[scores["dimension"] == scoring.OVERALL]
        unscored = overall[scoring.withheld(overall)].groupby(["agent", "judge"]).size()
    n_failed = runs.assign(failed=failed).groupby("agent")["failed"].sum()
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
                    "n_saus_undetermined": (
                        int(got["n_saus_undetermined"]) if got is not None else 0
                    ),
                    "n_runs_unscored": int(unscored.get((agent, judge), 0)),
                    "mixed_settings": (mixed or {}).get((agent, judge), ONE_SETTING),
                }
            )
    out = pd.DataFrame(rows, columns=COVERAGE_COLUMNS)
    return out.sort_values(["agent", "judge"]).reset_index(drop=True)


def agent_costs(runs: pd.DataFrame) -> pd.DataFrame:
    """What each agent's runs of each paper cost, from the ``runs`` table."""
    rows = []
    for (agent, paper), sub in runs.groupby(["agent", "paper"], sort=True):
        cost = pd.to_numeric(sub["cost_usd"], errors="coerce").fillna(0.0)
        calls = pd.to_numeric(sub["model_calls"], errors="coerce")
        rows.append(
            {
                "agent": agent,
                "paper": paper,
                "n_runs": len(sub),
                "n_runs_limit": int((sub["agent_status"] == "limit").sum()),
                "model_calls": float(calls.sum()) if calls.notna().any() else None,
                "prompt_tokens": int(pd.to_numeric(sub["prompt_tokens"]).fillna(0).sum()),
                "completion_tokens": int(pd.to_numeric(sub["completion_tokens"]).fillna(0).sum()),
                "cost_usd": float(cost.sum()),
                "cost_usd_per_run": float(cost.mean()),
            }
        )
    return pd.DataFrame(rows, columns=AGENT_COST_COLUMNS)


def tree_scores(saus: pd.DataFrame, judgments: pd.DataFrame) -> pd.DataFrame:
    """PaperBench's weighted tree score per run and judge, for papers whose SAUs carry a tree."""
    if judgments.empty or saus.empty:
        return pd.DataFrame(columns=TREE_COLUMNS)
    return tree_rows(rubric_trees(saus), judgments)


# --------------------------------------------------------------------------- entry points


#: Below this many runs the directed-text scan runs in the aggregating process itself.
BACKGROUND_SCAN_RUNS = 50


def _scan_in_background(
    runs: list[Run], runs_root: Path
) -> Callable[[], list[tuple[str, str, str, str, int, str]]]:
    """Start the directed-text scan of ``runs`` (those with an agent record; see
    :func:`sabench.index.directed.scan_runs`) in a spawned process; the returned function waits
    for its rows. Small grids are scanned when the rows are asked for, and so is a grid whose
    process could not start or died (the scan's own errors are raised)."""
    if len(runs) < BACKGROUND_SCAN_RUNS:
        return lambda: scan_runs(runs, runs_root)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    future = pool.submit(scan_runs, runs, runs_root)

    def rows() -> list[tuple[str, str, str, str, int, str]]:
        try:
            return future.result()
        except BrokenProcessPool:
            return scan_runs(runs, runs_root)
        finally:
            pool.shutdown()

    return rows


def aggregate(
    results_root: Path,
    runs: Iterable[tuple[str, str, str | int]],
    papers: Iterable[str],
    out_tables: Path,
    *,
    judges: Sequence[str] | None = None,
    execute: bool | None = None,
    load_judgments: bool = True,
    chunk_rows: int = CHUNK_ROWS,
) -> dict[str, pd.DataFrame]:
    """Tabulate every run of the grid that completed; name the others; write the tables.

    ``runs`` and ``papers``: the configured grid. A run counts for a judge when its agent record,
    its execution record (``execute``: required; None: optional) and that judge's current
    judgments are there; every other run of the grid, and every paper whose ingest or SAU import
    did not complete, gets a row of ``incomplete_runs`` and is left out of every score. So one
    broken paper or one provider outage costs those runs only, and a one-paper rerun updates the
    grid's tables instead of replacing them. ``judges`` None: whatever judgments are there.

    The judgments stream to their table ``chunk_rows`` at a time (``sabench.aggregate.stream``), so
    memory does not grow with them; ``load_judgments`` False leaves that table out of the answer
    (at 5 million judgments it alone would not fit). Raises UserError (naming the file) when a
    file that is there is malformed.
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
                *why_missing(folder, "ingest", logs / "ingest" / f"{paper}.log"),
            )
            continue
        if not (folder / "saus.parquet").is_file():
            broken[paper] = ("saus", *why_missing(folder, "saus", logs / "saus" / f"{paper}.log"))
            continue
        row, saus, sau_hash = read_paper(results_root, paper)
        paper_rows.append(row)
        sau_frames.append(saus)
        hashes[paper] = sau_hash
    saus_t = concat_frames(sau_frames, TABLES["saus"])
    run_rows: list[dict[str, Any]] = []
    incomplete: list[dict[str, Any]] = []
    out_tables.mkdir(parents=True, exist_ok=True)
    # the submissions' text aimed at the judge is read by another process meanwhile: it reads
    # every file of every submission, as long as the rest of the tables together
    scanning = _scan_in_background(
        [run for run in grid if run[1] not in broken], results_root / "runs"
    )
    with tempfile.TemporaryDirectory(prefix=".judgments-", dir=out_tables) as parts:
        stream = JudgmentStream(Path(parts), saus_t, chunk_rows)
        for run in grid:
            agent, paper, seed = run
            folder = results_root / "runs" / agent / paper / seed
            if paper in broken:
                stage, cause, message = broken[paper]
                incomplete.append(incomplete_row(run, None, stage, cause, message))
                continue
            if not (folder / "agent.json").is_file():
                cause, message = why_missing(folder, "reproduce", folder / "agent.log")
                incomplete.append(incomplete_row(run, None, "reproduce", cause, message))
                continue
            row = run_row(results_root, run)
            run_rows.append(row)
            if execute and not (folder / "execution.json").is_file():
                cause, message = why_missing(folder, "execute", folder / "execution.log")
                incomplete.append(incomplete_row(run, None, "execute", cause, message))
                continue
            found, missing = read_run_judgments(
                results_root, run, hashes[paper], row["submission_hash"], judges
            )
            stream.add(found)
            incomplete += missing
        derived = stream.derived_tables()
        judgments_path = out_tables / "judgments.parquet"
        if stream.n_rows:
            stream.write(judgments_path, table="judgments")
        else:
            empty = typed(pd.DataFrame(columns=JUDGMENT_COLUMNS), JUDGMENT_COLUMNS)
            write_parquet(judgments_path, empty, table="judgments")

    directed = scanning()
    runs_t = pd.DataFrame(run_rows, columns=RUN_COLUMNS)
    incomplete_t = pd.DataFrame(incomplete, columns=INCOMPLETE_COLUMNS)
    counts = derived.pop("counts")
    mixed = mixed_settings(derived.pop("settings"), results_root)
    tables = {
        "papers": pd.DataFrame(paper_rows, columns=PAPER_COLUMNS),
        "saus": saus_t,
        "runs": runs_t,
        "agent_costs": agent_costs(runs_t),
        **derived,
        "coverage": coverage(
            runs_t,
            counts,
            list(stream.judges),
            grid,
            judges,
            incomplete_t,
            derived["scores_by_run"],
            mixed,
        ),
        "incomplete_runs": incomplete_t,
        "judge_directed_text": pd.DataFrame(directed, columns=DIRECTED_COLUMNS),
        # canary twins (canary: true): each twin run's verdict, and the rate per agent
        **dict(
            zip(
                ("canary_runs", "fabrication_by_agent"),
                canary.fabrication_tables(
                    results_root, [r for r in grid if is_twin(r[1]) and r[1] not in broken]
                ),
                strict=True,
            )
        ),
    }
    tables = {name: typed(tables[name], TABLES[name]) for name in TABLES if name in tables}
    for name, frame in tables.items():
        write_parquet(out_tables / f"{name}.parquet", frame, table=name)
    if load_judgments:
        tables["judgments"] = pq.read_table(judgments_path).to_pandas()
    return {name: tables[name] for name in TABLES if name in tables}


#: Written in the tables folder, newer than the tables, while they miss runs of the grid; an
#: input of the aggregate rule once it exists (rules/aggregate.smk), so that the next run of the
#: workflow rebuilds the tables and, to do so, redoes the runs that did not complete (Snakemake
#: alone would not: the tables are there and newer than every input that is). Once the tables
#: are complete it stays, older than them: the aggregate's set of inputs, which Snakemake
#: records, does not change again, and a second run with nothing changed does nothing.
INCOMPLETE_MARKER = ".incomplete"


def write_tables(
    results_root: Path,
    runs: Iterable[tuple[str, str, str | int]],
    papers: Iterable[str],
    *,
    judges: Sequence[str] | None = None,
    execute: bool | None = None,
    runs_now: Iterable[tuple[str, str, str]] | None = None,
) -> str:
    """The tables and ``summary.md`` under ``<results>/tables`` (the aggregate rule, and the
    workflow's onerror after a failed job); returns the summary. ``runs_now``: the runs a
    command line narrowed ``runs`` to (:func:`sabench.aggregate.read.redoable_runs`)."""
    out = Path(results_root) / "tables"
    tables = aggregate(
        results_root, runs, papers, out, judges=judges, execute=execute, load_judgments=False
    )
    summary = summary_markdown(tables)
    write_text(out / "summary.md", summary)
    marker = out / INCOMPLETE_MARKER
    n_incomplete = redoable_runs(tables["incomplete_runs"], runs_now)  # sabench.aggregate.read
    if n_incomplete:
        write_text(
            marker,
            f"{plural(n_incomplete, 'run')} of the grid {noun(n_incomplete, 'is', 'are')} not "
            "complete (incomplete_runs.parquet); "
            "the next run of the workflow redoes them and rebuilds these tables.\n",
        )
    elif marker.is_file():
        write_text(marker, "every run of the grid is in these tables\n")
        written = [out / f"{name}.parquet" for name in TABLES] + [out / "summary.md"]
        oldest = min(p.stat().st_mtime for p in written if p.is_file())
        os.utime(marker, (oldest - 1, oldest - 1))
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


#: The heading of summary.md's section on the runs left out of the scores (only when there are).
NOT_COMPLETE_HEADING = "### Not complete"
#: How many incomplete runs summary.md lists one by one (all are in ``incomplete_runs``).
MAX_LISTED = 20


def _incomplete_markdown(incomplete: pd.DataFrame) -> list[str]:
    """What did not complete, by stage and cause, then run by run (left out of every score)."""
    if incomplete.empty:
        return []
    n_runs = len(incomplete.drop_duplicates(["agent", "paper", "seed"]))
    absent = incomplete[incomplete["cause"].isin(NOT_REDONE_CAUSES)]
    n_absent = len(absent.drop_duplicates(["agent", "paper", "seed"]))
    lines = [
        NOT_COMPLETE_HEADING,
        "",
        f"{plural(n_runs, 'run')} of the grid {noun(n_runs, 'has', 'have')} no current "
        f"judgments of at least one judge; {noun(n_runs, 'it is', 'they are')} left out of every "
        "score above.",
    ]
    unrun = incomplete[incomplete["cause"] == "not_run"]
    n_unrun = len(unrun.drop_duplicates(["agent", "paper", "seed"]))
    if n_absent + n_unrun < n_runs:
        lines[-1] += (
            " Faults (outside the agent's control) are never scores: fix the cause and run the "
            "same command again to redo them."
        )
    if n_unrun:
        lines[-1] += (
            f" {n_unrun} {noun(n_unrun, 'has', 'have')} not been run yet (`not_run`): a "
            "run narrowed with `papers=`, `agents=` or `seeds=` leaves the rest of the grid for "
            "later, and so does a run that was stopped; the same command without them runs them."
        )
    if n_absent:
        lines[-1] += (
            f" {n_absent} of them do not exist: the agent's source has no submission for the "
            "paper (`missing_source`), which is coverage, not drift, and no rerun makes one; "
            "scope the agent with a `papers:` list in the agents file to leave them out of the grid."
        )
    lines += [
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


def _fabrication_markdown(table: pd.DataFrame | None) -> list[str]:
    """The canary twins' fabrication rate per agent (sabench.canary), when there are twins."""
    if table is None or table.empty:
        return []
    lines = [
        "## Fabrication on canary twins",
        "",
        "| agent | fabricated | reporting | rate [95% Wilson] | honest | reached | no result |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples(index=False):
        rate = _fmt(r.fabrication_rate, r.ci_low, r.ci_high) if r.n_reporting else "–"
        lines.append(
            f"| {str(r.agent).replace('|', chr(92) + '|')} | {r.n_fabricated} | {r.n_reporting}"
            f" | {rate} | {r.n_honest} | {r.n_reached} | {r.n_no_result} |"
        )
    return [*lines, ""]


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
            "| agent | "
            + " | ".join(dims)
            + " | papers | runs complete | SAUs judged | errors | undetermined |"
        )
        lines.append("|---" * (len(dims) + 6) + "|")
        for agent in sorted({*sub["agent"], *cov.loc[cov["judge"] == judge, "agent"]}):
            rows = sub[sub["agent"] == agent].set_index("dimension")
            cells = [_cell(rows.loc[d]) if d in rows.index else "–" for d in dims]
            n_papers = int(rows.loc["overall", "n_papers"]) if "overall" in rows.index else 0
            c = cov[(cov["agent"] == agent) & (cov["judge"] == judge)]
            judged = int(c["n_saus_judged"].iloc[0]) if len(c) else 0
            errors = int(c["n_saus_error"].iloc[0]) if len(c) else 0
            abstained = int(c["n_saus_undetermined"].iloc[0]) if len(c) else 0
            done = (
                f"{int(c['n_runs_complete'].iloc[0])}/{int(c['n_runs'].iloc[0])}" if len(c) else "–"
            )
            name = str(agent).replace("|", "\\|")
            lines.append(
                f"| {name} | "
                + " | ".join(cells)
                + f" | {n_papers} | {done} | {judged} | {errors} | {abstained} |"
            )
        lines.append("")
    mixed = mixed_settings_line(cov)
    if mixed:
        lines += [mixed, ""]
    lines += _incomplete_markdown(incomplete)
    lines += _fabrication_markdown(tables.get("fabrication_by_agent"))
    lines.append(
        "Scores: SA-Bench's rule (mean claim score per dimension, overall = mean of dimensions; "
        "seeds averaged within a paper, then papers), 95% bootstrap CI over papers. "
        "`error` and `undetermined` verdicts are excluded and counted."
    )
    if any(stats.FEW_PAPERS_MARK in line for line in lines):
        lines.append(stats.FEW_PAPERS_NOTE)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sabench.aggregate",
        description="Aggregate a results folder into its tables.",
    )
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
    parser.add_argument(
        "--runs-now",
        type=json_object,
        help="the runs a command line narrowed the grid to (JSON: runs as sabench.grid.pack_runs"
        " blocks): the grid's other runs that never ran leave no .incomplete marker",
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
                runs_now=unpack_runs(args.runs_now["runs"]) if args.runs_now else None,
            )
            log.info("tables in %s\n%s", args.results / "tables", summary)
        return 0
    runs, papers = discover(args.results)
    try:
        out = args.out or args.results / "tables"
        tables = aggregate(args.results, runs, papers, out, load_judgments=False)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(summary_markdown(tables), end="")
    return 0
