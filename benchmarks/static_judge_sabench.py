"""Re-judge SA-Bench's 240 runs with the static judge and compare with SA-Bench's own verdicts.

    .venv/bin/python benchmarks/static_judge_sabench.py --data ../shared/sabench

Prints judgments per second and, against the reference claim scores (0, .25, .5, .75, 1): quadratic-
weighted Cohen's kappa, exact agreement, mean absolute error and Spearman's rho, overall and per
dimension. Peer figures on the same data (README of the data): SA-Bench's evidence gate as a predictor
kappa 0.146; its scorer without an LLM kappa 0. The archives are unpacked into a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import sys
import tarfile
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sabench.index import build_index
from sabench.judges.static import judge_static
from sabench.stats import agreement_metrics, snap, spearman


def load_saus(path: Path) -> list[dict]:
    data = json.loads(path.read_text())
    out = []
    for dim in ("D1", "D2", "D3", "D4"):
        for s in data.get(dim, []):
            out.append(
                {
                    "paper": data.get("paper_id", path.stem),
                    "sau_id": s["id"],
                    "dimension": dim,
                    "claim": s.get("claim", ""),
                    "source": s.get("source", ""),
                    "weight": 1.0,
                    "origin": "sabench",
                }
            )
    return out


def load_reference(path: Path) -> dict[str, float]:
    data = json.loads(path.read_text())
    return {
        c["id"]: float(c["score"])
        for d in data.get("dimensions", {}).values()
        for c in d.get("claims", [])
    }


def report(rows: list[tuple[str, str, str, str, float, float, str]]) -> dict[str, dict]:
    """Agreement figures overall and per dimension."""
    out = {}
    groups: dict[str, list] = defaultdict(list)
    for r in rows:
        groups["overall"].append(r)
        groups[r[3]].append(r)
    for name in ("overall", "D1", "D2", "D3", "D4"):
        rs = groups.get(name, [])
        if not rs:
            continue
        pred = [r[4] for r in rs]
        ref = [r[5] for r in rs]
        m = agreement_metrics(pred, ref)
        out[name] = {
            "n": m["n"],
            "kappa_qw": round(m["kappa_quadratic"], 3),
            "exact": round(m["exact_agreement"], 3),
            "mae": round(m["mae"], 3),
            "spearman": round(m["spearman"], 3),
            "mean_pred": round(float(snap(pred).mean()), 3),
            "mean_ref": round(float(np.mean(ref)), 3),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/sabench"))
    ap.add_argument("--configs", nargs="*", help="only these configurations")
    ap.add_argument("--papers", nargs="*", help="only these papers")
    ap.add_argument(
        "--dump", type=Path, help="write every judgment with its reference as JSON lines"
    )
    args = ap.parse_args(argv)
    data: Path = args.data
    if not (data / "runs").is_dir():
        print(f"{data}/runs is absent: point --data at SA-Bench's data folder", file=sys.stderr)
        return 2
    saus_by_paper = {p.stem: load_saus(p) for p in sorted((data / "saus").glob("*.json"))}
    if args.papers:
        saus_by_paper = {k: v for k, v in saus_by_paper.items() if k in args.papers}
    configs = sorted(p.name[: -len(".tar.gz")] for p in (data / "runs").glob("*.tar.gz"))
    if args.configs:
        configs = [c for c in configs if c in args.configs]
    rows: list[tuple[str, str, str, str, float, float, str]] = []
    verdicts: dict[str, int] = defaultdict(int)
    judge_s = index_s = unpack_s = 0.0
    n_judgments = 0
    dump = args.dump.open("w") if args.dump else None
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sabench-static-") as tmp:
        for cfg in configs:
            t0 = time.perf_counter()
            root = Path(tmp) / cfg
            root.mkdir()
            with tarfile.open(data / "runs" / f"{cfg}.tar.gz") as tar:
                tar.extractall(root, filter="data")
            unpack_s += time.perf_counter() - t0
            for paper, saus in saus_by_paper.items():
                ref_path = data / "reference" / cfg / f"{paper}.json"
                if not ref_path.exists():
                    continue
                ref = load_reference(ref_path)
                sub = root / paper
                t1 = time.perf_counter()
                index = build_index(sub)
                t2 = time.perf_counter()
                judgments = judge_static(sub, saus, index=index)
                t3 = time.perf_counter()
                index_s += t2 - t1
                judge_s += t3 - t2
                n_judgments += len(judgments)
                for j in judgments:
                    verdicts[j.verdict] += 1
                    for e in j.evidence:
                        assert e.start >= 1 and e.end >= e.start, (cfg, paper, j)
                    if j.sau_id not in ref or j.score is None:
                        continue
                    rows.append(
                        (cfg, paper, j.sau_id, j.dimension, j.score, ref[j.sau_id], j.verdict)
                    )
                    if dump:
                        dump.write(
                            json.dumps(
                                {
                                    "config": cfg,
                                    "paper": paper,
                                    "sau_id": j.sau_id,
                                    "dimension": j.dimension,
                                    "verdict": j.verdict,
                                    "score": j.score,
                                    "reference": ref[j.sau_id],
                                    "reasoning": j.reasoning,
                                }
                            )
                            + "\n"
                        )
    total_s = time.perf_counter() - t_all
    if dump:
        dump.close()
    work = index_s + judge_s
    print(f"runs judged: {len(configs)} configs x {len(saus_by_paper)} papers")
    print(
        f"judgments: {n_judgments} in {work:.1f} s (index {index_s:.1f} s + rules {judge_s:.1f} s)"
        f" = {n_judgments / work:.0f} judgments/s; with unpacking {n_judgments / total_s:.0f}/s"
    )
    print("verdicts:", dict(sorted(verdicts.items())))
    print(f"{'':8} {'n':>6} {'kappa':>6} {'exact':>6} {'MAE':>6} {'rho':>6} {'mean':>6} {'ref':>6}")
    for name, m in report(rows).items():
        print(
            f"{name:8} {m['n']:6d} {m['kappa_qw']:6.3f} {m['exact']:6.3f} {m['mae']:6.3f} "
            f"{m['spearman']:6.3f} {m['mean_pred']:6.3f} {m['mean_ref']:6.3f}"
        )
    print("peer figures: evidence gate kappa 0.146; SA-Bench scorer without LLM kappa 0")
    ours, theirs = agent_scores(rows)
    names = sorted(ours)
    print("agent scores (SA-Bench rule: dimension means -> paper -> mean over papers):")
    for name in names:
        print(f"  {name:28} static {ours[name]:.3f}  reference {theirs[name]:.3f}")
    rho = spearman([ours[n] for n in names], [theirs[n] for n in names])
    print(f"  rank correlation of the {len(names)} agents: {rho:.3f}")
    return 0


def agent_scores(rows: list[tuple]) -> tuple[dict[str, float], dict[str, float]]:
    """Per configuration: mean over papers of the mean over dimensions of the claim scores."""
    acc: dict[tuple[str, str, str], list[tuple[float, float]]] = defaultdict(list)
    for cfg, paper, _, dim, pred, ref, _ in rows:
        acc[(cfg, paper, dim)].append((pred, ref))
    papers: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for (cfg, paper, _), pairs in acc.items():
        arr = np.array(pairs)
        papers[(cfg, paper)].append((arr[:, 0].mean(), arr[:, 1].mean()))
    per_cfg: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for (cfg, _), dims in papers.items():
        arr = np.array(dims)
        per_cfg[cfg].append((arr[:, 0].mean(), arr[:, 1].mean()))
    ours = {c: float(np.mean([p for p, _ in v])) for c, v in per_cfg.items()}
    theirs = {c: float(np.mean([r for _, r in v])) for c, v in per_cfg.items()}
    return ours, theirs


if __name__ == "__main__":
    raise SystemExit(main())
