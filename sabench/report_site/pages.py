"""The contexts of the agent, paper, run and disagreements pages."""

from __future__ import annotations

import json
import math
from typing import Any

from sabench.contracts import UNSCORED_VERDICTS
from sabench.report_site.formatting import as_text, mean, num, score_color, slug
from sabench.report_site.legend import legend
from sabench.report_site.model import Site
from sabench.report_site.sources import LOG_TAIL_LINES, Run
from sabench.report_site.summary import score_pivot
from sabench.scoring import DIMENSION_ORDER, OVERALL
from sabench.stats import FEW_PAPERS_NOTE

OK_VERDICTS = {"aligned"}


def _bars(site: Site, run: Run) -> list[dict[str, Any]]:
    """Per judge: the run's overall score as a bar's width, with the SAUs it rests on of the
    paper's SAUs."""
    scores, counts = site.run_scores.get(run, {}), site.run_n.get(run, {})
    total = site.sau_count(run[1], OVERALL)
    out = []
    for judge in site.judges:
        score = scores.get(judge, {}).get(OVERALL, math.nan)
        out.append(
            {
                "judge": judge,
                "score": num(score),
                "width": 0 if math.isnan(score) else round(100 * score),
                "n": counts.get(judge, {}).get(OVERALL, 0),
                "total": total,
                "color": score_color(score),
            }
        )
    return out


def sau_attrs(site: Site, run: Run, sau_id: str, dimension: str) -> dict[str, str]:
    """What the pages' SAU filters read: the dimension, the judges that judged it, their
    verdicts and failure modes (``judge:value`` words)."""
    recs = site.verdicts.get(run, {}).get(sau_id, {})
    return {
        "dim": dimension,
        "j": " ".join(sorted(recs)),
        "v": " ".join(f"{j}:{as_text(r.get('verdict'))}" for j, r in sorted(recs.items())),
        "fm": " ".join(
            f"{j}:{as_text(r.get('failure_mode'))}"
            for j, r in sorted(recs.items())
            if r.get("failure_mode")
        ),
    }


def _grounded(row: dict[str, Any]) -> str:
    value = row.get("grounded")
    return "" if value is None else ("grounded" if bool(value) else "not grounded")


def _run_summary(site: Site, run: Run) -> dict[str, Any]:
    scores = site.run_scores.get(run, {})
    n_bad = sum(
        1
        for recs in site.verdicts.get(run, {}).values()
        for rec in recs.values()
        if as_text(rec.get("verdict")) not in OK_VERDICTS | set(UNSCORED_VERDICTS)
    )
    rec = site.runs.get(run, {})
    note = site.no_submission_note(run)
    bars = _bars(site, run)
    return {
        "agent": run[0],
        "paper": run[1],
        "seed": run[2],
        "href": site.run_href(run),
        "scores": [num(scores.get(j, {}).get(OVERALL, math.nan)) for j in site.judges],
        "colors": [score_color(scores.get(j, {}).get(OVERALL, math.nan)) for j in site.judges],
        "execution": as_text(rec.get("execution_status")) or "–",
        "n_bad": n_bad,
        # a run without a submission and without a score: its label instead of empty bars
        "bars": [] if note and all(b["width"] == 0 and b["score"] == "–" for b in bars) else bars,
        "no_submission": note,
        "not_complete": site.not_complete_note(run),
    }


def never_executed(rec: dict[str, Any]) -> str:
    """Why a run's reproduce.sh never ran, or "" when it ran: such a run has no backend, whatever
    its record names (the configured one, ``auto``)."""
    status = as_text(rec.get("execution_status"))
    if status == "no_reproduce_script":
        return "never executed: the submission has no reproduce.sh"
    return "" if status else "never executed"


def _metrics(value: Any) -> list[tuple[str, str]]:
    if not value:
        return []
    try:
        data = json.loads(value) if isinstance(value, str) else dict(value)
    except (ValueError, TypeError):
        return [("metrics", str(value))]
    if not isinstance(data, dict):
        return [("metrics", str(data))]
    return [
        (str(k), num(v, 6) if isinstance(v, int | float) else str(v))
        for k, v in sorted(data.items())
    ]


