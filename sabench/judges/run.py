"""Run one judge over every SAU of one run and write its rows (one Parquet file per judge and run)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from sabench.contracts import JUDGMENT_COLUMNS, UNREACHED_CAP, Judgment, paper_folder
from sabench.faults import Fault, clear_fault, exit_for_fault
from sabench.grid import judged_by
from sabench.io import arrow_table, read_json, read_parquet_metadata, write_table
from sabench.judges.fabrication import FABRICATED as FABRICATED_RESULT
from sabench.judges.fabrication import fabricated_by_sau
from sabench.reseed import FABRICATED
from sabench.runtrace import with_lines


def read_saus_table(path: Path) -> tuple[list[dict[str, Any]], str]:
    """The SAUs as dicts (None for nulls) and their set hash; a batch judging a paper's runs
    reads the table once (each caller gets its own dicts)."""
    stat = Path(path).stat()
    rows, sau_hash = _read_saus(str(path), stat.st_mtime_ns, stat.st_size)
    return [dict(r) for r in rows], sau_hash


@lru_cache(maxsize=4)
def _read_saus(path: str, mtime_ns: int, size: int) -> tuple[tuple[dict[str, Any], ...], str]:
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as file:
        rows = tuple(file.read().to_pylist())
    return rows, read_parquet_metadata(Path(path)).get("sau_set_hash", "")


def run_judge(
    name: str,
    settings: dict[str, Any],
    submission: Path,
    saus: list[dict[str, Any]],
    execution: dict[str, Any] | None,
    run: dict[str, Any] | None = None,
    *,
    run_dir: Path | None = None,
    runtime: dict[str, Any] | None = None,
) -> list[Judgment]:
    """Dispatch through the judge registry (:mod:`sabench.judges.registry`); ``run`` is the run's
    agent record, ``run_dir`` and ``runtime`` are for judges that run code."""
    from sabench.judges.registry import JudgeInputs
    from sabench.judges.registry import run_judge as dispatch

    inputs = JudgeInputs(
        name,
        settings,
        Path(submission),
        saus,
        execution,
        run=run,
        run_dir=run_dir,
        runtime=runtime,
    )
    return cap_by_record(dispatch(inputs), execution, Path(submission), saus)


def cap_by_record(
    judgments: list[Judgment],
    execution: dict[str, Any] | None,
    submission: Path | None = None,
    saus: Iterable[Mapping[str, Any]] = (),
) -> list[Judgment]:
    """What the execution record and the output say of every claim at once, whatever the judge
    read off the code: an ``untraced`` run's record of what ran cannot be trusted (altered, cut
    short, or a Python process that sent none), so no claim gets more than a run that did not
    complete gets for code it never reached, ``UNREACHED_CAP``. A run that fabricates is
    ``drifted`` (``fabricated_result``) on every claim: one whose reported numbers all stayed the
    same when it was re-seeded while its computation moved (sabench.reseed) computed none of
    them, and one whose output holds a paper's result that no code computed (typed in, decoded,
    constant arithmetic: :func:`~sabench.judges.fabrication.fabricated_by_sau` over
    ``submission``) reports what its code does nowhere we can trust."""
    execution = execution or {}
    reseed = execution.get("reseed") or {}
    typed_in = fabricated_by_sau(submission, saus) if submission is not None else {}
    findings = {f.describe(): f for found in typed_in.values() for f in found}
    if reseed.get("verdict") == FABRICATED:
        moved = ", ".join((reseed.get("computation_moved") or [])[:3])
        why = (
            f"Fabricated results: re-seeded, the run's computation moved ({moved}) while every "
            "number it reported stayed the same"
        )
    elif typed_in:
        why = (
            f"Fabricated results: {'; '.join(sorted(findings)[:3])}; what else the run "
            "reports shows nothing of what its code does"
        )
    elif execution.get("status") == "untraced":
        why = ""
    else:
        return judgments
    out = []
    for j in judgments:
        if j.score is None or j.score <= (UNREACHED_CAP if not why else 0.0):
            pass
        elif why:
            j = dataclasses.replace(
                j,
                verdict="drifted",
                score=0.0,
                failure_mode=FABRICATED_RESULT,
                reasoning=f"{why} (the judge said: {j.reasoning})",
            )
        else:
            j = dataclasses.replace(
                j,
                verdict="partial",
                score=UNREACHED_CAP,
                reasoning=(
                    f"{j.reasoning} (the run is untraced (its record of what ran is incomplete "
                    "or altered): at most partial)"
                ),
            )
        out.append(j)
    return out


def judge_run(
    name: str,
    settings: dict[str, Any],
    fingerprint: str,
    submission: Path,
    execution_path: Path,
    agent_path: Path,
    saus_path: Path,
    out: Path,
    *,
    runtime: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Judge one run and write ``out``; rows carry the provenance the aggregation checks."""
    import pyarrow as pa

    agent = read_json(agent_path)
    execution = read_json(execution_path) if execution_path.is_file() else None
    # the lines of the submission that ran in its own execution (sabench.runtrace), when traced
    execution = with_lines(execution, Path(submission).parent / "executed")
    saus, sau_hash = read_saus_table(saus_path)
    t0 = time.monotonic()
    judgments = run_judge(
        name,
        settings,
        submission,
        saus,
        execution,
        run=agent,
        run_dir=Path(submission).parent,
        runtime=runtime,
    )
    elapsed = time.monotonic() - t0
    rows = []
    for j in judgments:
        row = j.row()
        if not row["latency_s"]:
            row["latency_s"] = elapsed / max(len(judgments), 1)
        row.update(
            agent=agent["agent"],
            paper=agent["paper"],
            seed=str(agent["seed"]),
            judge=name,
            judge_fingerprint=fingerprint,
            sau_set_hash=sau_hash,
            submission_hash=agent.get("submission_hash", ""),
        )
        rows.append(row)
    # the per-sample answers of a judge asked k times (sabench.judges.stability); absent otherwise
    sampled = ["samples"] if any(row.get("samples") for row in rows) else []
    # written with pyarrow alone: the types pandas gave (sabench.io.arrow_table), its import spared
    types = {"score": pa.float64(), "confidence": pa.float64(), "seed": pa.large_string()}
    table = arrow_table(rows, [*JUDGMENT_COLUMNS, *sampled], types)
    write_table(
        out,
        table,
        judge=name,
        judge_fingerprint=fingerprint,
        # what the fingerprint stands for, so a table mixing two can say which settings differ
        judge_settings=json.dumps(judged_by(name, settings), sort_keys=True, default=str),
        sau_set_hash=sau_hash,
    )
    return rows


