"""Drift injection on the demo papers and on SA-Bench's runs: does a judge see a known drift?

    .venv/bin/python benchmarks/drift_injection.py --data ../shared/sabench
    .venv/bin/python benchmarks/drift_injection.py --judge llm:openai/gpt-4o-mini --max-usd 5
    .venv/bin/python benchmarks/drift_injection.py --judge static,exec   # demo mutants executed

Mutants (sabench.drift: one known drift each, tied to the SAU it breaks) are made from
- the demo papers' reference submissions (resources/submissions/reference, every SAU), and
- SA-Bench's 240 runs, for the SAUs SA-Bench's own judge scored at least 0.75 (a drift can only be
  injected into what was implemented), its cited lines guiding the search for prose claims,
and every mutant is re-judged by each ``--judge`` (any registered judge that reads code: static,
exec, llm:<model>; ``--settings`` by judge name). Prints, per source, judge and drift type, the
recall (the broken SAU's score drops), the recall where the original was credited, the false-alarm
rate (other SAUs of the run whose score changes) and the mean drop; writes every mutant to --out
(Parquet). Ends with one line per judge and source:
``drift: judge=<name> source=<demo|sabench> mutants=N value=R operator=R removal=R swap=R stub=R
normalisation=R split=R false_alarm=F`` (``nan`` where no mutant of that type).

Executing (``--execute``; on by default when a judge that runs code, ``exec``, is among ``--judge``):
the demo submission and each of its mutants run reproduce.sh in the project's sandbox
(sabench.drift.execution: the execute step's code, bwrap, the sandbox Python env, no network,
limits from ``DRIFT_RUNTIME`` and ``--runtime``), and every judge gets that execution record, so the
exec judge's expected results and checks see what the mutated code does. SA-Bench's runs are never
executed: they come without their environment. For the exec judge the script also prints recall per
basis, the check or the expected results that decide the SAU (column ``basis``), as
``drift basis: judge=exec source=demo basis=<check|expected> mutants=N recall=R false_alarm=F``.
A sandbox that could not start or run a check is a fault, not a score: such mutants (column
``fault``) are left out of recall and false alarms and counted, ``drift faults: ... faults=N``.

An LLM judge judges every SAU of a run on the original and on each mutant, so before any request
the script prints ``cost: judge=<name> calls=N est_usd=X`` (calls = (mutants + 1) x SAUs per run x
``samples``; prompt tokens counted on the original's prompts as the judge builds them; the price
from the settings' ``prices`` or litellm's map; an upper bound, as unchanged prompts come from the
cache) and refuses to start above ``--max-usd``, which also caps the spending as the grid's LLM
budget does (``SABENCH_LLM_BUDGET_USD``).
"""

from __future__ import annotations

import argparse
import math
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sabench.drift import (  # noqa: E402
    Execution,
    basis_summary,
    drift_frame,
    drift_summary,
    judge_mutants,
    make_mutants,
    sandbox_execution,
    scored,
)
from sabench.judges.cost import (  # noqa: E402
    add_judge_options,
    approve,
    is_llm,
    parse_judges,
    prompt_tokens,
    samples,
)
from sabench.judges.reference import read_verdicts  # noqa: E402
from sabench.judges.registry import judge_kind  # noqa: E402
from sabench.saus import import_paper_saus, import_sabench  # noqa: E402
from sabench.steps import json_object  # noqa: E402

#: The drift types of the summary line, in its order.
SUMMARY_TYPES = ("value", "operator", "removal", "swap", "stub", "normalisation", "split")

Case = tuple[Path, list[dict[str, Any]], list[Any], dict[str, Any], Execution | None]


class UnitError(Exception):
    """A judge's fault or a user error of a worker (the spending cap reached, a judge's settings),
    as one message that crosses the process boundary (Fault and UserError do not unpickle)."""


def demo_cases(papers: list[str] | None, runtime: dict[str, Any] | None) -> Iterator[Case]:
    """Every SAU of the demo papers (small: no cap); executed in the sandbox unless ``runtime`` is
    None."""
    for paper_dir in sorted((REPO / "resources" / "papers").iterdir()):
        sub = REPO / "resources" / "submissions" / "reference" / paper_dir.name
        if not sub.is_dir() or (papers and paper_dir.name not in papers):
            continue
        saus = import_paper_saus(paper_dir)
        info = {"agent": "demo-reference", "paper": paper_dir.name, "seed": "0"}
        run = None if runtime is None else sandbox_execution(runtime)
        yield sub, saus, make_mutants(sub, saus), info, run


