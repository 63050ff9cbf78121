"""Reading one paper's and one run's records for the aggregation, each checked against the folder it
lies in. A run's judgments stay Arrow tables (no pandas frame per run): at 100,000 runs the per-run
cost is what bounds the aggregation's time."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sabench import scoring
from sabench.contracts import JUDGMENT_COLUMNS, SAU_COLUMNS
from sabench.errors import UserError
from sabench.faults import fault_path, read_fault
from sabench.io import read_json, read_parquet_metadata

Run = tuple[str, str, str]


def read_table(path: Path) -> pa.Table:
    """Read Parquet through pyarrow; a damaged file is the user's to fix, so say which.
    (``ParquetFile``, not ``read_table``: a dataset per file costs twice the read at 100k runs.)"""
    try:
        with pq.ParquetFile(path) as file:
            return file.read()
    except FileNotFoundError:
        raise UserError(path, None, "missing (did its stage run?)") from None
    except Exception as exc:  # pyarrow raises several types for a broken file
        raise UserError(path, None, f"unreadable Parquet: {exc}") from None


def concat_frames(frames: Sequence[pd.DataFrame], columns: Sequence[str]) -> pd.DataFrame:
    """Concatenate through Arrow so all-null columns of one frame take the others' types."""
    frames = [f for f in frames if not f.empty]
    if not frames:
        return pd.DataFrame(columns=list(columns))
    tables = [pa.Table.from_pandas(f, preserve_index=False) for f in frames]
    return pa.concat_tables(tables, promote_options="permissive").to_pandas()


def read_json_object(path: Path, *, required: bool = True) -> dict[str, Any]:
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


def read_paper(root: Path, paper: str) -> tuple[dict[str, Any], pd.DataFrame, str | None]:
    """A paper's row of ``papers``, its SAUs (with their set's hash) and that hash."""
    folder = root / "papers" / paper
    meta = read_json_object(folder / "paper.json")
    saus_path = folder / "saus.parquet"
    saus = read_table(saus_path).to_pandas()
    missing = [c for c in SAU_COLUMNS if c not in saus.columns]
    if missing:
        raise UserError(saus_path, missing[0], "column missing")
    # true, false or unknown (no paper text), whether pandas or pyarrow wrote the file
    saus["grounded"] = saus["grounded"].astype("boolean")
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


def run_row(root: Path, run: Run) -> dict[str, Any]:
    """A run's row of ``runs``: its agent record and, when there is one, its execution record."""
    agent, paper, seed = run
    folder = root / "runs" / agent / paper / seed
    a = read_json_object(folder / "agent.json")
    e = read_json_object(folder / "execution.json", required=False)
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
        "model_calls": (a.get("gateway") or {}).get("calls"),
        "agent_limit": a.get("limit"),
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


def why_missing(run_dir: Path, stage: str, log: Path) -> tuple[str, str]:
    """(cause, message) of a stage whose output is absent: its fault record when that is the
    newest word on it, ``failed`` when its job left a log, else ``not_run``."""
    fault = read_fault(run_dir, stage)
    fault_file = fault_path(run_dir, stage)
    if fault and (not log.is_file() or fault_file.stat().st_mtime + 5 >= log.stat().st_mtime):
        return str(fault.get("cause")), str(fault.get("message") or "")
    if log.is_file():
        return "failed", f"{log}: {_last_line(log)}"
    return "not_run", ""