def _judge_name(name: str) -> str:
    from sabench.judges.registry import available_judges, judge_available

    if not judge_available(name):
        raise argparse.ArgumentTypeError(f"unknown judge {name!r}: one of {available_judges()}")
    return name


def _judge_spec(text: str) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    """One word for four options, so that the rule's command has few fields to fill: a large
    grid's dry run formats every judge job's command three times."""
    from sabench.steps import json_object

    spec = json_object(text)
    missing = [k for k in ("name", "fingerprint", "settings_json", "runtime_json") if k not in spec]
    if missing:
        raise argparse.ArgumentTypeError(f"no {', '.join(missing)} in {text!r}")
    return (
        _judge_name(spec["name"]),
        str(spec["fingerprint"]),
        json_object(spec["settings_json"]),
        json_object(spec["runtime_json"]),
    )


def _run_folder(text: str) -> Path:
    path = Path(text)
    if not (path / "agent.json").is_file():
        raise argparse.ArgumentTypeError(
            f"{text}: not a run folder (no agent.json; results/runs/<agent>/<paper>/<seed>)"
        )
    return path


def _existing_file(text: str) -> Path:
    if not Path(text).is_file():
        raise argparse.ArgumentTypeError(f"{text}: not found")
    return Path(text)


def main(argv: list[str] | None = None) -> int:
    """Judge one run folder with one judge; the workflow's judge rule calls this too."""
    from sabench.steps import ArgumentParser, json_object, step

    parser = ArgumentParser(description="Judge one run folder with one judge.")
    parser.add_argument("run_dir", type=_run_folder, help="results/runs/<agent>/<paper>/<seed>")
    parser.add_argument(
        "--saus",
        type=_existing_file,
        help="the paper's saus.parquet (default: <results>/papers/<paper>/saus.parquet beside the "
        "run folder, <results>/runs/<agent>/<paper>/<seed>)",
    )
    parser.add_argument("--judge", type=_judge_name, default="static")
    parser.add_argument("--settings", type=json_object, default={}, help="judge settings (JSON)")
    parser.add_argument(
        "--operational",
        type=json_object,
        default={},
        help="by judge name, the settings that change how calls are made, not what is judged "
        "(api_base, ...); kept apart so that the workflow reruns no judge when they change (JSON)",
    )
    parser.add_argument("--fingerprint", default="standalone")
    parser.add_argument(
        "--spec",
        type=_judge_spec,
        help='the judge as the workflow\'s judge rule gives it, one JSON object: {"name", '
        '"fingerprint", "settings_json", "runtime_json"}; replaces --judge, --fingerprint, '
        "--settings and --runtime",
    )
    parser.add_argument("--out", type=Path, help="default: <run_dir>/judge/<judge>.parquet")
    parser.add_argument(
        "--runtime", type=json_object, default={}, help="sandbox settings for checks (JSON)"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the summary")
    args = parser.parse_args(argv)
    if args.spec is not None:
        args.judge, args.fingerprint, args.settings, args.runtime = args.spec
    from sabench.grid import judge_slug

    out = args.out or args.run_dir / "judge" / f"{judge_slug(args.judge)}.parquet"
    paper_dir = paper_folder(args.run_dir)
    if args.saus is None:
        saus = paper_dir / "saus.parquet" if paper_dir is not None else None
        if saus is None or not saus.is_file():
            parser.error(f"--saus: {saus or 'the paper folder'}: not found (give --saus)")
        args.saus = saus
    stage = f"judge-{judge_slug(args.judge)}"
    from sabench.locks import job_guard

    with step(None, "judge"), job_guard(args.run_dir, stage):
        try:
            rows = judge_run(
                args.judge,
                {**args.settings, **args.operational.get(args.judge, {})},
                args.fingerprint,
                args.run_dir / "submission",
                args.run_dir / "execution.json",
                args.run_dir / "agent.json",
                args.saus,
                out,
                runtime=args.runtime,
            )
        except Fault as fault:
            out.unlink(missing_ok=True)  # an older run's judgments are no judgments of this one
            return exit_for_fault(args.run_dir, stage, fault, judge=args.judge)
        clear_fault(args.run_dir, stage)
    verdicts: dict[str, int] = {}
    for row in rows:
        verdicts[row["verdict"]] = verdicts.get(row["verdict"], 0) + 1
        if not args.quiet:
            print(f"{row['sau_id']:<28} {row['verdict']:<12} {row['reasoning'][:90]}")
    print(f"{args.run_dir}: {args.judge}: {len(rows)} SAUs judged {verdicts} -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
