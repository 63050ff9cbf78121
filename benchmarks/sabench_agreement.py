"""Agreement with SA-Bench's verdicts: re-judge its 240 runs with any judge that reads code.

    .venv/bin/python benchmarks/sabench_agreement.py --data ../shared/sabench      # static, 45 s
    .venv/bin/python benchmarks/sabench_agreement.py --judge llm:openai/gpt-4o-mini --max-usd 20

Prints, per judge (``--judge``, repeatable or comma-separated: static, llm:<model>; ``--settings``
by judge name, JSON) and against the reference claim scores (0, .25, .5, .75, 1): quadratic-weighted
Cohen's kappa, exact agreement, mean absolute error and Spearman's rho, overall and per dimension,
and the agents' scores by SA-Bench's rule with their rank correlation. Peer figures on the same data
(README of the data): SA-Bench's evidence gate as a predictor kappa 0.146; its scorer without an
LLM kappa 0. The archives are unpacked into a temporary folder. Ends with one line per judge:
``agreement: judge=<name> n=N kappa=K exact=E mae=M faults=F errors=X``.

An LLM judge asks about every SAU of every run (``samples`` times each), so before any request the
script prints ``cost: judge=<name> calls=N est_usd=X`` (prompt tokens counted on the prompts the
judge builds, 200 completion tokens a call, the price from the settings' ``prices`` or litellm's
map) and refuses to start above ``--max-usd``, which also caps the spending
(``sabench.judges.cost``). Answers are cached (``cache_dir``), so a rerun asks only what is new.

A fault is no verdict: a run whose judge could not finish (the provider unreachable or failing,
its rate limit) is left out of every figure, counted (``faults``) and named on stderr, and the
script exits 3 (a rerun redoes only those runs' missing answers); a missing or rejected API key
stops it at once (exit 3), the spending cap too (exit 2). An SAU the judge answered with ``error``
is left out and counted (``errors``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tarfile
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sabench.errors import UserError
from sabench.faults import FAULT_EXIT, Fault
from sabench.index import build_index
from sabench.judges import cost
from sabench.judges.reference import read_verdicts
from sabench.judges.run import run_judge
from sabench.judges.static import judge_static
from sabench.saus import import_sabench
from sabench.stats import agreement_metrics, snap, spearman

#: config, paper, SAU, dimension, the judge's score, the reference score, the judge's verdict
Row = tuple[str, str, str, str, float, float, str]
#: Faults that every other run would meet alike: the measurement stops at the first.
STOPPING = ("key_missing", "auth_rejected", "internal_error")


@dataclass
class Tally:
    """What one judge did over the runs."""

    rows: list[Row] = field(default_factory=list)
    verdicts: Counter[str] = field(default_factory=Counter)
    faults: list[str] = field(default_factory=list)
    errors: int = 0
    judgments: int = 0
    seconds: float = 0.0
    index_s: float = 0.0


@dataclass
class Run:
    config: str
    paper: str
    submission: Path
    saus: list[dict[str, Any]]
    reference: dict[str, float]


def runs(root: Path, data: Path, configs: list[str], saus: dict[str, list]) -> Iterator[Run]:
    """Every run with a reference verdict file, from the archives unpacked under ``root``."""
    for config in configs:
        for paper, paper_saus in saus.items():
            ref_path = data / "reference" / config / f"{paper}.json"
            if ref_path.exists():
                reference = {s: v["score"] for s, v in read_verdicts(ref_path, "sabench").items()}
                yield Run(config, paper, root / config / paper, paper_saus, reference)


def judge(name: str, settings: dict[str, Any], run: Run, tally: Tally) -> list[Any]:
    """The judge's judgments of one run (the static judge's index timed apart)."""
    t0 = time.perf_counter()
    if name == "static":
        index = build_index(run.submission)
        t1 = time.perf_counter()
        tally.index_s += t1 - t0
        out = judge_static(run.submission, run.saus, index=index)
        tally.seconds += time.perf_counter() - t1
        return out
    info = {"agent": run.config, "paper": run.paper, "seed": "0"}
    out = run_judge(name, settings, run.submission, run.saus, None, run=info)
    tally.seconds += time.perf_counter() - t0
    return out


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
    cost.add_judge_options(ap, "static, llm:<model>")
    ap.add_argument(
        "--dump", type=Path, help="write every judgment with its reference as JSON lines"
    )
    args = ap.parse_args(argv)
    try:
        judges = cost.parse_judges(
            args.judge, args.settings, cannot_run="SA-Bench's runs come without their environment"
        )
    except ValueError as exc:
        ap.error(str(exc))
    data: Path = args.data
    if not (data / "runs").is_dir():
        print(f"{data}/runs is absent: point --data at SA-Bench's data folder", file=sys.stderr)
        return 2
    saus = {
        p.stem: import_sabench(p, p.stem)
        for p in sorted((data / "saus").glob("*.json"))
        if not args.papers or p.stem in args.papers
    }
    configs = sorted(p.name[: -len(".tar.gz")] for p in (data / "runs").glob("*.tar.gz"))
    configs = [c for c in configs if not args.configs or c in args.configs]
    tallies = {name: Tally() for name, _ in judges}
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sabench-agreement-") as tmp:
        root = Path(tmp)
        for config in configs:
            with tarfile.open(data / "runs" / f"{config}.tar.gz") as tar:
                tar.extractall(root / config, filter="data")
        unpack_s = time.perf_counter() - t_all
        llm = [(name, settings) for name, settings in judges if cost.is_llm(name)]
        if llm:
            estimates = []
            for name, settings in llm:
                tokens = [
                    t
                    for run in runs(root, data, configs, saus)
                    for t in cost.prompt_tokens(run.submission, run.saus, settings)
                ]
                n = cost.samples(settings)
                estimates.append((name, settings, len(tokens) * n, sum(tokens) * n))
            why = cost.approve(estimates, args.max_usd, root)
            if why:
                print(f"error: {why}", file=sys.stderr)
                return 2
        dump = args.dump.open("w") if args.dump else None
        try:
            for run in runs(root, data, configs, saus):
                for name, settings in judges:
                    tally = tallies[name]
                    try:
                        judgments = judge(name, settings, run, tally)
                    except Fault as fault:
                        where = f"judge {name}, run {run.config}/{run.paper}"
                        print(f"fault: {where}: {fault}", file=sys.stderr, flush=True)
                        if fault.cause in STOPPING:
                            return FAULT_EXIT
                        tally.faults.append(where)
                        continue
                    except UserError as exc:  # the spending cap
                        print(f"error: judge {name}: {exc}", file=sys.stderr)
                        return 2
                    tally.judgments += len(judgments)
                    for j in judgments:
                        tally.verdicts[j.verdict] += 1
                        if j.verdict == "error" or j.score is None:
                            tally.errors += 1
                            continue
                        if j.sau_id not in run.reference:
                            continue
                        ref = run.reference[j.sau_id]
                        tally.rows.append(
                            (run.config, run.paper, j.sau_id, j.dimension, j.score, ref, j.verdict)
                        )
                        if dump:
                            record = {
                                "judge": name,
                                "config": run.config,
                                "paper": run.paper,
                                "sau_id": j.sau_id,
                                "dimension": j.dimension,
                                "verdict": j.verdict,
                                "score": j.score,
                                "reference": ref,
                                "reasoning": j.reasoning,
                            }
                            dump.write(json.dumps(record) + "\n")
        finally:
            if dump:
                dump.close()
    total_s = time.perf_counter() - t_all
    print(f"runs judged: {len(configs)} configs x {len(saus)} papers")
    for name, tally in tallies.items():
        print_judge(name, tally, unpack_s, total_s)
    for name, tally in tallies.items():
        print(summary_line(name, tally))
    return FAULT_EXIT if any(t.faults for t in tallies.values()) else 0


def print_judge(name: str, tally: Tally, unpack_s: float, total_s: float) -> None:
    print(f"\njudge {name}")
    work = tally.index_s + tally.seconds
    if name == "static":
        print(
            f"judgments: {tally.judgments} in {work:.1f} s (index {tally.index_s:.1f} s + rules "
            f"{tally.seconds:.1f} s) = {tally.judgments / max(work, 1e-9):.0f} judgments/s; "
            f"with unpacking {tally.judgments / max(total_s, 1e-9):.0f}/s"
        )
    else:
        print(f"judgments: {tally.judgments} in {work:.1f} s (unpacking {unpack_s:.1f} s apart)")
    print("verdicts:", dict(sorted(tally.verdicts.items())))
    if not tally.rows:
        return
    print(f"{'':8} {'n':>6} {'kappa':>6} {'exact':>6} {'MAE':>6} {'rho':>6} {'mean':>6} {'ref':>6}")
    for part, m in report(tally.rows).items():
        print(
            f"{part:8} {m['n']:6d} {m['kappa_qw']:6.3f} {m['exact']:6.3f} {m['mae']:6.3f} "
            f"{m['spearman']:6.3f} {m['mean_pred']:6.3f} {m['mean_ref']:6.3f}"
        )
    print("peer figures: evidence gate kappa 0.146; SA-Bench scorer without LLM kappa 0")
    ours, theirs = agent_scores(tally.rows)
    names = sorted(ours)
    print("agent scores (SA-Bench rule: dimension means -> paper -> mean over papers):")
    for agent in names:
        print(f"  {agent:28} {name} {ours[agent]:.3f}  reference {theirs[agent]:.3f}")
    if len(names) > 1:
        rho = spearman([ours[n] for n in names], [theirs[n] for n in names])
        print(f"  rank correlation of the {len(names)} agents: {rho:.3f}")


def summary_line(name: str, tally: Tally) -> str:
    """The last lines' format; ``nan`` where nothing was scored."""
    m = report(tally.rows).get("overall") if tally.rows else None

    def fmt(key: str) -> str:
        return "nan" if m is None or np.isnan(m[key]) else f"{m[key]:.3f}"

    return (
        f"agreement: judge={name} n={len(tally.rows)} kappa={fmt('kappa_qw')} "
        f"exact={fmt('exact')} mae={fmt('mae')} faults={len(tally.faults)} errors={tally.errors}"
    )


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
