"""ResearchCodeBench through sabench: its leaderboard reproduced, the papers whose tests run here,
and drift its authors' tests define, seen by sabench's judges.

    .venv/bin/python benchmarks/researchcodebench.py --data /work/.mirror/PatrickHua+ResearchCodeBench/repo
    .venv/bin/python benchmarks/researchcodebench.py --data <snapshot> --papers DyT,minp --max-mutants 0
    .venv/bin/python benchmarks/researchcodebench.py --data <snapshot> --judge llm:openai/gpt-4o-mini --max-usd 0

``--data`` is RCB's fetched git directory or a checkout (sabench.peer_data.researchcodebench).
Prints, in order:

1. the leaderboard: per model, RCB's scaled line rate and success rate recomputed from its
   per-snippet results (the importer's ``leaderboard``) beside the published ones, and the largest
   difference (percentage points);
2. the environments: per paper, whether its authors' tests pass on the reference in the sandbox
   (bwrap, the Python env built from envs/researchcodebench.txt into ``--python-env``), the
   tests' wall time, and why not (a missing package, a GPU, a download, a timeout);
3. per drift type, over the mutants of the runnable papers' snippets (sabench.peer_data.rcb_drift:
   sabench.drift's rules at each snippet's own code; ``--per-snippet`` per snippet and type, then
   at most ``--max-mutants`` per paper and type, drawn with ``--seed``): mutants, caught by the
   authors' tests (given ``--test-timeout`` seconds, default 120, directly and in the check,
   whose limit is that plus the check's start; a timeout is caught, as in RCB's harness: 50 s
   was too little for llm-sci-use, 19 s unloaded and 38 s under the exec judge's line trace,
   twice that on a loaded machine), the static judge's recall (score below 1 on the mutated
   snippet's SAU; an abstention, ``undetermined``, is judged and no catch), its abstentions
   on them (``abst``) and drop (below its score on the reference), the exec judge's recall (running
   the authors' tests as the SAU's check, through the exec judge's real path) and its agreement
   with the tests on every mutant (it must equal the tests' verdict), and the false alarms of
   both on the unmutated reference (SAUs judged below 1; an abstention is judged and no alarm).

With an LLM judge (``--judge llm:<model>``) it prints what judging the caught mutants' SAUs and
the reference's SAUs would cost, ``cost: judge=<name> calls=N est_usd=X``
(sabench.judges.cost), and sends nothing: the LLM column is an estimate only.

Test outcomes are cached under ``--cache`` (default ~/.cache/sabench-rcb; tests/ for the
authors' tests, keyed by every file's content hash; exec/ for the exec judge's checks), so a
rerun takes the judges' time only. Ends with exactly one line:
``researchcodebench: papers=P snippets=S published_max_diff=D runnable_papers=R mutants=M
tests_catch=C static_recall=X exec_recall=Y false_alarm=F abstain_reference=A
abstain_mutants=B`` (P, S: every paper and snippet of the snapshot; recalls over the caught
mutants; F: the static judge's false alarms on the runnable papers' reference SAUs, its
abstentions counted as no alarm; A, B: the static judge's abstentions on those reference SAUs
and on the caught mutants; the exec judge's false alarms are in the table). ``--out`` writes one
JSON line per mutant.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import random
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sabench.judges import cost  # noqa: E402
from sabench.peer_data.rcb_drift import (  # noqa: E402
    Environment,
    MutantResult,
    SnippetMutant,
    TestRunner,
    Verdict,
    drift_table,
    judge_mutant,
    paper_environment,
    rcb_runtime,
    reference_verdicts,
    snippet_mutants,
    snippet_sau_ids,
    submission_files,
    write_files,
)
from sabench.peer_data.researchcodebench import (  # noqa: E402
    RCBPaper,
    leaderboard,
    load_papers,
    open_snapshot,
    snippet_saus,
)


def fmt(x: float | None, digits: int = 3) -> str:
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def print_leaderboard(board: list[dict[str, Any]]) -> float:
    """The leaderboard table; returns the largest difference from the published rates."""
    print(f"\nleaderboard ({len(board)} models; rates in %, ours | published | |diff|)")
    print(f"{'model':<34} {'line rate':>24} {'success rate':>24}")
    diffs = []
    for r in board:
        line = (r["scaled_line_rate"], r["published_line_rate"], r["line_rate_diff"])
        task = (r["success_rate"], r["published_success_rate"], r["success_rate_diff"])
        diffs += [d for d in (line[2], task[2]) if d is not None]
        print(
            f"{str(r['name'])[:34]:<34} {fmt(line[0], 2):>7} {fmt(line[1], 2):>7} "
            f"{fmt(line[2], 4):>8} {fmt(task[0], 2):>7} {fmt(task[1], 2):>7} {fmt(task[2], 4):>8}"
        )
    worst = max(diffs, default=math.nan)
    print(f"largest difference from the published rates: {fmt(worst, 6)} points")
    return worst


def print_environments(papers: list[RCBPaper], envs: dict[str, Environment]) -> None:
    print(f"\nenvironments ({sum(e.runnable for e in envs.values())} of {len(envs)} runnable)")
    print(f"{'paper':<30} {'snippets':>8} {'runs':>5} {'tests s':>8}  why not")
    for p in papers:
        e = envs[p.paper]
        print(
            f"{p.paper:<30} {len(p.snippets):8d} {'yes' if e.runnable else 'no':>5} "
            f"{e.wall_s:8.1f}  {e.reason}"
        )


def select(mutants: list[SnippetMutant], max_per_type: int, seed: int) -> list[SnippetMutant]:
    """At most ``max_per_type`` of one paper's mutants per drift type (0: all), drawn with the
    seed, in their order."""
    if max_per_type <= 0:
        return mutants
    keep: set[str] = set()
    for kind in {m.drift_type for m in mutants}:
        of = [m for m in mutants if m.drift_type == kind]
        rng = random.Random(f"{seed}:{of[0].paper}:{kind}")
        keep |= {m.digest for m in rng.sample(of, min(max_per_type, len(of)))}
    return [m for m in mutants if m.digest in keep]


def llm_estimate(
    judges: list[tuple[str, dict[str, Any]]],
    work: list[tuple[RCBPaper, list[dict[str, Any]]]],
    results: list[MutantResult],
    max_usd: float | None,
    ledger: Path,
) -> None:
    """What the LLM judges would send: the caught mutants' SAUs (prompts measured on the
    reference, which a one-snippet mutant barely changes) and every reference SAU; nothing is
    sent (the judges are estimated only)."""
    caught: dict[str, int] = {}
    for r in results:
        caught[r.mutant.sau_id] = caught.get(r.mutant.sau_id, 0) + int(r.caught)
    estimates = []
    for name, settings in judges:
        calls = tokens = 0
        for paper, saus in work:
            with tempfile.TemporaryDirectory(prefix="sabench-rcb-llm-") as tmp:
                folder = write_files(Path(tmp) / "submission", submission_files(paper))
                per_sau = cost.prompt_tokens(folder, saus, settings)
            for sau, n in zip(saus, per_sau, strict=False):
                times = (1 + caught.get(str(sau["sau_id"]), 0)) * cost.samples(settings)
                calls, tokens = calls + times, tokens + times * n
        estimates.append((name, settings, calls, tokens))
    why = cost.approve(estimates, max_usd, ledger)
    print(f"llm: estimate only, nothing sent{f' ({why})' if why else ''}")


def print_table(rows: list[dict[str, Any]]) -> None:
    print(
        f"\n{'drift type':<14} {'mutants':>7} {'caught':>7} {'static':>7} {'abst':>6} "
        f"{'drop':>6} {'exec':>6} {'match':>6} {'FA static':>9} {'FA exec':>8}"
    )
    for r in rows:
        print(
            f"{r['drift_type']:<14} {r['mutants']:7d} {r['caught']:7d} "
            f"{fmt(r['static_recall']):>7} {fmt(r['static_abstain']):>6} "
            f"{fmt(r['static_drop']):>6} "
            f"{fmt(r['exec_recall']):>6} {fmt(r['exec_match']):>6} "
            f"{fmt(r['false_static']):>9} {fmt(r['false_exec']):>8}"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="RCB's git directory or checkout")
    ap.add_argument("--papers", help="comma-separated paper ids (default: all)")
    ap.add_argument(
        "--max-mutants", type=int, default=2, help="per paper and drift type (0: all); default 2"
    )
    ap.add_argument("--per-snippet", type=int, default=1, help="per snippet and drift type")
    ap.add_argument(
        "--test-timeout",
        type=float,
        default=120.0,
        help="seconds the authors' tests may take, directly and in a check (default 120)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "sabench-rcb")
    ap.add_argument("--python-env", type=Path, default=REPO / ".venv-rcb")
    ap.add_argument("--backend", default="bwrap")
    ap.add_argument("--jobs", type=int, default=2, help="mutants judged at once")
    ap.add_argument("--out", type=Path, help="write one JSON line per mutant")
    cost.add_judge_options(ap, "static, exec, llm:<model> (estimated only)")
    args = ap.parse_args(argv)
    try:
        judges = cost.parse_judges(args.judge, args.settings)
    except ValueError as exc:
        ap.error(str(exc))
    from sabench.sandbox.pyenv import ensure_sandbox_env

    t_all = time.perf_counter()
    snapshot = open_snapshot(args.data)
    every = load_papers(snapshot)
    n_snippets = sum(len(p.snippets) for p in every)
    wanted = [p for p in (args.papers or "").split(",") if p]
    papers = [p for p in every if not wanted or p.paper in wanted]
    print(f"ResearchCodeBench: {len(every)} papers, {n_snippets} snippets ({args.data})")
    worst = print_leaderboard(leaderboard(snapshot))

    env = ensure_sandbox_env(args.python_env, REPO / "envs" / "researchcodebench.txt")
    runtime = rcb_runtime(env, args.backend)
    runner = TestRunner(runtime, args.cache, {"time_limit_s": args.test_timeout})
    envs = {p.paper: paper_environment(p, runner) for p in papers}
    print_environments(papers, envs)

    runnable = [p for p in papers if envs[p.paper].runnable]
    work = [(p, snippet_saus(p, args.test_timeout)) for p in runnable]
    false_static: dict[str, float] = {}
    false_exec: dict[str, float] = {}
    static_ref: dict[str, dict[str, Verdict]] = {}
    queues: list[list[tuple[RCBPaper, list[dict[str, Any]], SnippetMutant]]] = []
    for paper, saus in work:
        static, ran = reference_verdicts(paper, saus, runtime, args.cache, runner.limits)
        static_ref[paper.paper] = static
        false_static |= {s: float(v.drifted) for s, v in static.items() if v.judged}
        false_exec |= {s: float(v.drifted) for s, v in ran.items() if v.judged}
        made = snippet_mutants(
            paper, snippet_sau_ids(paper, saus), max_per_type=args.per_snippet, seed=args.seed
        )
        queues.append([(paper, saus, m) for m in select(made, args.max_mutants, args.seed)])
    # papers taken in turn, so that two mutants of one slow paper seldom run at once
    todo = [item for turn in itertools.zip_longest(*queues) for item in turn if item]
    print(
        f"\nmutants: {len(todo)} of {len(runnable)} runnable papers (judging {args.jobs} at once)"
    )

    def one(item: tuple[RCBPaper, list[dict[str, Any]], SnippetMutant]) -> MutantResult:
        paper, saus, mutant = item
        return judge_mutant(
            paper,
            saus,
            mutant,
            runner,
            static_reference=static_ref[paper.paper],
            exec_runtime=runtime,
            cache_dir=args.cache,
            judge_all=True,
        )

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(one, todo))
    print(f"judged in {time.perf_counter() - t0:.0f} s")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.open("w", encoding="utf-8") as fh:
            for r in results:
                fh.write(json.dumps(r.row()) + "\n")
    rows = drift_table(results, false_static, false_exec)
    print_table(rows)
    for r in results:
        if r.exec_matches is False:
            m = r.mutant
            print(
                f"exec mismatch: {m.sau_id} {m.drift_type} ({m.description}): tests "
                f"{r.tests.kind}, exec {r.exec.verdict if r.exec else None}"
            )
    faults = [r for r in results if not r.tests.decided]
    if faults:
        print(f"sandbox faults (no verdict, left out): {len(faults)}")
    llm = [(n, s) for n, s in judges if cost.is_llm(n)]
    if llm:
        with tempfile.TemporaryDirectory(prefix="sabench-rcb-ledger-") as ledger:
            llm_estimate(llm, work, results, args.max_usd, Path(ledger))
    total = rows[-1]
    fa = list(false_static.values())
    abstained = [
        float(v.abstained) for ref in static_ref.values() for v in ref.values() if v.judged
    ]
    print(f"total {time.perf_counter() - t_all:.0f} s")
    print(
        f"researchcodebench: papers={len(every)} snippets={n_snippets} "
        f"published_max_diff={fmt(worst, 4)} runnable_papers={len(runnable)} "
        f"mutants={total['mutants']} tests_catch={total['caught']} "
        f"static_recall={fmt(total['static_recall'])} exec_recall={fmt(total['exec_recall'])} "
        f"false_alarm={fmt(sum(fa) / len(fa) if fa else math.nan)} "
        f"abstain_reference={fmt(sum(abstained) / len(abstained) if abstained else math.nan)} "
        f"abstain_mutants={fmt(total['static_abstain'])}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
