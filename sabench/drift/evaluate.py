"""Judging mutants: every judge scores the original and each mutant (executed in the sandbox first
when an :class:`~sabench.drift.execution.Execution` is given); recall and false alarms per judge and
drift type, and for the exec judge per basis (check or expected result), on one submission or the
runs of a results folder (the CLI)."""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sabench.contracts import UNDETERMINED
from sabench.drift.make import make_mutants
from sabench.drift.mutants import DRIFT_TYPES, Mutant

if TYPE_CHECKING:
    import pandas as pd

    from sabench.drift.execution import Execution


DRIFT_COLUMNS = [
    "agent",
    "paper",
    "seed",
    "judge",
    "sau_id",
    "dimension",
    "drift_type",
    "file",
    "line",
    "description",
    "base_score",
    "mutant_score",
    "base_verdict",
    "mutant_verdict",
    "dropped",
    "n_other",
    "n_other_changed",
    # what the exec judge decided the SAU by (exec_basis); null for judges that run no code
    "basis",
    # why the mutant has no score (a sandbox fault); null when it was judged
    "fault",
]
DRIFT_SUMMARY_COLUMNS = [
    "judge",
    "drift_type",
    "n_mutants",
    "recall",
    "recall_if_credited",
    "false_alarm_rate",
    "mean_drop",
    "n_faults",
]
BASIS_SUMMARY_COLUMNS = ["judge", "basis", "drift_type", "n_mutants", "recall", "false_alarm_rate"]


def _scores(judgments: Iterable[Any]) -> dict[str, tuple[float, str]]:
    out = {}
    for j in judgments:
        if j.verdict == UNDETERMINED:  # judged, no score: never a drop, never a false alarm
            out[j.sau_id] = (math.nan, j.verdict)
        elif j.verdict != "error" and j.score is not None:
            out[j.sau_id] = (float(j.score), j.verdict)
    return out


#: One judge's scores of a run by SAU (score, verdict), or the message of the fault that left it
#: unjudged.
Scores = dict[str, tuple[float, str]] | str


def exec_basis(sau: dict[str, Any]) -> str:
    """What the exec judge decides an SAU by: its ``check``, its ``expected`` results, or
    ``check+expected`` (then the part that fails first decides, :mod:`sabench.judges.exec_judge`);
    the two are measured apart since a check tests the code and an expected result its output."""
    from sabench.judges.exec_judge import has_expected

    parts = {"check": bool(sau.get("check")), "expected": has_expected(sau)}
    return "+".join(p for p, has in parts.items() if has)


def _executed(
    execution: Execution | None, run_dir: Path
) -> tuple[dict[str, Any] | None, str | None]:
    """The execution record of ``run_dir/submission`` as it stands now (None when not executed),
    or the message of the sandbox fault that left it unexecuted."""
    from sabench.faults import Fault

    if execution is None:
        return None, None
    try:
        return execution.run(run_dir), None
    except Fault as fault:
        return None, str(fault)


def _judged(
    name: str,
    settings: dict[str, Any],
    work: Path,
    saus: list[dict[str, Any]],
    record: dict[str, Any] | None,
    run: dict[str, Any],
    execution: Execution | None,
) -> Scores:
    """One judge's scores of the submission as it stands now; a sandbox fault (a check that could
    not run) is no verdict on the code, so it is returned as a message, never as a score."""
    from sabench.faults import Fault
    from sabench.judges.run import run_judge

    try:
        judgments = run_judge(
            name,
            settings,
            work,
            saus,
            record,
            run=run,
            run_dir=work.parent,
            runtime=execution.runtime if execution else None,
        )
    except Fault as fault:
        if fault.cause != "sandbox_error":
            raise  # a provider or budget fault stops the measurement
        return f"judge {name}: {fault}"
    return _scores(judgments)


def _dropped(base: float, mutant: float) -> bool:
    """Whether the broken SAU's score fell: an undetermined mutant (NaN) never did; below full
    credit where the original was undetermined did (the judge sees what it could not tell)."""
    return mutant < (1.0 if math.isnan(base) else base) - 1e-9