def incomplete_row(
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


#: Causes of incomplete runs that no rerun redoes: a replay source without the paper is missing
#: until the source or the agent's ``papers`` changes (it leaves no ``.incomplete`` marker).
NOT_REDONE_CAUSES = ("missing_source",)
#: The submission hash of an empty submission (every missing_source run has it).
EMPTY_SUBMISSION = hashlib.sha256().hexdigest()[:16]


def missing_source(folder: Path, submission_hash: str | None) -> str | None:
    """Why a run does not exist (its replay source has no folder for the paper), or None. Such a
    run is left out of every score and counted in coverage, never scored 0 as drift, unless its
    agent says ``missing_source: zero`` (SA-Bench's convention). Reads agent.json only for empty
    submissions."""
    if submission_hash != EMPTY_SUBMISSION:
        return None
    record = read_json_object(folder / "agent.json", required=False)
    if record.get("status") != "missing_source":
        return None
    if (record.get("config") or {}).get("missing_source") == "zero":
        return None
    return str(record.get("error") or "no submission in the replay source")


def redoable_runs(incomplete: pd.DataFrame, runs_now: Iterable[Run] | None = None) -> int:
    """Runs of ``incomplete_runs`` that the next run of the workflow can redo (not those whose
    source does not exist): what the tables' ``.incomplete`` marker counts. ``runs_now``: the
    runs a command line narrowed the grid to; the grid's other runs that were never run are not
    counted (a run of the whole grid makes them anyway, and a marker that the whole grid then
    removes would change the aggregate's inputs: the next run would make the tables again)."""
    redo = incomplete[~incomplete["cause"].isin(NOT_REDONE_CAUSES)]
    if runs_now is not None:
        wanted = {tuple(map(str, run)) for run in runs_now}
        rows = zip(redo["agent"], redo["paper"], redo["seed"], redo["cause"], strict=True)
        redo = redo[
            [cause != "not_run" or (str(a), str(p), str(s)) in wanted for a, p, s, cause in rows]
        ]
    return len(redo.drop_duplicates(["agent", "paper", "seed"]))


def _values(table: pa.Table, column: str) -> list[Any]:
    return pc.unique(table[column]).to_pylist()


def judgment_table(path: Path, run: Run) -> pa.Table:
    """A run's judgments file, checked against the folder it lies in (``seed`` as text)."""
    table = read_table(path)
    names = set(table.column_names)
    missing = [c for c in JUDGMENT_COLUMNS if c not in names]
    if missing:
        raise UserError(path, missing[0], "column missing")
    if table.num_rows == 0:
        return table
    seed = table["seed"]
    if not pa.types.is_string(seed.type):  # pandas' str(), as the seed folder is named
        seed = pa.array(seed.to_pandas().astype(str), pa.string())
        table = table.set_column(table.column_names.index("seed"), "seed", seed)
    for col, want in zip(("agent", "paper", "seed"), run, strict=True):
        other = {str(v) for v in _values(table, col)} - {want}
        if other:
            raise UserError(path, col, f"rows name {sorted(other)[0]!r}, the folder {want!r}")
    return table


def _by_judge(table: pa.Table) -> dict[str, pa.Table]:
    """The rows of each judge in first-seen order, rows without a judge dropped."""
    names = [j for j in _values(table, "judge") if j is not None]
    if len(names) == 1 and table["judge"].null_count == 0:
        return {str(names[0]): table}
    return {str(j): table.filter(pc.equal(table["judge"], j)) for j in names}


def stale(table: pa.Table, sau_hash: str | None, submission_hash: str | None) -> str | None:
    """Why judgments are not of the run as it is now (another SAU set, another submission)."""
    hashes = {h if isinstance(h, str) and h else None for h in _values(table, "sau_set_hash")}
    other = sorted(str(h) for h in hashes if h != sau_hash)
    if other:
        return (
            f"judged against SAU set {other[0]}, the paper's is {sau_hash}; "
            "rerun its judges (SAU versions of one paper are never mixed)"
        )
    subs = {h for h in _values(table, "submission_hash") if isinstance(h, str) and h}
    if submission_hash and subs - {submission_hash}:
        return f"judged submission {sorted(subs)[0]}, the run's is {submission_hash}"
    return None


def read_run_judgments(
    root: Path,
    run: Run,
    sau_hash: str | None,
    submission_hash: str | None,
    judges: Sequence[str] | None,
) -> tuple[list[pa.Table], list[dict[str, Any]]]:
    """The current judgments of one run, per judge, and a row for each judge that has none.

    ``judgments.parquet`` (all judges, merged) is read when present; a judge it lacks is read from
    its own ``judge/<judge>.parquet``, so that after a failed grid the judges that completed count.
    ``judges`` None: every judge found."""
    from sabench.grid import judge_slug

    agent, paper, seed = run
    folder = root / "runs" / agent / paper / seed
    absent = missing_source(folder, submission_hash)
    if absent:
        return [], [incomplete_row(run, None, "reproduce", "missing_source", absent)]
    merged = folder / "judgments.parquet"
    files = [merged] if merged.is_file() else []
    if not files and judges is None:
        files = sorted((folder / "judge").glob("*.parquet"))
    by_judge: dict[str, tuple[pa.Table, Path]] = {}
    for path in files:
        by_judge.update({j: (t, path) for j, t in _by_judge(judgment_table(path, run)).items()})
    wanted = list(judges) if judges is not None else list(by_judge)
    tables, incomplete = [], []
    if not wanted:  # no judge named and none found: the run was never judged
        merge_log = root / "logs" / "judgments" / f"{paper}.log"  # the merge: a job per paper
        cause, message = why_missing(folder, "judge", merge_log)
        return [], [incomplete_row(run, None, "judge", cause, message)]
    for judge in wanted:
        table, path = by_judge.get(judge, (None, folder / "judge" / f"{judge_slug(judge)}.parquet"))
        if table is None and path.is_file():
            table = judgment_table(path, run)
        stage = f"judge-{judge_slug(judge)}"
        if table is None:
            cause, message = why_missing(folder, stage, folder / "logs" / f"{stage}.log")
            incomplete.append(incomplete_row(run, judge, stage, cause, message))
            continue
        why = stale(table, sau_hash, submission_hash) if table.num_rows else None
        if why:
            incomplete.append(incomplete_row(run, judge, stage, "stale", f"{path}: {why}"))
            continue
        tables.append(table)
    return tables, incomplete
