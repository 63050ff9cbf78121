"""Drift injection on the demo papers and on SA-Bench's runs: does a judge see a known drift?

    .venv/bin/python benchmarks/drift_injection.py --data ../shared/sabench

Mutants (sabench.drift: one known drift each, tied to the SAU it breaks) are made from
- the demo papers' reference submissions (resources/submissions/reference, every SAU), and
- SA-Bench's 240 runs, for the SAUs SA-Bench's own judge scored at least 0.75 (a drift can only be
  injected into what was implemented), its cited lines guiding the search for prose claims,
and every mutant is re-judged by the static judge. Prints, per source and drift type, the recall (the
broken SAU's score drops), the recall where the original was credited, the false-alarm rate (other
SAUs of the run whose score changes) and the mean drop; writes every mutant to --out (Parquet).
"""

from __future__ import annotations

import argparse
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sabench.drift import drift_frame, drift_summary, judge_mutants, make_mutants  # noqa: E402
from sabench.judges.reference import read_verdicts  # noqa: E402
from sabench.saus import import_paper_saus, import_sabench  # noqa: E402

JUDGES = (("static", {}),)


def demo_unit() -> list[dict[str, Any]]:
    """Every SAU of the demo papers (small: no cap)."""
    rows: list[dict[str, Any]] = []
    for paper_dir in sorted((REPO / "resources" / "papers").iterdir()):
        sub = REPO / "resources" / "submissions" / "reference" / paper_dir.name
        if not sub.is_dir():
            continue
        saus = import_paper_saus(paper_dir)
        mutants = make_mutants(sub, saus)
        info = {"agent": "demo-reference", "paper": paper_dir.name, "seed": "0"}
        rows += judge_mutants(sub, saus, mutants, JUDGES, info)
    return rows


def sabench_unit(
    data: Path, config: str, papers: list[str], max_per_run: int | None, min_score: float
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="sabench-drift-") as tmp:
        with tarfile.open(data / "runs" / f"{config}.tar.gz") as tar:
            tar.extractall(tmp, filter="data")
        for paper in papers:
            sub = Path(tmp) / paper
            ref_path = data / "reference" / config / f"{paper}.json"
            if not sub.is_dir() or not ref_path.is_file():
                continue
            saus = import_sabench(data / "saus" / f"{paper}.json", paper)
            verdicts = read_verdicts(ref_path, "sabench")
            eligible = [s for s, v in verdicts.items() if v["score"] >= min_score]
            if not eligible:
                continue
            cited = {
                s: [(e.file, e.start, e.end) for e in v["evidence"]] for s, v in verdicts.items()
            }
            mutants = make_mutants(
                sub, saus, eligible=eligible, cited=cited, max_per_type=max_per_run
            )
            info = {"agent": config, "paper": paper, "seed": "0"}
            rows += judge_mutants(sub, saus, mutants, JUDGES, info)
    return rows


def _print(title: str, table: Any) -> None:
    summary = drift_summary(table)
    print(f"\n{title}: {len(table)} mutants in {table['paper'].nunique()} papers")
    print(
        f"{'drift type':<11} {'n':>5} {'recall':>7} {'credited':>9} {'false alarms':>13} {'drop':>6}"
    )
    for r in summary.itertuples():
        print(
            f"{r.drift_type:<11} {r.n_mutants:5d} {r.recall:7.3f} {r.recall_if_credited:9.3f} "
            f"{r.false_alarm_rate:13.3f} {r.mean_drop:6.3f}"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, help="SA-Bench's data folder (../shared/sabench)")
    ap.add_argument("--no-demo", action="store_true", help="skip the demo papers")
    ap.add_argument("--configs", nargs="*", help="only these SA-Bench configurations")
    ap.add_argument("--papers", nargs="*", help="only these SA-Bench papers")
    ap.add_argument(
        "--max-per-run", type=int, default=4, help="SA-Bench: mutants per run and drift type"
    )
    ap.add_argument("--min-reference-score", type=float, default=0.75)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=REPO / "results" / "drift_injection.parquet")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    futures = []
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        if not args.no_demo:
            futures.append(("demo", pool.submit(demo_unit)))
        if args.data:
            if not (args.data / "runs").is_dir():
                print(
                    f"{args.data}/runs is absent: point --data at SA-Bench's data", file=sys.stderr
                )
                return 2
            papers = sorted(p.stem for p in (args.data / "saus").glob("*.json"))
            papers = [p for p in papers if not args.papers or p in args.papers]
            configs = sorted(
                p.name[: -len(".tar.gz")] for p in (args.data / "runs").glob("*.tar.gz")
            )
            for config in configs:
                if args.configs and config not in args.configs:
                    continue
                fut = pool.submit(
                    sabench_unit,
                    args.data,
                    config,
                    papers,
                    args.max_per_run,
                    args.min_reference_score,
                )
                futures.append(("sabench", fut))
        rows: dict[str, list[dict[str, Any]]] = {"demo": [], "sabench": []}
        for source, fut in futures:
            rows[source] += fut.result()
    from sabench.io import write_parquet

    table = drift_frame(rows["demo"] + rows["sabench"])
    write_parquet(args.out, table, table="drift_injection")
    if rows["demo"]:
        _print("demo papers (reference submissions, every SAU)", drift_frame(rows["demo"]))
    if rows["sabench"]:
        _print(
            f"SA-Bench runs (SAUs its judge scored >= {args.min_reference_score})",
            drift_frame(rows["sabench"]),
        )
    print(f"\n{len(table)} mutant judgments in {time.perf_counter() - t0:.0f} s -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