def _row(
    m: Mutant, name: str, base: Scores, got: Scores, run: dict[str, Any], basis: str | None
) -> dict[str, Any] | None:
    """The row of one mutant and judge; None when the judge gave the broken SAU no score."""
    fault = base if isinstance(base, str) else got if isinstance(got, str) else None
    if fault is None and m.sau_id not in got:
        return None
    row = {
        "agent": run.get("agent"),
        "paper": run.get("paper"),
        "seed": str(run.get("seed", "0")),
        "judge": name,
        "sau_id": m.sau_id,
        "dimension": m.dimension,
        "drift_type": m.drift_type,
        "file": m.file,
        "line": m.line,
        "description": m.description,
        "basis": basis,
        "fault": fault,
    }
    if isinstance(base, str) or isinstance(got, str):
        known = base.get(m.sau_id) if isinstance(base, dict) else None
        return {
            **row,
            "base_score": known[0] if known else math.nan,
            "mutant_score": math.nan,
            "base_verdict": known[1] if known else None,
            "mutant_verdict": None,
            "dropped": False,
            "n_other": 0,
            "n_other_changed": 0,
        }
    others = [s for s in base if s != m.sau_id and s in got]
    return {
        **row,
        "base_score": base[m.sau_id][0],
        "mutant_score": got[m.sau_id][0],
        "base_verdict": base[m.sau_id][1],
        "mutant_verdict": got[m.sau_id][1],
        "dropped": _dropped(base[m.sau_id][0], got[m.sau_id][0]),
        "n_other": len(others),
        "n_other_changed": sum(1 for s in others if abs(got[s][0] - base[s][0]) > 1e-9),
    }


def judge_mutants(
    submission: Path,
    saus: list[dict[str, Any]],
    mutants: Sequence[Mutant],
    judges: Sequence[tuple[str, dict[str, Any]]] = (("static", {}),),
    run: dict[str, Any] | None = None,
    execution: Execution | None = None,
) -> list[dict[str, Any]]:
    """Score the original and every mutant with every judge; one row per mutant and judge.

    With ``execution`` the original and each mutant first run their reproduce.sh in the sandbox
    and every judge gets that record, as in the workflow. A sandbox fault (of the execution, or of
    a judge's checks) gives the row a ``fault`` and no score: :func:`drift_summary` counts it and
    keeps it out of recall and false alarms.
    """
    from sabench.judges.registry import judge_kind

    run = run or {}
    rows: list[dict[str, Any]] = []
    if not mutants:
        return rows
    by_id = {str(s.get("sau_id")): s for s in saus}
    runs_code = {name: bool(getattr(judge_kind(name), "runs_code", False)) for name, _ in judges}
    with tempfile.TemporaryDirectory(prefix="sabench-drift-") as tmp:
        work = Path(tmp) / "run" / "submission"  # the workflow's run layout: executed/ beside it
        shutil.copytree(submission, work, symlinks=True)
        record, fault = _executed(execution, work.parent)
        base: dict[str, Scores] = {
            name: fault or _judged(name, settings, work, saus, record, run, execution)
            for name, settings in judges
        }
        for m in mutants:
            # a judge that gave the broken SAU no score on the original has nothing to compare
            todo = [(n, s) for n, s in judges if isinstance(base[n], str) or m.sau_id in base[n]]
            live = [(n, s) for n, s in todo if not isinstance(base[n], str)]
            if not todo:
                continue
            got: dict[str, Scores] = {}
            originals = {p: (work / p).read_bytes() for p in m.files}
            try:
                for p, text in m.files.items():
                    (work / p).write_text(text, encoding="utf-8")
                record, fault = _executed(execution, work.parent) if live else (None, None)
                for name, settings in live:
                    got[name] = fault or _judged(name, settings, work, saus, record, run, execution)
            finally:
                for p, data in originals.items():
                    (work / p).write_bytes(data)
            for name, _ in todo:
                basis = exec_basis(by_id.get(m.sau_id, {})) if runs_code[name] else None
                row = _row(m, name, base[name], got.get(name, base[name]), run, basis)
                if row is not None:
                    rows.append(row)
    return rows


