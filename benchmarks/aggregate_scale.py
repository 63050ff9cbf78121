"""Time the aggregation of a large grid and measure its peak memory.

Writes ``--runs`` synthetic runs over 100 papers and 10 agents (seeds fill the rest) with ``--saus``
SAUs per paper and ``--judges`` judges as real files in a temporary folder: each paper's paper.json
and saus.parquet, each run's agent.json, execution.json and judgments.parquet (every
``contracts.JUDGMENT_COLUMNS`` column, rows naming that run; the verdicts are one of eight drawn
patterns per paper, so a file's bytes are its own but generation stays fast). Then it runs the
aggregate rule's command (``python -m sabench.aggregate --grid ...``) in a child process, so the
peak RSS (``RUSAGE_CHILDREN``) is the aggregation's alone. With ``--judges 2`` the second judge is
``reference``, so the agreement tables are computed too.

    .venv/bin/python benchmarks/aggregate_scale.py [--runs 100000 --saus 50 --judges 1]

Last line: ``aggregate: judgments=<n> seconds=<s> peak_mb=<m>``. Goals: peak_mb < 2000 at 5 million
judgments, seconds linear in the judgments.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from sabench.contracts import JUDGMENT_COLUMNS, SAU_COLUMNS
from sabench.grid import pack_runs
from sabench.io import write_parquet

N_PAPERS = 100
N_AGENTS = 10
PATTERNS = 8
VERDICTS = [("aligned", 1.0), ("partial", 0.5), ("drifted", 0.0), ("missing", 0.0), ("error", None)]
MODES = {"drifted": "implementation_mismatch", "missing": "omission"}
JUDGES = ("static", "reference", "llm")


def grid(n_runs: int) -> list[tuple[str, str, str]]:
    """Agents x papers x as many seeds as it takes, in the configured grid's order."""
    seeds = -(-n_runs // (N_AGENTS * N_PAPERS))
    runs = [
        (f"agent-{a}", f"paper-{p:03d}", str(s))
        for a in range(N_AGENTS)
        for p in range(N_PAPERS)
        for s in range(seeds)
    ]
    return runs[:n_runs]


def write_paper(root: Path, paper: str, n_saus: int) -> list[tuple[str, str]]:
    folder = root / "papers" / paper
    folder.mkdir(parents=True)
    meta = {"paper": paper, "title": f"Synthetic {paper}", "sha256": "0" * 64}
    meta.update(source_format="md", sections=["Intro", "Method"], n_chars=20000)
    (folder / "paper.json").write_text(json.dumps(meta))
    saus = [(f"{paper}-{i:03d}", f"D{i % 4 + 1}") for i in range(n_saus)]
    rows = []
    for sau_id, dim in saus:
        row = dict.fromkeys(SAU_COLUMNS)
        row.update(paper=paper, sau_id=sau_id, dimension=dim, claim=f"claim {sau_id}", source="")
        row.update(weight=1.0, origin="curated", grounded=True)
        rows.append(row)
    write_parquet(folder / "saus.parquet", pd.DataFrame(rows), sau_set_hash=f"h-{paper}")
    return saus


def patterns(paper: str, saus: list[tuple[str, str]], judges: int, rng: random.Random) -> list:
    """PATTERNS judgment tables of one paper as Arrow (the schema a judge writes, pandas metadata
    included); a run's file is one of them with its own agent, paper and seed."""
    tables = []
    for _ in range(PATTERNS):
        rows = []
        for judge in JUDGES[:judges]:
            for sau_id, dim in saus:
                verdict, score = rng.choice(VERDICTS)
                row = dict.fromkeys(JUDGMENT_COLUMNS)
                start = rng.randint(1, 200)
                row.update(
                    paper=paper, sau_id=sau_id, dimension=dim, judge=judge, score=score,
                    verdict=verdict, failure_mode=MODES.get(verdict),
                    evidence=[{"file": "src/train.py", "start": start, "end": start + 4}],
                    reasoning=f"{judge}: {verdict}, the value at line {start} of src/train.py.",
                    prompt_tokens=900, completion_tokens=90, cost_usd=0.001, cached=False,
                    latency_s=0.4, judge_fingerprint=f"{judge}-fp", sau_set_hash=f"h-{paper}",
                    submission_hash="sub",
                )  # fmt: skip
                rows.append(row)
        frame = pd.DataFrame(rows, columns=list(JUDGMENT_COLUMNS))
        tables.append(pa.Table.from_pandas(frame, preserve_index=False))
    return tables


def build(root: Path, n_runs: int, n_saus: int, judges: int) -> list[tuple[str, str, str]]:
    rng = random.Random(0)
    runs = grid(n_runs)
    tables = {}
    for paper in sorted({p for _, p, _ in runs}):
        tables[paper] = patterns(paper, write_paper(root, paper, n_saus), judges, rng)
    agent = {"kind": "replay", "status": "replayed", "steps": 3, "wall_s": 12.5, "model": "m"}
    agent.update(prompt_tokens=1000, completion_tokens=200, cost_usd=0.01, error=None)
    agent.update(submission_hash="sub", started_at="2026-01-01T00:00:00+00:00")
    execution = {"status": "ok", "exit_code": 0, "wall_s": 30.0, "peak_mem_mb": 200}
    execution.update(backend="bwrap", isolation="sandbox", log_bytes=4000, metrics={"acc": 0.9})
    execution_text = json.dumps(execution)
    for i, (a, p, s) in enumerate(runs):
        folder = root / "runs" / a / p / s
        folder.mkdir(parents=True)
        (folder / "agent.json").write_text(json.dumps({**agent, "agent": a, "paper": p, "seed": s}))
        (folder / "execution.json").write_text(execution_text)
        table = tables[p][i % PATTERNS]
        n = table.num_rows
        table = table.set_column(0, "agent", pa.array([a] * n))
        table = table.set_column(2, "seed", pa.array([s] * n))
        pq.write_table(table, folder / "judgments.parquet")
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--saus", type=int, default=50)
    parser.add_argument("--judges", type=int, default=1, choices=range(1, len(JUDGES) + 1))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sabench-aggregate-scale-") as tmp:
        root = Path(tmp) / "results"
        t0 = time.perf_counter()
        runs = build(root, args.runs, args.saus, args.judges)
        print(f"wrote {len(runs)} runs in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        spec = {"runs": pack_runs(runs), "papers": sorted({p for _, p, _ in runs})}
        spec.update(judges=list(JUDGES[: args.judges]), execute=True)
        command = [sys.executable, "-m", "sabench.aggregate", "--results", str(root)]
        t0 = time.perf_counter()
        subprocess.run([*command, "--grid", json.dumps(spec)], check=True, capture_output=True)
        seconds = time.perf_counter() - t0
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        n = pq.ParquetFile(root / "tables" / "judgments.parquet").metadata.num_rows
    print(f"aggregate: judgments={n} seconds={seconds:.1f} peak_mb={peak_mb:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
