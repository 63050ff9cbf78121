"""Agreement with SA-Bench's verdicts: re-judge its 240 runs with any judge that reads code.

    .venv/bin/python benchmarks/sabench_agreement.py --data ../shared/sabench      # static, 45 s
    .venv/bin/python benchmarks/sabench_agreement.py --judge llm:openai/gpt-4o-mini --max-usd 20

Prints, per judge (``--judge``, repeatable or comma-separated: static, llm:<model>; ``--settings``
by judge name, JSON) and against the reference claim scores (0, .25, .5, .75, 1): quadratic-weighted
Cohen's kappa, exact agreement, mean absolute error and Spearman's rho, overall and per dimension,
and the agents' scores by SA-Bench's rule with their rank correlation. Peer figures on the same data
(README of the data): SA-Bench's evidence gate as a predictor kappa 0.146; its scorer without an
LLM kappa 0. The archives are unpacked into a temporary folder. Ends with one line per judge:
``agreement: judge=<name> n=N kappa=K exact=E mae=M faults=F errors=X undetermined=U``.

An LLM judge asks about every SAU of every run (``samples`` times each), so before any request the
script prints ``cost: judge=<name> calls=N est_usd=X`` (prompt tokens counted on the prompts the
judge builds, 200 completion tokens a call, the price from the settings' ``prices`` or litellm's
map) and refuses to start above ``--max-usd``, which also caps the spending
(``sabench.judges.cost``). Answers are cached (``cache_dir``), so a rerun asks only what is new.

A ``cascade:<model>`` judge (sabench.judges.cascade) keeps the static verdicts whose calibrated
confidence reaches its ``threshold`` and asks the model about the rest. Before any request the
script judges every run statically and prints, per threshold (``--thresholds``, default 0.2 to
0.9), the share of SAUs the static judge decides, that part's quadratic kappa, exact agreement
and MAE against SA-Bench's verdicts, and the LLM cost of the SAUs sent on (prompt tokens as the
LLM judge builds them, priced as above) against the LLM judge alone; separately for the
configurations the confidence was fitted on and for the others (``confidence.FIT_CONFIGS``),
then ``cascade: judge=<name> threshold=T part=<test|all> share_static=S kappa_static=K
exact_static=E est_usd=X llm_alone_usd=Y``. ``--figure PNG`` draws the curve. ``--max-usd 0``
means estimate only: the cost lines and curves, no request (for an llm judge too); otherwise the
cascade runs at its threshold and is measured like any judge. ``--fit-confidence`` refits the
static judge's confidence table on the fitting half, prints it as the constant to paste into
sabench/judges/static/confidence.py, and prints and draws the curves with it. The curve of
docs/calibration.md (prompt tokens of every SAU: about an hour on 2 cores):

    .venv/bin/python benchmarks/sabench_agreement.py --data ../shared/sabench \
        --judge cascade:openai/gpt-4o-mini --max-usd 0 --figure docs/img/confidence.png

A fault is no verdict: a run whose judge could not finish (the provider unreachable or failing,
its rate limit) is left out of every figure, counted (``faults``) and named on stderr, and the
script exits 3 (a rerun redoes only those runs' missing answers); a missing or rejected API key
stops it at once (exit 3), the spending cap too (exit 2). An SAU the judge answered with ``error``
is left out and counted (``errors``), and so is one it abstained on (``undetermined``).
"""

from __future__ import annotations

import argparse
import json
import math
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

from sabench.contracts import UNDETERMINED, VERDICT_SCORES
from sabench.errors import UserError
from sabench.faults import FAULT_EXIT, Fault
from sabench.index import CodeIndex, build_index
from sabench.judges import cost
from sabench.judges.cascade import split_settings
from sabench.judges.reference import read_verdicts
from sabench.judges.registry import judge_kind
from sabench.judges.run import run_judge
from sabench.judges.static import confidence as conf
from sabench.judges.static import judge_outcomes, judge_static
from sabench.saus import import_sabench
from sabench.stats import agreement_metrics, snap, spearman

#: config, paper, SAU, dimension, the judge's score, the reference score, the judge's verdict
Row = tuple[str, str, str, str, float, float, str]
#: Faults that every other run would meet alike: the measurement stops at the first.
STOPPING = ("key_missing", "auth_rejected", "internal_error")
#: The cascade's thresholds the curve is printed for (``--thresholds``).
THRESHOLDS = tuple(round(0.2 + 0.05 * i, 2) for i in range(15))


@dataclass
class Point:
    """One SAU with a reference verdict, as the cascade sees it before any request."""

    config: str
    dimension: str
    verdict: str
    score: float | None
    reference: float
    confidence: float
    #: its prompt tokens per cascade judge (0: the LLM judge would send nothing)
    tokens: dict[str, int] = field(default_factory=dict)
    #: the verdict's group and raw score in the confidence table (what a refit reads)
    group: str | None = None
    raw: float = 0.0