def drift_frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    import pandas as pd

    frame = pd.DataFrame(list(rows), columns=DRIFT_COLUMNS)
    for col in ("line", "n_other", "n_other_changed"):
        frame[col] = frame[col].astype("int64")
    for col in ("base_score", "mutant_score"):
        frame[col] = frame[col].astype(float)
    frame["dropped"] = frame["dropped"].astype(bool)
    for col in ("agent", "paper", "seed", "judge", "sau_id", "dimension", "drift_type"):
        frame[col] = frame[col].astype("string")
    for col in ("basis", "fault"):
        frame[col] = frame[col].astype("string")
    return frame


def scored(table: pd.DataFrame) -> pd.DataFrame:
    """The rows that were judged (no fault): what recall and false alarms are measured on; tables
    written before faults were recorded have no ``fault`` column and are all judged."""
    if "fault" not in table.columns:
        return table
    return table[table["fault"].isna()]


def _rates(g: pd.DataFrame) -> tuple[float, float]:
    """Recall and false-alarm rate of judged rows."""
    n_other = int(g["n_other"].sum())
    recall = float(g["dropped"].mean()) if len(g) else math.nan
    return recall, float(g["n_other_changed"].sum() / n_other) if n_other else math.nan


def drift_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per judge and drift type: recall, recall where the original was credited (score > 0), the
    false-alarm rate over the other SAUs, the mean score drop of the broken SAU, all over the judged
    mutants, and the mutants a sandbox fault left unjudged."""
    import pandas as pd

    rows = []
    if table.empty:
        return pd.DataFrame(columns=DRIFT_SUMMARY_COLUMNS)
    order = {t: i for i, t in enumerate(DRIFT_TYPES)}
    for (judge, kind), every in table.groupby(["judge", "drift_type"], sort=False):
        g = scored(every)
        credited = g[g["base_score"] > 0]
        recall, false_alarm = _rates(g)
        rows.append(
            {
                "judge": judge,
                "drift_type": kind,
                "n_mutants": len(g),
                "recall": recall,
                "recall_if_credited": float(credited["dropped"].mean())
                if len(credited)
                else math.nan,
                "false_alarm_rate": false_alarm,
                "mean_drop": float((g["base_score"] - g["mutant_score"]).mean())
                if len(g)
                else math.nan,
                "n_faults": len(every) - len(g),
            }
        )
    out = pd.DataFrame(rows, columns=DRIFT_SUMMARY_COLUMNS)
    out["_o"] = out["drift_type"].map(lambda t: order.get(t, 99))
    return out.sort_values(["judge", "_o"]).drop(columns="_o").reset_index(drop=True)


def basis_summary(table: pd.DataFrame) -> pd.DataFrame:
    """For judges that decide by running things: recall and false alarms per basis (``check``,
    ``expected``, ``check+expected``) and drift type, then over all drift types (``all``)."""
    import pandas as pd

    rows = []
    judged = scored(table)
    judged = judged[judged["basis"].notna()]
    order = {t: i for i, t in enumerate([*DRIFT_TYPES, "all"])}
    for (judge, basis), g in judged.groupby(["judge", "basis"], sort=True):
        groups = [*g.groupby("drift_type", sort=False), ("all", g)]
        for kind, sub in groups:
            recall, false_alarm = _rates(sub)
            rows.append(
                {
                    "judge": judge,
                    "basis": basis,
                    "drift_type": kind,
                    "n_mutants": len(sub),
                    "recall": recall,
                    "false_alarm_rate": false_alarm,
                }
            )
    out = pd.DataFrame(rows, columns=BASIS_SUMMARY_COLUMNS)
    if out.empty:
        return out
    out["_o"] = out["drift_type"].map(lambda t: order.get(t, 99))
    return out.sort_values(["judge", "basis", "_o"]).drop(columns="_o").reset_index(drop=True)


# --------------------------------------------------------------------------------------------
# A results folder (the workflow's drift rule)
# --------------------------------------------------------------------------------------------


def _reference_rows(run_dir: Path) -> tuple[dict[str, float], dict[str, list]]:
    """Scores and cited lines of judge ``reference`` for one run, when it judged it."""
    import pandas as pd

    path = run_dir / "judge" / "reference.parquet"
    if not path.is_file():
        return {}, {}
    frame = pd.read_parquet(path)
    scores, cited = {}, {}
    for row in frame.itertuples():
        if row.score is not None and not (isinstance(row.score, float) and math.isnan(row.score)):
            scores[str(row.sau_id)] = float(row.score)
        ev = row.evidence if row.evidence is not None else []
        cited[str(row.sau_id)] = [(e["file"], int(e["start"]), int(e["end"])) for e in ev]
    return scores, cited


def drift_results(
    results: Path,
    runs: Sequence[tuple[str, str, str]],
    judges: Sequence[tuple[str, dict[str, Any]]],
    *,
    max_per_run: int = 4,
    min_reference_score: float = 0.75,
) -> pd.DataFrame:
    """Drift injection over runs of a results folder (``runs/<agent>/<paper>/<seed>/submission``).

    Where judge ``reference`` judged a run, only SAUs it scored at least ``min_reference_score``
    are mutated and its cited lines guide the search for prose claims.
    """
    from sabench.judges.run import read_saus_table

    rows: list[dict[str, Any]] = []
    saus_cache: dict[str, list[dict[str, Any]]] = {}
    for agent, paper, seed in runs:
        run_dir = Path(results) / "runs" / agent / paper / str(seed)
        submission = run_dir / "submission"
        if not submission.is_dir():
            continue
        if paper not in saus_cache:
            saus_cache[paper] = read_saus_table(Path(results) / "papers" / paper / "saus.parquet")[
                0
            ]
        saus = saus_cache[paper]
        ref_scores, cited = _reference_rows(run_dir)
        eligible = (
            [s for s, v in ref_scores.items() if v >= min_reference_score] if ref_scores else None
        )
        mutants = make_mutants(
            submission, saus, eligible=eligible, cited=cited, max_per_type=max_per_run
        )
        info = {"agent": agent, "paper": paper, "seed": str(seed)}
        rows.extend(judge_mutants(submission, saus, mutants, judges, info))
    return drift_frame(rows)


def main(argv: list[str] | None = None) -> int:
    """Drift injection on one submission, or (``--results``) on the runs of a results folder."""
    from sabench.io import write_parquet
    from sabench.steps import ArgumentParser, json_object, step

    parser = ArgumentParser(description=main.__doc__)
    parser.add_argument("submission", type=Path, nargs="?", help="a submission folder")
    parser.add_argument("--saus", type=Path, help="the paper's saus.parquet (with SUBMISSION)")
    parser.add_argument("--results", type=Path, help="a results folder (instead of SUBMISSION)")
    parser.add_argument("--runs", nargs="*", default=[], help="agent/paper/seed (with --results)")
    parser.add_argument("--judges", default="static", help="comma-separated judges")
    parser.add_argument("--settings", type=json_object, default={}, help="judge settings (JSON)")
    parser.add_argument("--max-per-run", type=int, default=4)
    parser.add_argument("--min-reference-score", type=float, default=0.75)
    parser.add_argument("--out", type=Path, required=True, help="the drift_injection Parquet")
    args = parser.parse_args(argv)
    judges = [(j, args.settings.get(j, {})) for j in args.judges.split(",") if j]
    from sabench.judges.registry import judge_available

    for name, _ in judges:
        if not judge_available(name):
            parser.error(f"argument --judges: unknown judge {name!r}")
    with step(None, "drift") as log:
        if args.results:
            runs = [tuple(r.split("/")) for r in args.runs]
            table = drift_results(
                args.results,
                runs,  # type: ignore[arg-type]
                judges,
                max_per_run=args.max_per_run,
                min_reference_score=args.min_reference_score,
            )
        else:
            from sabench.judges.run import read_saus_table

            if args.submission is None or args.saus is None:
                parser.error("give SUBMISSION and --saus, or --results")
            saus = read_saus_table(args.saus)[0]
            mutants = make_mutants(args.submission, saus, max_per_type=args.max_per_run)
            table = drift_frame(judge_mutants(args.submission, saus, mutants, judges))
        write_parquet(args.out, table, table="drift_injection")
        summary = drift_summary(table)
        log.info("%d mutant judgments -> %s", len(table), args.out)
    print(summary.to_string(index=False) if not summary.empty else "no mutant could be tied")
    return 0