def run_context(site: Site, run: Run) -> dict[str, Any]:
    rec = site.runs.get(run, {})
    saus = []
    for row in site.sau_rows(run[1], [run]):
        sau_id = str(row["sau_id"])
        judged = {j: site.cell(run, sau_id, j) for j in site.judges}
        verdicts = {c["verdict"] for c in judged.values() if c}
        dimension = as_text(row.get("dimension"))
        saus.append(
            {
                "id": sau_id,
                "anchor": "sau-" + slug(sau_id),
                "dimension": dimension,
                "claim": as_text(row.get("claim")),
                "quote": row["quote"],
                "context": row["context"],
                "grounded": _grounded(row),
                # only the judges that judged it take room; the others are named
                "judges": [(j, judged[j]) for j in site.judges if judged[j]],
                "not_judged": [j for j in site.judges if not judged[j]],
                "attrs": sau_attrs(site, run, sau_id, dimension),
                "ok": bool(verdicts) and verdicts <= OK_VERDICTS,
                "disagree": site.disagree(run, sau_id),
            }
        )
    scores = site.run_scores.get(run, {})
    dims = [d for d in DIMENSION_ORDER if any(d in scores.get(j, {}) for j in site.judges)]
    agent_fields = [
        (k, as_text(rec.get(k)) or "–")
        for k in ("agent_kind", "agent_status", "model", "steps", "agent_error")
    ]
    agent_fields += [
        (
            "tokens (prompt / completion)",
            f"{num(rec.get('prompt_tokens'), 0)} / {num(rec.get('completion_tokens'), 0)}",
        ),
        ("cost ($)", num(rec.get("cost_usd"), 4)),
        ("wall time (s)", num(rec.get("agent_wall_s"), 1)),
    ]
    calls = rec.get("model_calls")
    if isinstance(calls, int | float) and not math.isnan(calls):  # a run behind the gateway
        agent_fields += [
            ("model calls (gateway)", num(calls, 0)),
            ("limit", as_text(rec.get("agent_limit")) or "–"),
        ]
    unexecuted = never_executed(rec)
    exec_fields = [
        ("status", as_text(rec.get("execution_status")) or "–"),
        ("exit code", num(rec.get("exit_code"), 0)),
        ("wall time (s)", num(rec.get("execution_wall_s"), 1)),
        ("peak memory (MB)", num(rec.get("peak_mem_mb"), 1)),
        ("backend", unexecuted or as_text(rec.get("backend")) or "–"),
        ("isolation", unexecuted or as_text(rec.get("isolation")) or "–"),
    ]
    others = [r for r in site.runs_of_paper[run[1]] if r != run]
    run_index = site.runs_of_paper[run[1]].index(run) if run in site.runs_of_paper[run[1]] else 0
    return {
        "legend": legend(),
        "run": run,
        "title": site.titles.get(run[1], ""),
        "agent_href": site.agent_href(run[0]),
        "paper_href": site.paper_href(run[1]),
        "judges": site.judges,
        "dims": dims,
        "scores": [
            (j, [num(scores.get(j, {}).get(d, math.nan)) for d in dims]) for j in site.judges
        ],
        "agent_fields": agent_fields,
        "exec_fields": exec_fields,
        "metrics": _metrics(rec.get("metrics")),
        "log": site.sources.log_tail(run),
        "failed": as_text(rec.get("execution_status")) not in ("ok", ""),
        "log_lines": LOG_TAIL_LINES,
        "transcript": site.sources.transcript(run),
        "saus": saus,
        "bad": [s for s in saus if not s["ok"] and s["judges"]],
        "n_scored": [(j, site.run_n.get(run, {}).get(j, {}).get(OVERALL, 0)) for j in site.judges],
        "n_saus": site.sau_count(run[1], OVERALL),
        "no_submission": site.no_submission_note(run),
        "not_complete": site.not_complete_note(run),
        "never_executed": unexecuted,
        "description": site.descriptions.get(run[0], ""),
        "files": [(f, site.file_href(run, f)) for f in site.sources.files(run)],
        "paper_text_href": site.paper_text_href(run[1]),
        "diffs": [
            (f"{r[0]} / seed {r[2]}", f"{site.diff_href(run[1])}#a={run_index}&b={i}")
            for i, r in enumerate(site.runs_of_paper[run[1]])
            if r != run
        ],
        "others": [
            (f"{r[0]} / seed {r[2]}", site.run_href(r), site.no_submission_note(r)) for r in others
        ],
        "directed": [
            (f"{d['file']}:{d['line']}", as_text(d["text"])) for d in site.directed.get(run, [])
        ],
    }