@dataclass
class Tally:
    """What one judge did over the runs."""

    rows: list[Row] = field(default_factory=list)
    verdicts: Counter[str] = field(default_factory=Counter)
    faults: list[str] = field(default_factory=list)
    errors: int = 0
    undetermined: int = 0
    #: the judgments of each judge a cascade delegated to (``decided_by``)
    decided: Counter[str] = field(default_factory=Counter)
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


def is_cascade(name: str) -> bool:
    kind = judge_kind(name)
    return kind is not None and kind.name == "cascade"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/sabench"))
    ap.add_argument("--configs", nargs="*", help="only these configurations")
    ap.add_argument("--papers", nargs="*", help="only these papers")
    cost.add_judge_options(ap, "static, llm:<model>, cascade:<model>")
    ap.add_argument(
        "--dump", type=Path, help="write every judgment with its reference as JSON lines"
    )
    ap.add_argument(
        "--thresholds", type=float, nargs="+", default=THRESHOLDS, help="the cascade's curve"
    )
    ap.add_argument("--figure", type=Path, help="draw the cascade's curve into this PNG")
    ap.add_argument(
        "--fit-confidence",
        action="store_true",
        help="refit the static judge's confidence table on confidence.FIT_CONFIGS and print it",
    )
    args = ap.parse_args(argv)
    try:
        judges = cost.parse_judges(
            args.judge, args.settings, cannot_run="SA-Bench's runs come without their environment"
        )
        cascades = {name: split_settings(name, s) for name, s in judges if is_cascade(name)}
    except (ValueError, UserError) as exc:
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
    estimate_only = args.max_usd == 0
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sabench-agreement-") as tmp:
        root = Path(tmp)
        for config in configs:
            with tarfile.open(data / "runs" / f"{config}.tar.gz") as tar:
                tar.extractall(root / config, filter="data")
        unpack_s = time.perf_counter() - t_all
        curves: dict[str, dict[str, list[dict[str, float]]]] = {}
        estimates = []
        t_curve = time.perf_counter()
        if cascades or args.fit_confidence:
            points = cascade_points(root, data, configs, saus, cascades)
            if args.fit_confidence:
                refit(points)
            for name, (threshold, llm_settings) in cascades.items() or [("static", (0.0, {}))]:
                curves[name] = print_curve(name, llm_settings, points, args.thresholds, threshold)
                if name in cascades:
                    sent = [p.tokens[name] for p in points if not kept(p, threshold)]
                    n = cost.samples(llm_settings)
                    calls = sum(1 for t in sent if t) * n
                    estimates.append((name, llm_settings, calls, sum(sent) * n))
            if args.figure and curves:
                draw_curve(curves, args.figure)
                print(f"figure: {args.figure}")
        curve_s = time.perf_counter() - t_curve  # not the judges' time
        llm = [(name, settings) for name, settings in judges if cost.is_llm(name)]
        for name, settings in llm:
            if name in cascades:
                continue
            tokens = [
                t
                for run in runs(root, data, configs, saus)
                for t in cost.prompt_tokens(run.submission, run.saus, settings)
            ]
            n = cost.samples(settings)
            estimates.append((name, settings, len(tokens) * n, sum(tokens) * n))
        if estimates:
            why = cost.approve(estimates, None if estimate_only else args.max_usd, root)
            if why:
                print(f"error: {why}", file=sys.stderr)
                return 2
        if estimate_only:  # the cost lines and curves only: no request
            judges = [(n, s) for n, s in judges if not cost.is_llm(n)]
            tallies = {n: t for n, t in tallies.items() if not cost.is_llm(n)}
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
                        if j.decided_by:
                            tally.decided[j.decided_by] += 1
                        if j.verdict == UNDETERMINED:
                            tally.undetermined += 1
                            continue
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
                                "confidence": j.confidence,
                                "decided_by": j.decided_by,
                                "reasoning": j.reasoning,
                            }
                            dump.write(json.dumps(record) + "\n")
        finally:
            if dump:
                dump.close()
    total_s = time.perf_counter() - t_all - curve_s
    print(f"runs judged: {len(configs)} configs x {len(saus)} papers")
    for name, tally in tallies.items():
        print_judge(name, tally, unpack_s, total_s)
    for name, curve in curves.items():
        if name in cascades:
            print(cascade_line(name, cascades[name][0], curve))
    for name, tally in tallies.items():
        print(summary_line(name, tally))
    return FAULT_EXIT if any(t.faults for t in tallies.values()) else 0


# --------------------------------------------------------------------------------------------
# The cascade: the static part's agreement and the LLM cost, per threshold
# --------------------------------------------------------------------------------------------


