"""Time the report (the drift explorer) on an SA-Bench-sized grid of synthetic runs.

Writes 30 papers x 8 agents x 1 seed (240 runs) with 25 SAUs per paper and two judges (12,000
judgments) as real run folders (judgments.parquet, agent.json, execution.json, a submission of
five Python files the evidence cites, execution.log) plus each paper's paper.md, aggregates them
with sabench.aggregate, then times ``make_report`` alone. With Chromium installed it also times
the heaviest run page's load against an empty page (``page_s`` is the difference).

    .venv/bin/python benchmarks/report_scale.py [--papers 30 --agents 8 --seeds 1 --saus 25]

Last line: ``report: runs=<n> judgments=<n> seconds=<build> pages=<n> [page_s=<load>]``. Goals:
seconds < 60 and page_s < 2.
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from sabench import aggregate as agg
from sabench.contracts import JUDGMENT_COLUMNS, SAU_COLUMNS
from sabench.io import write_json, write_parquet
from sabench.report import make_report

VERDICTS = [("aligned", 1.0), ("partial", 0.5), ("drifted", 0.0), ("missing", 0.0)]
MODES = {"drifted": "implementation_mismatch", "missing": "omission"}
JUDGES = ("static", "llm")


def module(index: int, run: str) -> str:
    """A 120-line Python file with definitions, comments, strings and numbers to highlight (its
    own per run: submissions differ, so nothing can be shared between runs)."""
    lines = [f'"""Module {index} of the submission of {run}."""', "import numpy as np", ""]
    for i in range(20):
        lines += [
            f"def step_{i}(x, lr={0.01 * (i + 1):.2f}):",
            f"    # update {i}: the paper's rule",
            f"    y = np.mean((x - {i}) ** 2) + lr * np.sum(x)",
            f'    name = "step-{i}"',
            "    return y, name",
            "",
        ]
    return "\n".join(lines) + "\n"


def build(root: Path, papers: int, agents: int, seeds: int, n_saus: int) -> list:
    rng = random.Random(0)
    dims = ["D1", "D2", "D3", "D4"]
    grid = []
    for p in range(papers):
        paper = f"paper-{p:02d}"
        folder = root / "papers" / paper
        sentences = [
            f"Claim {s} of {paper}: the learning rate is 0.0{s % 9 + 1}." for s in range(n_saus)
        ]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "paper.md").write_text(f"# {paper}\n\n" + "\n\n".join(sentences) + "\n")
        write_json(
            folder / "paper.json",
            {
                "paper": paper,
                "title": f"Synthetic paper {p}",
                "sha256": "0" * 64,
                "source_format": "md",
                "sections": ["Intro"],
                "n_chars": 1000,
            },
        )
        rows = []
        for s in range(n_saus):
            row = dict.fromkeys(SAU_COLUMNS)
            row.update(
                paper=paper,
                sau_id=f"{paper}-{dims[s % 4]}-{s:03d}",
                dimension=dims[s % 4],
                claim=f"claim {s} of {paper}",
                source=sentences[s][:40],
                weight=1.0,
                origin="curated",
                grounded=True,
            )
            rows.append(row)
        write_parquet(folder / "saus.parquet", pd.DataFrame(rows), sau_set_hash=f"h-{paper}")
        for a in range(agents):
            for seed in range(seeds):
                run = (f"agent-{a}", paper, str(seed))
                grid.append(run)
                rdir = root / "runs" / run[0] / paper / run[2]
                for i in range(5):
                    name, text = f"src/mod_{i}.py", module(i, "/".join(run))
                    (rdir / "submission" / name).parent.mkdir(parents=True, exist_ok=True)
                    (rdir / "submission" / name).write_text(text)
                (rdir / "execution.log").write_text(
                    "".join(f"epoch {i} loss {1 / (i + 1):.4f}\n" for i in range(200))
                )
                write_json(
                    rdir / "agent.json",
                    {
                        "agent": run[0],
                        "paper": paper,
                        "seed": run[2],
                        "kind": "replay",
                        "status": "replayed",
                        "steps": 3,
                        "wall_s": 12.5,
                        "prompt_tokens": 1000,
                        "completion_tokens": 200,
                        "cost_usd": 0.01,
                        "model": "m",
                        "error": None,
                        "submission_hash": "sub",
                        "started_at": "2026-01-01T00:00:00+00:00",
                    },
                )
                write_json(
                    rdir / "execution.json",
                    {
                        "status": "ok",
                        "exit_code": 0,
                        "wall_s": 30.0,
                        "peak_mem_mb": 200,
                        "backend": "bwrap",
                        "isolation": "sandbox",
                        "log_bytes": 4000,
                        "metrics": {"acc": 0.9, "loss": 0.1},
                        "started_at": "2026-01-01T00:01:00Z",
                    },
                )
                judgments = []
                for sau in rows:
                    for judge in JUDGES:
                        verdict, score = rng.choice(VERDICTS)
                        row = dict.fromkeys(JUDGMENT_COLUMNS)
                        start = rng.randint(1, 110)
                        row.update(
                            agent=run[0],
                            paper=paper,
                            seed=run[2],
                            sau_id=sau["sau_id"],
                            dimension=sau["dimension"],
                            judge=judge,
                            score=score,
                            verdict=verdict,
                            failure_mode=MODES.get(verdict),
                            evidence=[
                                {
                                    "file": f"src/mod_{rng.randrange(5)}.py",
                                    "start": start,
                                    "end": start + rng.randint(0, 8),
                                }
                                for _ in range(3)
                            ],
                            reasoning=f"{judge}: {verdict} because of the value at line {start}.",
                            prompt_tokens=800 if judge == "llm" else 0,
                            completion_tokens=80 if judge == "llm" else 0,
                            cost_usd=0.001 if judge == "llm" else 0.0,
                            cached=False,
                            latency_s=0.5,
                            judge_fingerprint=f"{judge}-fp",
                            sau_set_hash=f"h-{paper}",
                            submission_hash="sub",
                        )
                        judgments.append(row)
                write_parquet(
                    rdir / "judgments.parquet",
                    pd.DataFrame(judgments, columns=list(JUDGMENT_COLUMNS)),
                )
    return grid


def chromium() -> str | None:
    return next((b for b in ("chromium", "chromium-browser") if shutil.which(b)), None)


def load_s(binary: str, page: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [binary, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=30)
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--saus", type=int, default=25)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sabench-report-scale-") as tmp:
        root = Path(tmp) / "results"
        grid = build(root, args.papers, args.agents, args.seeds, args.saus)
        papers = sorted({r[1] for r in grid})
        tables = agg.aggregate(root, grid, papers, root / "tables")
        t0 = time.perf_counter()
        make_report(tables, root / "report", root)
        seconds = time.perf_counter() - t0
        pages = sorted((root / "report").rglob("*.html"))
        line = (
            f"report: runs={len(grid)} judgments={len(tables['judgments'])} "
            f"seconds={seconds:.1f} pages={len(pages)}"
        )
        # the heaviest page of each kind (summary, agent, paper, run, disagreements)
        kinds: dict[str, Path] = {}
        for page in pages:
            kind = page.relative_to(root / "report").parts[:2][-1]
            kind = kind if not kind.endswith(".html") else "summary"
            if kind not in kinds or page.stat().st_size > kinds[kind].stat().st_size:
                kinds[kind] = page
        for kind, page in sorted(kinds.items()):
            print(
                f"heaviest {kind} page: {page.relative_to(root / 'report')} "
                f"({page.stat().st_size / 1e6:.2f} MB)",
                file=sys.stderr,
            )
        binary = chromium()
        if binary:
            empty = Path(tmp) / "empty.html"
            empty.write_text("<!DOCTYPE html><html><body></body></html>")
            base = min(load_s(binary, empty) for _ in range(3))
            loads = {k: min(load_s(binary, p) for _ in range(3)) - base for k, p in kinds.items()}
            print("load (s, over an empty page): " + ", ".join(
                f"{k} {v:.2f}" for k, v in sorted(loads.items())), file=sys.stderr)  # fmt: skip
            slowest = max(loads.values()) + base
            line += f" page_s={max(0.0, slowest - base):.2f}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