def agent_context(site: Site, agent: str) -> dict[str, Any]:
    pivot = score_pivot(site)
    rows = [r for r in pivot["rows"] if r["agent"] == agent]
    return {
        "agent": agent,
        "description": site.descriptions.get(agent, ""),
        "pivot": {
            **pivot,
            "rows": rows,
            "mixed": [([agent], j, t) for agents, j, t in pivot["mixed"] if agent in agents],
        },
        "few_note": FEW_PAPERS_NOTE,
        "judges": site.judges,
        "runs": [_run_summary(site, r) for r in site.runs_of_agent[agent]],
    }


def paper_context(site: Site, paper: str) -> dict[str, Any]:
    runs = site.runs_of_paper[paper]
    columns = [(i, f"{r[0]} / seed {r[2]}", site.run_href(r)) for i, r in enumerate(runs)]
    first_seed: dict[str, int] = {}
    for i, r in enumerate(runs):
        first_seed.setdefault(r[0], i)

    def overall(i: int) -> float:
        score = mean(
            site.run_scores.get(runs[i], {}).get(j, {}).get(OVERALL, math.nan) for j in site.judges
        )
        return -1.0 if math.isnan(score) else score

    # side by side at first: the two best-scored agents (first seeds), where drift is the difference
    best = sorted(first_seed.values(), key=lambda i: (-overall(i), i))[:2]
    default = sorted(best) or [0]
    rows = []
    for row in site.sau_rows(paper, runs):
        sau_id = str(row["sau_id"])
        dimension = as_text(row.get("dimension"))
        attrs: dict[str, set[str]] = {"j": set(), "v": set(), "fm": set()}
        for r in runs:
            for key, value in sau_attrs(site, r, sau_id, dimension).items():
                if key != "dim":
                    attrs[key].update(value.split())
        rows.append(
            {
                "id": sau_id,
                "anchor": "sau-" + slug(sau_id),
                "dimension": dimension,
                "claim": as_text(row.get("claim")),
                "quote": row["quote"],
                "grounded": _grounded(row),
                "attrs": {"dim": dimension, **{k: " ".join(sorted(v)) for k, v in attrs.items()}},
                "cells": [
                    [(j, c) for j in site.judges if (c := site.cell(r, sau_id, j))] for r in runs
                ],
                "not_judged": [
                    [j for j in site.judges if not site.cell(r, sau_id, j)] for r in runs
                ],
                "differ": len(
                    {
                        tuple(
                            (c or {}).get("verdict")
                            for c in (site.cell(r, sau_id, j, False) for j in site.judges)
                        )
                        for r in runs
                    }
                )
                > 1,
            }
        )
    return {
        "legend": legend(),
        "paper": paper,
        "title": site.titles.get(paper, ""),
        "columns": columns,
        "left": default[0],
        "right": default[1] if len(default) > 1 else default[0],
        "runs": [_run_summary(site, r) for r in runs],
        "judges": site.judges,
        "rows": rows,
        "disagreements_href": site.disagreements_href(paper),
        "paper_text_href": site.paper_text_href(paper),
        "diff_href": site.diff_href(paper),
    }


def disagreements_context(site: Site, paper: str, items: list[tuple[Run, str]]) -> dict[str, Any]:
    rows_by_id = {
        str(r["sau_id"]): r for r in site.sau_rows(paper, sorted({run for run, _ in items}))
    }
    out = []
    for run, sau_id in items:
        row = rows_by_id.get(sau_id, {})
        dimension = as_text(row.get("dimension"))
        out.append(
            {
                "run": run,
                "href": site.run_href(run) + "#sau-" + slug(sau_id),
                "id": sau_id,
                "dimension": dimension,
                "claim": as_text(row.get("claim")),
                "quote": as_text(row.get("quote")),
                "attrs": sau_attrs(site, run, sau_id, dimension),
                "judges": [(j, c) for j in site.judges if (c := site.cell(run, sau_id, j))],
            }
        )
    both, judged = site.both_judged().get(paper, (0, 0))
    return {
        "legend": legend(),
        "both": both,
        "judged": judged,
        "judges": site.judges,
        "paper": paper,
        "title": site.titles.get(paper, ""),
        "items": out,
        "paper_href": site.paper_href(paper),
    }