def cascade_points(
    root: Path,
    data: Path,
    configs: list[str],
    saus: dict[str, list],
    cascades: dict[str, tuple[float, dict[str, Any]]],
) -> list[Point]:
    """Every SAU with a reference: the static judge's verdict, confidence and raw score (its
    outcomes, as judge_static maps them), and its prompt tokens per cascade judge."""
    points = []
    for run in runs(root, data, configs, saus):
        sub = run.submission
        index = build_index(sub) if sub.is_dir() else CodeIndex(root=sub)
        outcomes = judge_outcomes(index, run.saus)
        tokens = {}
        for name, (_, llm_settings) in cascades.items():
            counts = cost.prompt_tokens(sub, run.saus, llm_settings, index=index)
            tokens[name] = dict(zip((s["sau_id"] for s in run.saus), counts, strict=False))
        for sau, o in outcomes:
            sid = str(sau["sau_id"])
            if sid not in run.reference:
                continue
            score = o.score if o.verdict == "partial" else VERDICT_SCORES.get(o.verdict)
            points.append(
                Point(
                    run.config,
                    str(sau.get("dimension") or ""),
                    o.verdict,
                    score,
                    run.reference[sid],
                    o.confidence,
                    {name: int(t.get(sid, 0)) for name, t in tokens.items()},
                    conf.group_of(o.verdict, o.score),
                    o.features.get(conf.RAW, 0.0),
                )
            )
    return points


def refit(points: list[Point]) -> None:
    """Fit the confidence table on the fitting half, print it, and rate every point with it."""
    fit = [p for p in points if p.config in conf.FIT_CONFIGS and p.score is not None]
    table = conf.fit_table((p.group, p.raw, p.score == p.reference) for p in fit)
    print(f"confidence table fitted on {len(fit)} SAUs of {len(conf.FIT_CONFIGS)} configurations:")
    print(conf.table_source(table))
    for p in points:
        p.confidence = conf.calibrated(p.group, p.raw, table)


def kept(p: Point, threshold: float) -> bool:
    """Whether the cascade keeps the static verdict (cascade.confident on a point)."""
    return p.verdict != "error" and p.score is not None and p.confidence >= threshold


def halves(points: list[Point]) -> dict[str, list[Point]]:
    """The points of the configurations the confidence was not fitted on (``test``), of those it
    was (``fit``), and all; only ``all`` when the data has no configuration of one half."""
    test = [p for p in points if p.config not in conf.FIT_CONFIGS]
    fit = [p for p in points if p.config in conf.FIT_CONFIGS]
    return {"test": test, "fit": fit, "all": points} if test and fit else {"all": points}


def curve_rows(
    name: str, llm_settings: dict[str, Any], points: list[Point], thresholds: list[float]
) -> list[dict[str, float]]:
    """Per threshold: the share of SAUs the static judge decides, that part's agreement, and the
    estimated LLM cost of the rest against the LLM judge asking about every SAU."""
    n = cost.samples(llm_settings)
    priced = cost.is_llm(name)

    def usd(chosen: list[Point]) -> float:
        tokens = [p.tokens.get(name, 0) for p in chosen]
        calls = sum(1 for t in tokens if t)
        return cost.estimate_usd(name, llm_settings, calls * n, sum(tokens) * n)

    alone = usd(points) if priced else math.nan
    rows = []
    for t in thresholds:
        part = [p for p in points if kept(p, t)]
        m = agreement_metrics([p.score for p in part], [p.reference for p in part])  # type: ignore[misc]
        sent = usd([p for p in points if not kept(p, t)]) if priced else math.nan
        rows.append(
            {
                "threshold": t,
                "n": len(part),
                "share": len(part) / len(points) if points else math.nan,
                "kappa": m["kappa_quadratic"],
                "exact": m["exact_agreement"],
                "mae": m["mae"],
                "usd": sent,
                "alone_usd": alone,
            }
        )
    return rows


def print_curve(
    name: str,
    llm_settings: dict[str, Any],
    points: list[Point],
    thresholds: list[float],
    threshold: float,
) -> dict[str, list[dict[str, float]]]:
    """The curve per half of the configurations, printed; returned by half."""
    out = {}
    fitted = ", ".join(conf.FIT_CONFIGS)
    for part, chosen in halves(points).items():
        rows = curve_rows(name, llm_settings, chosen, list(thresholds))
        out[part] = rows
        what = {
            "test": f"configurations the confidence was not fitted on (fitted on {fitted})",
            "fit": "configurations the confidence was fitted on",
            "all": "configurations",
        }[part]
        use = f"; threshold in use {threshold:g}" if is_cascade(name) else ""
        print(f"\ncascade {name}: {len(chosen)} SAUs of the {what}{use}")
        print(
            f"{'threshold':>9} {'static':>6} {'share':>6} {'kappa':>6} {'exact':>6} {'MAE':>6} "
            f"{'LLM usd':>9} {'alone usd':>9} {'cost':>6}"
        )
        for r in rows:
            ratio = r["usd"] / r["alone_usd"] if r["alone_usd"] else math.nan
            print(
                f"{r['threshold']:9.3f} {r['n']:6d} {r['share']:6.3f} {r['kappa']:6.3f} "
                f"{r['exact']:6.3f} {r['mae']:6.3f} {r['usd']:9.4f} {r['alone_usd']:9.4f} "
                f"{ratio:6.3f}"
            )
    return out


