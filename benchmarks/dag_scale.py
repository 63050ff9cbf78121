"""Time `snakemake -n` on an SA-Bench-sized grid against Snakemake's own floor.

Builds 30 papers x 12 agents x 3 seeds from the demo's papers in a temporary folder and dry-runs the
real workflow on it. The floor is a trivial Snakefile with the same jobs and the same dependencies
(one rule per stage, plain file patterns, no input functions, params, resources or logs), so the
ratio is the cost of our workflow over what Snakemake needs for that DAG anyway. A flat Snakefile
of independent jobs is printed for reference too.

    .venv/bin/python benchmarks/dag_scale.py [--papers 30 --agents 12 --seeds 3 --repeat 5]

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

import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
FLAT = """
N = {n}
rule all:
    input: expand("out/{{i}}.txt", i=range(N))
rule one:
    output: "out/{{i}}.txt"
    shell: "touch {{output}}"
"""
SAME_SHAPE = """
PAPERS = __PAPERS__
RUNS = __RUNS__
PAPER_RUNS = list(dict.fromkeys((a, s) for a, _, s in RUNS))
JUDGES = __JUDGES__
wildcard_constraints:
    judge="|".join(JUDGES)
RUN = "r/runs/{agent}/{paper}/{seed}"
def paper_runs(name):
    return [f"r/runs/{a}/{{paper}}/{s}/{name}" for a, s in PAPER_RUNS]
rule all:
    input: "r/tables.done", "r/report.done"
rule ingest:
    output: "r/papers/{paper}/paper.md", directory("r/papers/{paper}/agent_view")
    shell: "touch {output}"
rule saus:
    input: "r/papers/{paper}/paper.md"
    output: "r/papers/{paper}/saus.parquet"
    shell: "touch {output}"
rule reproduce:
    input: "r/papers/{paper}/agent_view"
    output: directory(RUN + "/submission"), RUN + "/agent.json"
    shell: "touch {output}"
rule execute:
    input: RUN + "/submission", "r/papers/{paper}/agent_view"
    output: directory(RUN + "/executed"), RUN + "/execution.json"
    shell: "touch {output}"
rule judge:
    input: RUN + "/submission", RUN + "/execution.json", RUN + "/agent.json", "r/papers/{paper}/saus.parquet"
    output: RUN + "/judge/{judge}.parquet"
    shell: "touch {output}"
rule judgments:
    input: [f for j in JUDGES for f in paper_runs(f"judge/{j}.parquet")]
    output: paper_runs("judgments.parquet")
    shell: "touch {output}"
rule aggregate:
    input: [RUN.format(agent=a, paper=p, seed=s) + "/judgments.parquet" for a, p, s in RUNS]
    output: "r/tables.done"
    shell: "touch {output}"
rule report:
    input: "r/tables.done"
    output: "r/report.done"
    shell: "touch {output}"
"""


def make_grid(
    root: Path, n_papers: int, n_agents: int, n_seeds: int
) -> tuple[list[str], list[str], list[tuple[str, str, str]]]:
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
    config = [
        f"papers_dir={papers}",
        f"agents_file={root / 'agents.yaml'}",
        f"results={root / 'results'}",
    ]
    names = sorted(p.name for p in papers.iterdir())
    runs = [
        (f"agent{a:02d}", p, str(s)) for a in range(n_agents) for p in names for s in range(n_seeds)
    ]
    return config, names, runs


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
    parser.add_argument("--repeat", type=int, default=5, help="best of N, in turns")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sabench-dag-") as tmp:
        root = Path(tmp)
        config, papers, runs = make_grid(root, args.papers, args.agents, args.seeds)
        # as ours with executions (docs/architecture.md, batched steps): a judge job per run and
        # judge, the merge per paper
        judges = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["judges"]
        floor = (
            SAME_SHAPE.replace("__PAPERS__", repr(papers))
            .replace("__RUNS__", repr(runs))
            .replace("__JUDGES__", repr(judges))
        )
        jobs = dry_run(["--config", *config], REPO)[1]
        folders = {}
        for name, text in (("floor", floor), ("flat", FLAT.format(n=jobs - 1))):
            folders[name] = root / name
            folders[name].mkdir()
            (folders[name] / "Snakefile").write_text(text)
        # in turns, so that a change in the machine's load weighs on all three alike
        trials: dict[str, list[float]] = {"ours": [], "floor": [], "flat": []}
        for _ in range(args.repeat):
            for name in trials:
                if name == "ours":
                    seconds, n = dry_run(["--config", *config], REPO)
                else:
                    seconds, n = dry_run([], folders[name])
                if n != jobs:
                    sys.exit(f"job counts differ: ours {jobs}, {name} {n}")
                trials[name].append(seconds)
        timings = {name: min(times) for name, times in trials.items()}
    ours_s = timings["ours"]
    floor_s = timings["floor"]
    print(f"grid: {args.papers} papers x {args.agents} agents x {args.seeds} seeds")
    print(
        f"flat Snakefile of {jobs} independent jobs: {timings['flat']:.2f} s "
        f"({1000 * timings['flat'] / jobs:.2f} ms/job); ours {1000 * ours_s / jobs:.2f} ms/job"
    )
    print(
        f"dag: jobs={jobs} ours_s={ours_s:.2f} floor_s={floor_s:.2f} ratio={ours_s / floor_s:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