def sabench_cases(
    data: Path, config: str, papers: list[str], max_per_run: int | None, min_score: float
) -> Iterator[Case]:
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
            # never executed: SA-Bench keeps no environment to run them in
            yield sub, saus, mutants, {"agent": config, "paper": paper, "seed": "0"}, None


def run_unit(
    source: str, params: tuple[Any, ...], judges: list[tuple[str, dict[str, Any]]], estimate: bool
) -> list[Any]:
    """Judge the unit's mutants (rows), or with ``estimate`` count what its LLM judges would send:
    (judge, calls, prompt tokens) per case."""
    from sabench.errors import UserError
    from sabench.faults import Fault

    cases = demo_cases(*params) if source == "demo" else sabench_cases(*params)
    out: list[Any] = []
    for sub, saus, mutants, info, execution in cases:
        if not estimate:
            try:
                out += judge_mutants(sub, saus, mutants, judges, info, execution)
            except (Fault, UserError) as exc:
                raise UnitError(f"{info['agent']}/{info['paper']}: {exc}") from None
            continue
        if not mutants:
            continue  # nothing is judged
        for name, settings in judges:
            if is_llm(name):
                tokens = prompt_tokens(sub, saus, settings)
                # the original and each mutant, each SAU asked ``samples`` times
                n = (len(mutants) + 1) * samples(settings)
                out.append((name, n * len(tokens), n * sum(tokens)))
    return out


def summary_line(name: str, source: str, table: Any) -> str:
    """The last lines' format: recall per drift type and the false-alarm rate, of one judge (over
    the judged mutants: faults are counted apart)."""
    g = scored(table[table["judge"] == name])

    def fmt(x: float) -> str:
        return "nan" if math.isnan(x) else f"{x:.3f}"

    recall = {t: g[g["drift_type"] == t]["dropped"] for t in SUMMARY_TYPES}
    n_other = int(g["n_other"].sum())
    false_alarm = g["n_other_changed"].sum() / n_other if n_other else math.nan
    per_type = " ".join(
        f"{t}={fmt(float(r.mean()) if len(r) else math.nan)}" for t, r in recall.items()
    )
    return (
        f"drift: judge={name} source={source} mutants={len(g)} {per_type} "
        f"false_alarm={fmt(float(false_alarm))}"
    )


def basis_lines(source: str, table: Any) -> list[str]:
    """Per judge that runs code and basis: mutants, recall and false alarms over all drift types."""
    summary = basis_summary(table)
    return [
        f"drift basis: judge={r.judge} source={source} basis={r.basis} mutants={r.n_mutants} "
        f"recall={r.recall:.3f} false_alarm={r.false_alarm_rate:.3f}"
        for r in summary[summary["drift_type"] == "all"].itertuples()
    ]