def cascade_line(name: str, threshold: float, curve: dict[str, list[dict[str, float]]]) -> str:
    """The machine-readable line at the threshold in use (the test half where there is one)."""
    part = "test" if "test" in curve else "all"
    rows = curve_rows_at(curve[part], threshold)
    return (
        f"cascade: judge={name} threshold={threshold:g} part={part} "
        f"share_static={_fmt(rows['share'])} kappa_static={_fmt(rows['kappa'])} "
        f"exact_static={_fmt(rows['exact'])} est_usd={rows['usd']:.4f} "
        f"llm_alone_usd={rows['alone_usd']:.4f}"
    )


def curve_rows_at(rows: list[dict[str, float]], threshold: float) -> dict[str, float]:
    """The row of the threshold (the nearest one printed)."""
    return min(rows, key=lambda r: abs(r["threshold"] - threshold))


def _fmt(x: float) -> str:
    return "nan" if math.isnan(x) else f"{x:.3f}"


def draw_curve(curves: dict[str, dict[str, list[dict[str, float]]]], path: Path) -> None:
    """Agreement of the static part against its share (left) and the cascade's LLM cost against
    the LLM judge alone (right), per half; a timestamp-free PNG (matplotlib's Agg canvas)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from sabench.io import atomic_path

    name, curve = next(iter(curves.items()))
    fig = Figure(figsize=(10, 4.6), dpi=100, layout="constrained")
    left, right = fig.subplots(1, 2)
    styles = {"test": "-", "fit": "--", "all": ":"}
    for part, rows in curve.items():
        if part == "all" and len(curve) > 1:
            continue  # the halves say it
        share = [r["share"] for r in rows]
        label = {"test": "test half", "fit": "fitting half", "all": "all"}[part]
        left.plot(share, [r["kappa"] for r in rows], styles[part], marker="o", color="#1565c0")
        left.plot(share, [r["exact"] for r in rows], styles[part], marker="s", color="#ef6c00")
        left.plot([], [], styles[part], color="#37474f", label=label)
        if part in ("test", "all"):
            same: dict[int, list[dict[str, float]]] = defaultdict(list)
            for r in rows:  # thresholds that keep the same SAUs share a label
                same[int(r["n"])].append(r)
            for k, group in enumerate(same.values()):
                r, last = group[0], group[-1]["threshold"]
                span = f"{r['threshold']:g}" + (f"-{last:g}" if last != r["threshold"] else "")
                left.annotate(
                    span,
                    (r["share"], r["exact"]),
                    fontsize=7,
                    textcoords="offset points",
                    xytext=(-6, 6 if k % 2 else -11),  # alternate: neighbours do not overlap
                )
        if cost.is_llm(name):
            ratio = [r["usd"] / r["alone_usd"] if r["alone_usd"] else math.nan for r in rows]
            right.plot(
                [r["threshold"] for r in rows],
                ratio,
                styles[part],
                marker="o",
                color="#2e7d32",
                label=f"LLM cost / LLM judge alone, {label}",
            )
        right.plot(
            [r["threshold"] for r in rows],
            share,
            styles[part],
            marker="s",
            color="#6a1b9a",
            label=f"share decided statically, {label}",
        )
    left.plot([], [], "o", color="#1565c0", label="quadratic kappa")
    left.plot([], [], "s", color="#ef6c00", label="exact agreement")
    left.axhline(0.7, color="#9e9e9e", linewidth=0.8)
    left.axvline(0.5, color="#9e9e9e", linewidth=0.8)
    left.set(
        xlabel="share of SAUs the static judge decides",
        ylabel="against SA-Bench's verdicts",
        title="The confident static part (labels: threshold)",
        xlim=(0, 1),
        ylim=(0, 1),
    )
    left.legend(loc="lower left", fontsize=8)
    right.set(xlabel="confidence threshold", ylim=(0, 1), title=f"{name}")
    right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=7)
    FigureCanvasAgg(fig)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=100, metadata={"Software": None})


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
    if tally.decided:
        print("decided by:", dict(sorted(tally.decided.items())))
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
        f"exact={fmt('exact')} mae={fmt('mae')} faults={len(tally.faults)} errors={tally.errors} "
        f"undetermined={tally.undetermined}"
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
