"""The cheap judges of one paper's runs in one process (the workflow's judge_batch rule): those
that call no model and run no code, so they need no sandbox settings and no agent view.

A job per run and judge costs a process start and Snakemake's bookkeeping for a few milliseconds
of work; one job per paper runs them all. What a job per run gave stays (docs/architecture.md,
"Batched steps"):

* every run keeps its own ``judge/<judge>.parquet`` and ``logs/judge-<judge>.log``;
* a cache beside each run (``judge/.cache/<judge>.<key>.parquet``, one entry per judge) holds the
  last judgment, keyed by everything the judgment reads. Snakemake reruns the whole batch when one
  run changes (and deletes its outputs first); the runs whose key is unchanged are copied from the
  cache, so changing one agent re-judges that agent's runs only, and adding a judge runs only that
  judge;
* a fault (sabench.faults) is recorded for its run and judge, the other runs are judged and cached,
  and the job fails so that the next run of the workflow redoes the faulted one, which is all that
  it recomputes. A killed batch loses at most the run in flight.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sabench.faults import Fault, clear_fault, exit_for_fault
from sabench.io import atomic_path, read_json, spare_pandas

#: Fields of agent.json that say when and how fast, not what was submitted.
TIMING_FIELDS = ("started_at", "wall_s")
CACHE = ".cache"
#: Snakemake's mark in a folder it made: the time of the job, not of the submission.
SNAKEMAKE_STAMP = ".snakemake_timestamp"


@dataclass(frozen=True)
class BatchJudge:
    """One judge as the workflow passes it: what the per-run judge step gets on its command line."""

    name: str
    fingerprint: str
    settings: dict[str, Any]

    @property
    def slug(self) -> str:
        from sabench.grid import judge_slug

        return judge_slug(self.name)


def _file_digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def tree_digest(root: Path) -> str:
    """Relative path, size and modification time of every file: a cheap stand-in for the bytes
    (replay copies keep the source's times, sabench.agents.batch)."""
    digest = hashlib.sha256()
    if root.is_dir():
        for path in sorted(root.rglob("*")):
            if path.name == SNAKEMAKE_STAMP:
                continue
            if path.is_symlink():
                digest.update(f"{path.relative_to(root)}\0link:{os.readlink(path)}\0".encode())
            elif path.is_file():
                st = path.stat()
                digest.update(
                    f"{path.relative_to(root)}\0{st.st_size}\0{st.st_mtime_ns}\0".encode()
                )
    return digest.hexdigest()


def judgment_key(judge: BatchJudge, run_dir: Path, saus: Path) -> str:
    """Changes exactly when what ``judge`` reads for this run changes."""
    from sabench.judges.registry import judge_kind, verdict_file

    agent = read_json(run_dir / "agent.json")
    record = {k: v for k, v in agent.items() if k not in TIMING_FIELDS}
    verdicts = None
    kind = judge_kind(judge.name)
    if kind is not None and kind.verdicts:
        run = {"agent": agent["agent"], "paper": agent["paper"], "seed": str(agent["seed"])}
        verdicts = _file_digest(verdict_file(judge.name, judge.settings, run))
    parts = {
        "judge": judge.name,
        "fingerprint": judge.fingerprint,
        "settings": judge.settings,
        "saus": _file_digest(saus),
        "agent": record,
        "execution": _file_digest(run_dir / "execution.json"),
        "submission": tree_digest(run_dir / "submission"),
        "verdicts": verdicts,
    }
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _cached(cache_dir: Path, slug: str, key: str) -> Path:
    return cache_dir / f"{slug}.{key}.parquet"


def _store(out: Path, cache_dir: Path, slug: str, key: str) -> None:
    """Keep ``out`` as the cache entry of ``slug`` (the only one: older keys are removed)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    for old in cache_dir.glob(f"{slug}.*.parquet"):
        old.unlink(missing_ok=True)
    entry = _cached(cache_dir, slug, key)
    with atomic_path(entry) as tmp:
        shutil.copyfile(out, tmp)


def judge_one(judge: BatchJudge, run_dir: Path, saus: Path) -> tuple[str, int | None]:
    """Judge one run with one judge (or copy the cached judgment): (how, rows or None on fault)."""
    from sabench.judges.run import judge_run
    from sabench.locks import job_guard

    out = run_dir / "judge" / f"{judge.slug}.parquet"
    cache_dir = run_dir / "judge" / CACHE
    stage = f"judge-{judge.slug}"
    key = judgment_key(judge, run_dir, saus)
    entry = _cached(cache_dir, judge.slug, key)
    with job_guard(run_dir, stage):
        if entry.is_file():
            with atomic_path(out) as tmp:
                shutil.copyfile(entry, tmp)
            clear_fault(run_dir, stage)
            return "cached", None
        try:
            rows = judge_run(
                judge.name,
                judge.settings,
                judge.fingerprint,
                run_dir / "submission",
                run_dir / "execution.json",
                run_dir / "agent.json",
                saus,
                out,
            )
        except Fault as fault:
            out.unlink(missing_ok=True)
            exit_for_fault(run_dir, stage, fault, judge=judge.name)
            return f"fault {fault.cause}: {fault.message}", None
        clear_fault(run_dir, stage)
        _store(out, cache_dir, judge.slug, key)
    return "judged", len(rows)


def judge_batch(
    judges: list[BatchJudge],
    runs: list[Path],
    saus: Path,
    *,
    merge: bool = False,
) -> dict[str, int]:
    """Every judge over every run; a line per run and judge in the run's judge log. With
    ``merge`` (these are all the run's judges) each run's ``judgments.parquet`` is written too,
    saving the workflow a merge job per paper. Counts of judged, cached and faulted."""
    from sabench.judges.merge import merge_judgments

    counts = {"judged": 0, "cached": 0, "faulted": 0}
    for judge in judges:
        for run_dir in runs:
            how, rows = judge_one(judge, run_dir, saus)
            outcome = how.split()[0]
            counts[outcome if outcome in counts else "faulted"] += 1
            line = f"{run_dir}: {judge.name}: {how}" + (
                f", {rows} SAUs" if rows is not None else ""
            )
            log_path = run_dir / "logs" / f"judge-{judge.slug}.log"
            log_path.parent.mkdir(parents=True, exist_ok=True)
            log_path.write_text(line + "\n", encoding="utf-8")
            print(line, flush=True)
    if merge and not counts["faulted"]:
        for run_dir in runs:
            files = [run_dir / "judge" / f"{judge.slug}.parquet" for judge in judges]
            merge_judgments(files, run_dir / "judgments.parquet")
    return counts


def _judges(text: str) -> list[BatchJudge]:
    return [
        BatchJudge(j["name"], j["fingerprint"], json.loads(j["settings_json"]))
        for j in json.loads(text)
    ]


def main(argv: list[str] | None = None) -> int:
    """Judge runs of one paper with the cheap judges; the workflow's judge_batch rule calls this."""
    from sabench.steps import ArgumentParser, step

    parser = ArgumentParser(description="Judge runs of one paper with judges that run no code.")
    parser.add_argument(
        "records",
        type=Path,
        nargs="+",
        help="the runs' agent.json: results/runs/<agent>/<paper>/<seed>/agent.json",
    )
    parser.add_argument("--saus", type=Path, required=True, help="the paper's saus.parquet")
    parser.add_argument(
        "--judges",
        type=_judges,
        required=True,
        help='JSON list of {"name", "fingerprint", "settings_json"}, as the judge rule gets them',
    )
    parser.add_argument(
        "--merge",
        action="store_true",
        help="these are all the runs' judges: write each run's judgments.parquet too",
    )
    args = parser.parse_args(argv)
    for record in args.records:
        if not record.is_file():
            parser.error(f"{record}: not found (a run's agent.json)")
    runs = [record.parent for record in args.records]
    spare_pandas()  # these judges and their tables need no pandas
    with step(None, "judge"):
        counts = judge_batch(args.judges, runs, args.saus, merge=args.merge)
    print(
        f"{len(runs)} run(s) x {len(args.judges)} judge(s): {counts['judged']} judged,"
        f" {counts['cached']} from the cache, {counts['faulted']} faulted"
    )
    return 1 if counts["faulted"] else 0


if __name__ == "__main__":
    sys.exit(main())
