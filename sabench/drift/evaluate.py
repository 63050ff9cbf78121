"""Judging mutants: every judge scores the original and each mutant; recall and false alarms per
judge and drift type, on one submission or the runs of a results folder (the CLI)."""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sabench.drift.make import make_mutants
from sabench.drift.mutants import DRIFT_TYPES, Mutant

if TYPE_CHECKING:
    import pandas as pd


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
]
DRIFT_SUMMARY_COLUMNS = [
    "judge",
    "drift_type",
    "n_mutants",
    "recall",
    "recall_if_credited",
    "false_alarm_rate",
    "mean_drop",
]


def _scores(judgments: Iterable[Any]) -> dict[str, tuple[float, str]]:
    out = {}
    for j in judgments:
        if j.verdict == "error" or j.score is None:
            continue
        out[j.sau_id] = (float(j.score), j.verdict)
    return out


def judge_mutants(
    submission: Path,
    saus: list[dict[str, Any]],
    mutants: Sequence[Mutant],
    judges: Sequence[tuple[str, dict[str, Any]]] = (("static", {}),),
    run: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Score the original and every mutant with every judge; one row per mutant and judge."""
    from sabench.judges.run import run_judge

    run = run or {}
    rows: list[dict[str, Any]] = []
    if not mutants:
        return rows
    with tempfile.TemporaryDirectory(prefix="sabench-drift-") as tmp:
        work = Path(tmp) / "submission"
        shutil.copytree(submission, work, symlinks=True)
        for name, settings in judges:
            base = _scores(run_judge(name, settings, work, saus, None, run=run))
            for m in mutants:
                originals = {p: (work / p).read_bytes() for p in m.files}
                try:
                    for p, text in m.files.items():
                        (work / p).write_text(text, encoding="utf-8")
                    got = _scores(run_judge(name, settings, work, saus, None, run=run))
                finally:
                    for p, data in originals.items():
                        (work / p).write_bytes(data)
                if m.sau_id not in base or m.sau_id not in got:
                    continue
                others = [s for s in base if s != m.sau_id and s in got]
                changed = sum(1 for s in others if abs(got[s][0] - base[s][0]) > 1e-9)
                rows.append(
                    {
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
                        "base_score": base[m.sau_id][0],
                        "mutant_score": got[m.sau_id][0],
                        "base_verdict": base[m.sau_id][1],
                        "mutant_verdict": got[m.sau_id][1],
                        "dropped": got[m.sau_id][0] < base[m.sau_id][0] - 1e-9,
                        "n_other": len(others),
                        "n_other_changed": changed,
                    }
                )
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
    return frame


def drift_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per judge and drift type: recall, recall where the original was credited (score > 0), the
    false-alarm rate over the other SAUs, and the mean score drop of the broken SAU."""
    import pandas as pd

    rows = []
    if table.empty:
        return pd.DataFrame(columns=DRIFT_SUMMARY_COLUMNS)
    order = {t: i for i, t in enumerate(DRIFT_TYPES)}
    for (judge, kind), g in table.groupby(["judge", "drift_type"], sort=False):
        credited = g[g["base_score"] > 0]
        n_other = int(g["n_other"].sum())
        rows.append(
            {
                "judge": judge,
                "drift_type": kind,
                "n_mutants": len(g),
                "recall": float(g["dropped"].mean()),
                "recall_if_credited": float(credited["dropped"].mean())
                if len(credited)
                else math.nan,
                "false_alarm_rate": float(g["n_other_changed"].sum() / n_other)
                if n_other
                else math.nan,
                "mean_drop": float((g["base_score"] - g["mutant_score"]).mean()),
            }
        )
    out = pd.DataFrame(rows, columns=DRIFT_SUMMARY_COLUMNS)
    out["_o"] = out["drift_type"].map(lambda t: order.get(t, 99))
    return out.sort_values(["judge", "_o"]).drop(columns="_o").reset_index(drop=True)


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
