"""One setting per score: where a judge scored one agent's papers under different settings.

A one-paper rejudge with other judge settings (``--config papers=P judge_settings=...``) leaves the
other papers' judgments of the settings they were made with; an agent's score averages its papers,
so it would mix the two without a word. Each judge file records the settings its fingerprint
stands for (``judge_settings`` in its Parquet metadata, sabench.judges.run); here the papers of
each (agent, judge) are grouped by fingerprint, and a score resting on more than one is named in
``coverage.mixed_settings``, summary.md and the report.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from sabench.grid import judge_slug
from sabench.io import read_parquet_metadata

#: ``coverage.mixed_settings`` of a score made under one setting.
ONE_SETTING = ""


def _settings_of(results_root: Path, judge: str, run: tuple[str, str, str]) -> str | None:
    """The settings one run's judge file says it was judged with (JSON), None when unrecorded."""
    agent, paper, seed = run
    path = results_root / "runs" / agent / paper / seed / "judge" / f"{judge_slug(judge)}.parquet"
    try:
        return read_parquet_metadata(path).get("judge_settings")
    except (OSError, ValueError):
        return None


def describe(settings_json: str | None, fingerprint: str) -> str:
    """Settings as a reader takes them in: ``{time_limit_s: 30}``, ``the defaults``, or the
    fingerprint where the file did not record them (a judgment made before they were)."""
    if settings_json is None:
        return f"unrecorded settings (fingerprint {fingerprint[:8]})"
    try:
        settings = json.loads(settings_json)
    except ValueError:
        return f"unrecorded settings (fingerprint {fingerprint[:8]})"
    if not settings:
        return "the defaults"
    return "{" + ", ".join(f"{k}: {json.dumps(v)}" for k, v in sorted(settings.items())) + "}"


def mixed_settings(used: pd.DataFrame, results_root: Path) -> dict[tuple[str, str], str]:
    """By (agent, judge) whose scored papers were judged under more than one fingerprint: which
    papers under which settings (``ridge-gd with {time_limit_s: 30}; kmeans-pp, logreg-earlystop
    with the defaults``), the largest group first. ``used``: the stream's ``settings``
    (agent, judge, paper, seed, judge_fingerprint). Pairs under one setting are absent."""
    out: dict[tuple[str, str], str] = {}
    if used.empty:
        return out
    used = used.dropna(subset=["judge_fingerprint"])
    described: dict[tuple[str, str], str] = {}
    for (agent, judge), group in used.groupby(["agent", "judge"], sort=True):
        if group["judge_fingerprint"].nunique() < 2:
            continue
        parts = []
        by_print = group.groupby("judge_fingerprint", sort=False)
        # the largest group first, then by its first paper: an order that reads the same
        # whatever the fingerprints are
        for fingerprint, runs in sorted(
            by_print, key=lambda item: (-item[1]["paper"].nunique(), min(item[1]["paper"]))
        ):
            key = (str(judge), str(fingerprint))
            if key not in described:
                first = runs.iloc[0]
                run = (str(first["agent"]), str(first["paper"]), str(first["seed"]))
                described[key] = describe(_settings_of(results_root, str(judge), run), key[1])
            papers = ", ".join(sorted({str(p) for p in runs["paper"]}))
            parts.append(f"{papers} with {described[key]}")
        out[(str(agent), str(judge))] = "; ".join(parts)
    return out


def by_split(mixed: dict[tuple[str, str], str]) -> list[tuple[str, str, list[str]]]:
    """(judge, papers and settings, agents) of :func:`mixed_settings`, the agents that share one
    split of the papers together: a one-paper rejudge splits every agent's papers alike."""
    agents: dict[tuple[str, str], list[str]] = {}
    for (agent, judge), text in sorted(mixed.items()):
        agents.setdefault((judge, text), []).append(agent)
    return [(judge, text, names) for (judge, text), names in sorted(agents.items())]


def mixed_settings_line(coverage: pd.DataFrame) -> str | None:
    """summary.md's one line on scores that combine judge settings, or None when none does."""
    if coverage.empty or "mixed_settings" not in coverage:
        return None
    mixed = {
        (str(row.agent), str(row.judge)): str(row.mixed_settings)
        for row in coverage.itertuples(index=False)
        if row.mixed_settings
    }
    if not mixed:
        return None
    items = [
        f"`{judge}` of {', '.join(f'`{a}`' for a in agents)} ({text})"
        for judge, text, agents in by_split(mixed)
    ]
    return (
        "**Mixed judge settings**: these scores average papers judged under different settings, "
        "not like with like: " + "; ".join(items) + ". Judge every paper with one setting (run "
        "the grid without narrowing it, or `--forcerun judge` for the papers named) before "
        "comparing them."
    )
