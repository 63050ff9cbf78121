"""The SA-Bench grid through snakemake against `benchmarks/rejudge.py`, in the same run.

    .venv/bin/python benchmarks/grid_scale.py --data ../shared/sabench [--cores 2]

Re-judges SA-Bench's runs (its papers x its agent configurations, `config/examples/sabench.yaml`:
the static and reference judges, no execution) through the whole workflow into a temporary
results folder, then the same runs with `benchmarks/rejudge.py` (the static judge in a loop, no
workflow, as many worker processes as --cores). Both unpack every archive, import the SAUs and
judge every run; the workflow also ingests the papers, writes each run's files, logs and records,
aggregates the tables and builds the report. The difference is the cost of the workflow. Last line:

    grid: runs=<n> jobs=<n> snakemake_s=<s> rejudge_s=<s> ratio=<snakemake_s / rejudge_s>

Goal: ratio <= 2.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def timed(command: list[str]) -> tuple[float, str]:
    """Run ``command`` from the repository root: (wall seconds, its output); fail loudly."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SNAKEMAKE")}
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    t0 = time.perf_counter()
    proc = subprocess.run(
        command, cwd=REPO, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL
    )
    wall = time.perf_counter() - t0
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        sys.exit(f"{' '.join(command[:3])} ... failed ({proc.returncode}):\n{out[-4000:]}")
    return wall, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "sabench")
    ap.add_argument("--cores", type=int, default=min(2, os.cpu_count() or 1))
    args = ap.parse_args(argv)
    data = args.data.resolve()
    if not (data / "runs").is_dir():
        print(f"{data}/runs is absent: point --data at SA-Bench's data folder", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="sabench-grid-scale-") as tmp:
        results = Path(tmp) / "results"
        workflow = [SNAKEMAKE, "--cores", str(args.cores), "--quiet", "rules"]
        workflow += ["--configfile", "config/examples/sabench.yaml"]
        workflow += ["--config", f"sabench_data={data}", f"results={results}"]
        snakemake_s, out = timed(workflow)
        jobs = re.search(r"^total\s+(\d+)$", out, re.MULTILINE)
        runs = sum(1 for _ in (results / "runs").glob("*/*/*/agent.json"))
        print(out.strip())
    rejudge_s, out = timed(
        [sys.executable, "benchmarks/rejudge.py", "--data", str(data), "--workers", str(args.cores)]
    )
    print(out.strip().splitlines()[-1])
    n_jobs = jobs.group(1) if jobs else "?"
    print(
        f"grid: runs={runs} jobs={n_jobs} snakemake_s={snakemake_s:.1f} rejudge_s={rejudge_s:.1f}"
        f" ratio={snakemake_s / rejudge_s:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