def _print(title: str, table: Any) -> None:
    summary = drift_summary(table)
    print(f"\n{title}: {len(table)} mutant judgments in {table['paper'].nunique()} papers")
    print(
        f"{'judge':<14} {'drift type':<13} {'n':>5} {'recall':>7} {'credited':>9} "
        f"{'false alarms':>13} {'drop':>6} {'faults':>7}"
    )
    for r in summary.itertuples():
        print(
            f"{r.judge:<14} {r.drift_type:<13} {r.n_mutants:5d} {r.recall:7.3f} "
            f"{r.recall_if_credited:9.3f} {r.false_alarm_rate:13.3f} {r.mean_drop:6.3f} "
            f"{r.n_faults:7d}"
        )
    by_basis = basis_summary(table)
    if by_basis.empty:
        return
    print(
        f"\n{'judge':<14} {'basis':<15} {'drift type':<13} {'n':>5} {'recall':>7} {'false alarms':>13}"
    )
    for r in by_basis.itertuples():
        print(
            f"{r.judge:<14} {r.basis:<15} {r.drift_type:<13} {r.n_mutants:5d} {r.recall:7.3f} "
            f"{r.false_alarm_rate:13.3f}"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, help="SA-Bench's data folder (../shared/sabench)")
    ap.add_argument("--no-demo", action="store_true", help="skip the demo papers")
    ap.add_argument("--configs", nargs="*", help="only these SA-Bench configurations")
    ap.add_argument("--papers", nargs="*", help="only these papers (demo and SA-Bench)")
    add_judge_options(ap, "static, exec, llm:<model>")
    ap.add_argument(
        "--max-per-run", type=int, default=4, help="SA-Bench: mutants per run and drift type"
    )
    ap.add_argument("--min-reference-score", type=float, default=0.75)
    ap.add_argument(
        "--execute",
        action=argparse.BooleanOptionalAction,
        help="run the demo mutants' reproduce.sh in the sandbox (default: when --judge has exec; "
        "SA-Bench runs never: no environment)",
    )
    ap.add_argument(
        "--runtime",
        type=json_object,
        default={},
        help="sandbox settings of the executions, over sabench.drift.DRIFT_RUNTIME (JSON)",
    )
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=REPO / "results" / "drift_injection.parquet")
    args = ap.parse_args(argv)
    try:
        judges = parse_judges(args.judge, args.settings)
    except ValueError as exc:
        ap.error(str(exc))
    execute = args.execute
    if execute is None:
        execute = any(judge_kind(name).runs_code for name, _ in judges)  # type: ignore[union-attr]
    units: list[tuple[str, tuple[Any, ...]]] = []
    if not args.no_demo:
        units.append(("demo", (args.papers, args.runtime if execute else None)))
    if execute:
        print(
            "execute: demo submissions and their mutants run reproduce.sh in the sandbox; "
            "SA-Bench runs are not executed (no environment)",
            flush=True,
        )
    if args.data:
        if not (args.data / "runs").is_dir():
            print(f"{args.data}/runs is absent: point --data at SA-Bench's data", file=sys.stderr)
            return 2
        papers = sorted(p.stem for p in (args.data / "saus").glob("*.json"))
        papers = [p for p in papers if not args.papers or p in args.papers]
        for path in sorted((args.data / "runs").glob("*.tar.gz")):
            config = path.name[: -len(".tar.gz")]
            if not args.configs or config in args.configs:
                params = (args.data, config, papers, args.max_per_run, args.min_reference_score)
                units.append(("sabench", params))
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sabench-drift-ledger-") as ledger_dir:
        with ProcessPoolExecutor(max_workers=args.workers) as pool:
            if any(is_llm(name) for name, _ in judges):
                counts = [
                    c
                    for f in [pool.submit(run_unit, s, p, judges, True) for s, p in units]
                    for c in f.result()
                ]
                estimates = [
                    (
                        name,
                        settings,
                        sum(c[1] for c in counts if c[0] == name),
                        sum(c[2] for c in counts if c[0] == name),
                    )
                    for name, settings in judges
                    if is_llm(name)
                ]
                why = approve(estimates, args.max_usd, Path(ledger_dir))
                if why:
                    print(f"error: {why}", file=sys.stderr)
                    return 2
        rows: dict[str, list[dict[str, Any]]] = {"demo": [], "sabench": []}
        with ProcessPoolExecutor(max_workers=args.workers) as pool:
            futures = [(s, pool.submit(run_unit, s, p, judges, False)) for s, p in units]
            try:
                for source, fut in futures:
                    rows[source] += fut.result()
            except UnitError as exc:
                pool.shutdown(cancel_futures=True)
                print(f"error: {exc}", file=sys.stderr)
                return 2
    from sabench.io import write_parquet

    table = drift_frame(rows["demo"] + rows["sabench"])
    write_parquet(args.out, table, table="drift_injection")
    titles = {
        "demo": "demo papers (reference submissions, every SAU)",
        "sabench": f"SA-Bench runs (SAUs its judge scored >= {args.min_reference_score})",
    }
    for source, title in titles.items():
        if rows[source]:
            _print(title, drift_frame(rows[source]))
    print(f"\n{len(table)} mutant judgments in {time.perf_counter() - t0:.0f} s -> {args.out}")
    frames = {source: drift_frame(rows[source]) for source in titles if rows[source]}
    for source, frame in frames.items():
        for line in basis_lines(source, frame):
            print(line)
        faults = frame[frame["fault"].notna()]
        for name, _ in judges:
            print(
                f"drift faults: judge={name} source={source} faults={(faults['judge'] == name).sum()}"
            )
    for source, frame in frames.items():
        for name, _ in judges:
            print(summary_line(name, source, frame))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
