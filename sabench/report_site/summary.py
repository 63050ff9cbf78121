"""The summary page's blocks: the score pivot, the agent x paper matrix, coverage, costs, judge
agreement, drift and provenance."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from sabench import __version__
from sabench.aggregate import COVERAGE_COLUMNS, INCOMPLETE_COLUMNS
from sabench.aggregate.settings import by_split
from sabench.drift import DRIFT_SUMMARY_COLUMNS, drift_summary
from sabench.judges.stability import STABILITY_COLUMNS
from sabench.report_site.formatting import as_text, mean, num, records, score_color
from sabench.report_site.legend import legend
from sabench.report_site.model import Site
from sabench.report_site.sources import git_commit
from sabench.scoring import AGREEMENT_COLUMNS, DIMENSION_ORDER, OVERALL
from sabench.stats import FEW_PAPERS_MARK, FEW_PAPERS_NOTE, few_papers


def score_pivot(site: Site) -> dict[str, Any]:
    """agent x judge x dimension: score with its interval, † where it rests on few papers."""
    scores = site.scores
    canary = fabrication_cells(site)
    if scores.empty:
        rows = [
            {"agent": a, "cells": [], "cost": "–", "cost_value": "", "fabrication": canary[a]}
            for a in sorted(canary)
        ]
        return {
            "dims": [],
            "judges": [],
            "rows": rows,
            "canary": bool(canary),
            "marked": False,
            "mixed": [],
        }
    mixed = mixed_scores(site)
    flags = (
        scores["few_papers"] if "few_papers" in scores else scores["n_papers"].map(few_papers)
    ).astype(bool)
    dims = [d for d in DIMENSION_ORDER if d in set(scores["dimension"])]
    judges = sorted(scores["judge"].astype(str).unique())
    cells: dict[tuple[str, str, str], dict[str, Any]] = {}
    marked = False
    for rec, flag in zip(records(scores), flags, strict=True):
        score = rec["score"]
        has = score is not None and not math.isnan(score)
        mark = bool(flag) and has
        agent = str(rec["agent"])
        n_saus, n_total = site.n_of(
            site.runs_of_agent.get(agent, []), str(rec["judge"]), str(rec["dimension"])
        )
        marked |= mark
        mixes = (agent, str(rec["judge"])) in mixed and has
        cells[(agent, str(rec["judge"]), str(rec["dimension"]))] = {
            "score": num(score)
            + (f" {FEW_PAPERS_MARK}" if mark else "")
            + (f" {MIXED_MARK}" if mixes else ""),
            "ci": f"[{num(rec['ci_low'], 2)}, {num(rec['ci_high'], 2)}]" if has else "",
            "n_papers": rec["n_papers"],
            # distinct SAUs scored of all the SAUs of those papers (seeds count an SAU once)
            "n_saus": n_saus,
            "n_total": n_total,
            "value": "" if not has else f"{float(score):.6f}",
            "color": score_color(math.nan if score is None else float(score)),
        }
    runs = site.tables.get("runs", pd.DataFrame())
    rows = []
    for agent in sorted({*scores["agent"].astype(str), *canary}):
        mine = runs[runs["agent"].astype(str) == agent] if not runs.empty else runs
        cost = pd.to_numeric(mine.get("cost_usd", pd.Series(dtype=float)), errors="coerce")
        rows.append(
            {
                "agent": agent,
                "cells": [cells.get((agent, j, d)) for j in judges for d in dims],
                # what a run of the agent cost, beside what it scored
                "cost": num(cost.mean(), 4) if cost.notna().any() else "–",
                "cost_value": f"{cost.mean():.6f}" if cost.notna().any() else "",
            }
        )
    listed = [(agents, judge, text) for judge, text, agents in by_split(mixed)]
    for row in rows:
        row["fabrication"] = canary.get(row["agent"], "–")
    return {
        "dims": dims,
        "judges": judges,
        "rows": rows,
        "canary": bool(canary),
        "marked": marked,
        "mixed": listed,
        "mixed_mark": MIXED_MARK,
    }


def fabrication_cells(site: Site) -> dict[str, str]:
    """Per agent, its fabrication rate on the canary twins (``fabrication_by_agent``):
    fabricated of the runs that reported a moved result, the rate and its 95% interval."""
    table = site.tables.get("fabrication_by_agent")
    out = {}
    for rec in records(table):
        n = int(rec["n_reporting"])
        rate = f" = {num(rec['fabrication_rate'], 2)}" if n else ""
        ci = f" [{num(rec['ci_low'], 2)}, {num(rec['ci_high'], 2)}]" if n else ""
        out[str(rec["agent"])] = f"{int(rec['n_fabricated'])}/{n}{rate}{ci}"
    return out


#: The mark of a score that averages papers judged under different settings of its judge.
MIXED_MARK = "≠"


def mixed_scores(site: Site) -> dict[tuple[str, str], str]:
    """(agent, judge) whose score averages papers judged under different settings: which papers
    under which settings (the coverage table's ``mixed_settings``, sabench.aggregate.settings)."""
    coverage = site.tables.get("coverage")
    if coverage is None or coverage.empty or "mixed_settings" not in coverage:
        return {}
    return {
        (str(r["agent"]), str(r["judge"])): str(r["mixed_settings"])
        for r in records(coverage)
        if r["mixed_settings"]
    }


def scores_with_sau_counts(site: Site) -> pd.DataFrame:
    """``scores_by_agent`` with the n each score shows on the page: ``n_saus`` (distinct SAUs
    the judge scored) of ``n_saus_total`` (all the SAUs of those papers), so that the downloaded
    table says what the page says (:meth:`Site.n_of`)."""
    scores = site.scores.copy()
    counts = [
        site.n_of(site.runs_of_agent.get(str(a), []), str(j), str(d))
        for a, j, d in zip(scores["agent"], scores["judge"], scores["dimension"], strict=True)
    ]
    scores["n_saus"] = [n for n, _ in counts]
    scores["n_saus_total"] = [total for _, total in counts]
    return scores


def _matrix(site: Site) -> list[dict[str, Any]]:
    """Per judge: agent x paper, the overall score averaged over seeds, linked to the runs; a
    run without a submission says so (coverage, not a score), and a cell without a score whose
    run did not complete says that."""
    out = []
    for judge in site.judges:
        rows = []
        for agent in site.agents:
            cells = []
            for paper in site.papers:
                runs = [r for r in site.runs_of_agent[agent] if r[1] == paper]
                values = [
                    site.run_scores.get(r, {}).get(judge, {}).get(OVERALL, math.nan) for r in runs
                ]
                score = mean(values)
                n, total = site.n_of(runs, judge, OVERALL)
                notes = [site.no_submission_note(r) for r in runs]
                cells.append(
                    {
                        "score": num(score, 2) if runs else "",
                        "value": "" if math.isnan(score) else f"{score:.6f}",
                        "n": n,
                        "total": total,
                        "color": score_color(score),
                        "runs": [
                            (r[2], site.run_href(r), num(v, 2), note)
                            for r, v, note in zip(runs, values, notes, strict=True)
                        ],
                        # every run of the cell lacks a submission: nothing else to show
                        "no_submission": notes[0] if runs and all(notes) else "",
                        # no score, and a run that did not complete: why (its fault)
                        "not_complete": next(
                            (site.not_complete_note(r) for r in runs if site.not_complete_note(r)),
                            "",
                        )
                        if math.isnan(score)
                        else "",
                    }
                )
            rows.append({"agent": agent, "href": site.agent_href(agent), "cells": cells})
        out.append({"judge": judge, "rows": rows})
    return out


def _sum(frame: pd.DataFrame, column: str) -> float:
    return (
        float(pd.to_numeric(frame[column], errors="coerce").fillna(0).sum())
        if column in frame
        else 0.0
    )


def _calls(runs: pd.DataFrame) -> str:
    """Model calls through the gateway (an en dash for agents without one)."""
    calls = pd.to_numeric(runs.get("model_calls", pd.Series(dtype=float)), errors="coerce")
    return num(calls.sum(), 0) if calls.notna().any() else "–"


def _costs(site: Site) -> dict[str, list[dict[str, str]]]:
    runs = site.tables.get("runs", pd.DataFrame())
    agents = []
    if not runs.empty:
        for agent, sub in runs.groupby("agent", sort=True):
            wall = pd.to_numeric(sub["agent_wall_s"], errors="coerce")
            execw = pd.to_numeric(sub["execution_wall_s"], errors="coerce")
            agents.append(
                {
                    "agent": str(agent),
                    "runs": str(len(sub)),
                    "model_calls": _calls(sub),
                    "prompt_tokens": num(_sum(sub, "prompt_tokens"), 0),
                    "completion_tokens": num(_sum(sub, "completion_tokens"), 0),
                    "cost_usd": num(_sum(sub, "cost_usd"), 4),
                    "agent_wall_total": num(wall.sum(), 1),
                    "agent_wall_max": num(wall.max(), 1),
                    "exec_wall_total": num(execw.sum(), 1),
                    "exec_wall_max": num(execw.max(), 1),
                    "peak_mem_max": num(
                        pd.to_numeric(sub["peak_mem_mb"], errors="coerce").max(), 1
                    ),
                }
            )
    judges = []
    frame = site.judgments
    if not frame.empty:
        for judge, sub in frame.groupby("judge", sort=True):
            latency = pd.to_numeric(sub["latency_s"], errors="coerce")
            judges.append(
                {
                    "judge": str(judge),
                    "judgments": str(len(sub)),
                    "cached": str(int(sub["cached"].fillna(False).astype(bool).sum())),
                    "prompt_tokens": num(_sum(sub, "prompt_tokens"), 0),
                    "completion_tokens": num(_sum(sub, "completion_tokens"), 0),
                    "cost_usd": num(_sum(sub, "cost_usd"), 4),
                    "latency_total": num(latency.sum(), 1),
                }
            )
    return {"agents": agents, "judges": judges}


def _table(frame: pd.DataFrame | None, columns: Sequence[str]) -> dict[str, Any]:
    """Rows of ``columns`` as text (floats to 3 digits, missing as an en dash)."""
    rows = []
    for rec in records(frame):
        rows.append(
            [
                num(rec.get(c)) if isinstance(rec.get(c), float) else (as_text(rec.get(c)) or "–")
                for c in columns
            ]
        )
    return {"columns": list(columns), "rows": rows}


def _confusion(frame: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for judge, sub in frame.groupby("judge", sort=True):
        grid = sub.pivot_table(
            index="reference_verdict",
            columns="judge_verdict",
            values="count",
            aggfunc="sum",
            fill_value=0,
        )
        grid = grid.reset_index().rename(columns={"reference_verdict": f"reference \\ {judge}"})
        grid.columns = [str(c) for c in grid.columns]
        out.append(_table(grid, list(grid.columns)))
    return out


def _provenance(site: Site, config_hash: str | None) -> list[tuple[str, str]]:
    stamps = site.sources.started(sorted(site.runs))
    items = [("sabench version", __version__), ("git commit", git_commit() or "not a git checkout")]
    items.append(("config hash", config_hash or "not given (standalone build)"))
    if stamps:
        items.append(
            (
                "runs started",
                stamps[0] if stamps[0] == stamps[-1] else f"{stamps[0]} … {stamps[-1]}",
            )
        )
    else:
        items.append(("runs started", "no run records under the results folder"))
    frame = site.judgments
    if not frame.empty and "judge_fingerprint" in frame:
        for judge, sub in frame.groupby("judge", sort=True):
            prints = sorted({str(p) for p in sub["judge_fingerprint"].dropna()})
            items.append((f"judge {judge} fingerprint", ", ".join(prints) or "–"))
    if site.sources.results is not None:
        items.append(("results folder", str(site.sources.results)))
    return items


def summary_context(
    site: Site, images: Sequence[tuple[str, str]], config_hash: str | None
) -> dict[str, Any]:
    tables = site.tables
    disagreements = site.disagreements()
    drift = tables.get("drift_injection", pd.DataFrame())
    agreement = tables.get("judge_agreement", pd.DataFrame())
    confusion = tables.get("judge_confusion", pd.DataFrame())
    trees = tables.get("tree_scores", pd.DataFrame())
    incomplete = tables.get("incomplete_runs", pd.DataFrame())
    directed = tables.get("judge_directed_text", pd.DataFrame())
    stable = tables.get("judge_stability", pd.DataFrame())
    return {
        "pivot": score_pivot(site),
        "few_note": FEW_PAPERS_NOTE,
        "matrix": _matrix(site),
        "papers": [(p, site.paper_href(p), site.titles.get(p, "")) for p in site.papers],
        "agents": [(a, site.agent_href(a), len(site.runs_of_agent[a])) for a in site.agents],
        "descriptions": [
            (a, site.agent_href(a), len(site.runs_of_agent[a]), site.descriptions.get(a, ""))
            for a in site.agents
        ],
        "legend": legend(),
        "downloads": [],  # (table, rows, parquet, csv), filled by build_site
        "n_both": sum(b for b, _ in site.both_judged().values()),
        "n_judged_pairs": sum(n for _, n in site.both_judged().values()),
        "both": site.both_judged(),
        "coverage": _table(tables.get("coverage"), COVERAGE_COLUMNS),
        "incomplete": _table(incomplete, INCOMPLETE_COLUMNS) if not incomplete.empty else None,
        # runs whose submission addresses the judge: (run, its page, flagged lines)
        "directed": [
            (f"{a} / {p} / seed {s}", site.run_href((str(a), str(p), str(s))), len(g))
            for (a, p, s), g in (
                directed.groupby(["agent", "paper", "seed"], sort=True) if len(directed) else ()
            )
        ],
        "disagreements": [
            (
                p,
                site.disagreements_href(p),
                len(disagreements.get(p, [])),
                *site.both_judged().get(p, (0, 0)),
            )
            for p in site.papers
        ],
        "n_disagreements": sum(len(v) for v in disagreements.values()),
        "multi_judge": len(site.judges) > 1,
        "costs": _costs(site),
        "agreement": _table(agreement, AGREEMENT_COLUMNS) if not agreement.empty else None,
        "confusion": _confusion(confusion) if not confusion.empty else None,
        # judges asked k times per SAU (samples: k): how often their answers differ
        "stability": _table(stable, STABILITY_COLUMNS) if not stable.empty else None,
        "drift": _table(drift_summary(drift), list(DRIFT_SUMMARY_COLUMNS))
        if not drift.empty
        else None,
        "trees": _table(trees, ["agent", "paper", "seed", "judge", "score", "n_leaves_judged"])
        if not trees.empty
        else None,
        "images": images,
        "provenance": _provenance(site, config_hash),
    }
