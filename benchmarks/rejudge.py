"""Re-judge all of SA-Bench's runs with the static judge: speed, memory and agreement.

    .venv/bin/python benchmarks/rejudge.py --data ../shared/sabench

Every run archive (runs/<config>.tar.gz) is unpacked into a temporary folder (never into the repo),
every paper's SAUs are judged from the code alone, and the claim scores are compared with SA-Bench's
own verdicts (reference/<config>/<paper>.json). The work is spread over --workers processes (one
configuration at a time each). Judgments per second count everything from the first unpacking to
the last verdict (wall clock); peak memory is the main process's peak plus --workers times the
largest worker's peak (an upper bound of what ran at once). The last line is

    rejudge: judgments_per_s=<x> peak_mb=<y> kappa=<quadratic-weighted kappa vs reference>
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sabench.contracts import DIMENSIONS  # noqa: E402
from sabench.index import build_index  # noqa: E402
from sabench.judges.reference import read_verdicts  # noqa: E402
from sabench.judges.static import judge_static  # noqa: E402
from sabench.saus import import_sabench  # noqa: E402
from sabench.stats import agreement_metrics  # noqa: E402

Row = tuple[str, str, str, str, float, float, str, str]


def judge_config(data: Path, config: str, papers: list[str]) -> tuple[list[Row], int, float, float]:
    """(paired scores, judgments made, seconds indexing+judging, this worker's peak RSS in MB)."""
    rows: list[Row] = []
    n = 0
    busy = 0.0
    with tempfile.TemporaryDirectory(prefix="sabench-rejudge-") as tmp:
        with tarfile.open(data / "runs" / f"{config}.tar.gz") as tar:
            tar.extractall(tmp, filter="data")
        for paper in papers:
            saus = import_sabench(data / "saus" / f"{paper}.json", paper)
            t0 = time.perf_counter()
            sub = Path(tmp) / paper
            judgments = judge_static(sub, saus, index=build_index(sub))
            busy += time.perf_counter() - t0
            n += len(judgments)
            ref_path = data / "reference" / config / f"{paper}.json"
            ref = read_verdicts(ref_path, "sabench") if ref_path.is_file() else {}
            for j in judgments:
                if j.score is not None and j.sau_id in ref:
                    ref_score = ref[j.sau_id]["score"]
                    rows.append(
                        (
                            config,
                            paper,
                            j.sau_id,
                            j.dimension,
                            j.score,
                            ref_score,
                            j.verdict,
                            j.reasoning,
                        )
                    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return rows, n, busy, peak


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "sabench")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--configs", nargs="*", help="only these configurations")
    ap.add_argument("--dump", type=Path, help="write every paired judgment as JSON lines")
    args = ap.parse_args(argv)
    data: Path = args.data
    if not (data / "runs").is_dir():
        print(f"{data}/runs is absent: point --data at SA-Bench's data folder", file=sys.stderr)
        return 2
    papers = sorted(p.stem for p in (data / "saus").glob("*.json"))
    configs = sorted(p.name[: -len(".tar.gz")] for p in (data / "runs").glob("*.tar.gz"))
    configs = [c for c in configs if not args.configs or c in args.configs]
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    rows: list[Row] = []
    n = 0
    busy = 0.0
    worker_peak = 0.0
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        for got, k, b, peak in pool.map(
            judge_config, [data] * len(configs), configs, [papers] * len(configs)
        ):
            rows += got
            n += k
            busy += b
            worker_peak = max(worker_peak, peak)
    wall = time.perf_counter() - t0
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time() - cpu0 + children.ru_utime + children.ru_stime
    main_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    peak_mb = main_peak + args.workers * worker_peak
    print(f"runs: {len(configs)} configurations x {len(papers)} papers, {args.workers} workers")
    print(
        f"judgments: {n} in {wall:.1f} s wall ({cpu:.1f} s CPU; indexing and judging {busy:.1f} s)"
        f" = {n / wall:.0f} judgments/s"
    )
    print(f"memory: main {main_peak:.0f} MB, largest worker {worker_peak:.0f} MB")
    print(f"{'':8} {'n':>6} {'kappa':>6} {'exact':>6} {'MAE':>6} {'rho':>6}")
    overall = None
    for dim in ("overall", *DIMENSIONS):
        sub = [r for r in rows if dim in ("overall", r[3])]
        if not sub:
            continue
        m = agreement_metrics([r[4] for r in sub], [r[5] for r in sub])
        overall = overall or m
        print(
            f"{dim:8} {m['n']:6d} {m['kappa_quadratic']:6.3f} {m['exact_agreement']:6.3f} "
            f"{m['mae']:6.3f} {m['spearman']:6.3f}"
        )
    if args.dump:
        import json

        keys = (
            "config",
            "paper",
            "sau_id",
            "dimension",
            "score",
            "reference",
            "verdict",
            "reasoning",
        )
        with args.dump.open("w") as fh:
            for r in rows:
                fh.write(json.dumps(dict(zip(keys, r, strict=True))) + "\n")
    kappa = overall["kappa_quadratic"] if overall else float("nan")
    print(f"rejudge: judgments_per_s={n / wall:.0f} peak_mb={peak_mb:.0f} kappa={kappa:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
