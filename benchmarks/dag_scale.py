"""Time `snakemake -n` on an SA-Bench-sized grid against Snakemake's own floor.

Builds 30 papers x 12 agents x 3 seeds from the demo's papers and submissions in a temporary folder,
dry-runs the real workflow on it, then dry-runs a trivial Snakefile with the same number of jobs.

    .venv/bin/python benchmarks/dag_scale.py [--papers 30 --agents 12 --seeds 3 --repeat 3]

Last line: ``dag: jobs=<n> ours_s=<seconds> floor_s=<seconds> ratio=<ours/floor>``. Goal: ratio <= 1.2.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
TRIVIAL = """
N = {n}
rule all:
    input: expand("out/{{i}}.txt", i=range(N))
rule one:
    output: "out/{{i}}.txt"
    shell: "touch {{output}}"
"""


def make_grid(root: Path, n_papers: int, n_agents: int, n_seeds: int) -> list[str]:
    demo = sorted(p for p in (REPO / "resources" / "papers").iterdir() if p.is_dir())
    papers = root / "papers"
    for i in range(n_papers):
        src = demo[i % len(demo)]
        shutil.copytree(src, papers / f"{src.name}-{i:02d}")
    seeds = ", ".join(str(s) for s in range(n_seeds))
    agents = [
        f"agent{i:02d}:\n  kind: replay\n  path: {root}/subs/{{paper}}/{{seed}}\n  seeds: [{seeds}]\n"
        for i in range(n_agents)
    ]
    (root / "agents.yaml").write_text("".join(agents))
    return [
        f"papers_dir={papers}",
        f"agents_file={root / 'agents.yaml'}",
        f"results={root / 'results'}",
    ]


def dry_run(args: list[str], cwd: Path) -> tuple[float, int]:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [SNAKEMAKE, "-n", "--quiet", "rules", *args], cwd=cwd, capture_output=True, text=True
    )
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"snakemake -n failed in {cwd}:\n{proc.stdout}\n{proc.stderr}")
    totals = re.findall(r"^total\s+(\d+)", proc.stdout + proc.stderr, re.MULTILINE)
    return elapsed, int(totals[-1]) if totals else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=30)
    parser.add_argument("--agents", type=int, default=12)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3, help="best of N")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sabench-dag-") as tmp:
        root = Path(tmp)
        config = make_grid(root, args.papers, args.agents, args.seeds)
        ours = [dry_run(["--config", *config], REPO) for _ in range(args.repeat)]
        jobs = ours[0][1]
        floor_dir = root / "floor"
        floor_dir.mkdir()
        (floor_dir / "Snakefile").write_text(TRIVIAL.format(n=jobs - 1))
        floor = [dry_run([], floor_dir) for _ in range(args.repeat)]
        if floor[0][1] != jobs:
            sys.exit(f"job counts differ: ours {jobs}, floor {floor[0][1]}")
    ours_s = min(t for t, _ in ours)
    floor_s = min(t for t, _ in floor)
    print(f"grid: {args.papers} papers x {args.agents} agents x {args.seeds} seeds")
    print(
        f"dag: jobs={jobs} ours_s={ours_s:.2f} floor_s={floor_s:.2f} ratio={ours_s / floor_s:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
