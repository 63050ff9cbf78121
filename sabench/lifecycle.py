"""What the workflow does around its jobs: before the first job starts and after the last one ends.

Snakemake calls these from ``rules/common.smk`` (``onstart``, ``onsuccess``, ``onerror``); they run in
the main snakemake process, never in a dry run, and only when there are jobs to run.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

from sabench.judges.registry import judge_kind

log = logging.getLogger("sabench")


def on_start(settings: Any, workflow: Any) -> None:
    """Refuse to start what cannot succeed or would harm another run (one line each, exit 1)."""
    from sabench.locks import acquire_results

    acquire_results(settings.results)  # first: one writer per results folder (sabench.locks)
    problems = missing_api_keys(settings)
    if problems:
        for line in problems:
            print(f"error: {line}", file=sys.stderr)
        sys.exit(1)


def on_end(settings: Any, workflow: Any, *, ok: bool) -> None:
    """After the last job: tabulate what completed when jobs failed, release what on_start took."""
    from sabench.locks import release_results

    try:
        if not ok:
            tabulate_what_completed(settings, workflow)
    finally:
        release_results()  # last: the results folder's lock (sabench.locks; also at exit)


def _key_env(owner: str, settings: dict[str, Any] | None, field: str) -> list[str]:
    name = (settings or {}).get("api_key_env")
    if name and not os.environ.get(name):
        return [f"{owner}: {field}: environment variable {name} is not set (export it first)"]
    return []


def missing_api_keys(settings: Any) -> list[str]:
    """Every ``api_key_env`` of the grid's agents, judges and SAU extraction whose variable is
    unset or empty, and every variable a ``command`` agent passes on that the host lacks: each one
    line naming who needs it. Checked before any job starts, so that a missing key is one line,
    not a grid of failed runs."""
    config = settings.config
    problems: list[str] = []
    for name, agent in settings.agents.items():
        problems += _key_env(f"agent {name}", agent, "api_key_env")
        for variable in agent.get("env", []) if agent.get("kind") == "command" else []:
            if variable not in os.environ:
                problems.append(
                    f"agent {name}: env: environment variable {variable} is not set on this host"
                )
    judges = list(settings.judges)
    if settings.drift_runs:
        judges += [j for j in config["drift"]["judges"] if j not in judges]
    for judge in judges:
        kind = judge_kind(judge)
        if kind is not None and kind.model:
            problems += _key_env(
                f"judge {judge}", config["judge_settings"].get(judge), "api_key_env"
            )
    extraction = config.get("saus_extraction") or {}
    extractor = extraction.get("extractor")
    if extractor:
        merged = {**config["judge_settings"].get(extractor, {}), **extraction.get("settings", {})}
        problems += _key_env(
            f"saus_extraction {extractor}", merged, "saus_extraction.settings.api_key_env"
        )
    return problems


def tabulate_what_completed(settings: Any, workflow: Any) -> None:
    """Jobs failed (keep-going ran the rest): when this run was to make the tables, make them from
    the runs that completed, naming the others, so that one broken paper or one outage costs those
    runs only. Never raises: the failed jobs are what the user must see first."""
    planned = {job.rule.name: job for job in workflow.dag.needrun_jobs(exclude_finished=False)}
    aggregate_job = planned.get("aggregate")
    if aggregate_job is None or workflow.dag.finished(aggregate_job):
        return
    from sabench.aggregate import write_tables

    results = Path(settings.results)
    try:
        summary = write_tables(
            results,
            settings.grid_runs,
            settings.grid_papers,
            judges=settings.judges,
            execute=settings.config["runtime"].get("execute", True),
        )
        if "report" in planned:
            from sabench.report import make_report, read_tables

            make_report(read_tables(results / "tables"), results / "report", results)
    except Exception as exc:  # the failed jobs come first; say why the tables are not there
        print(f"sabench: could not tabulate the completed runs: {exc}", file=sys.stderr)
        return
    print(
        f"sabench: jobs failed; the tables in {results / 'tables'} cover the runs that completed "
        "(see 'Not complete' in summary.md):\n" + summary,
        file=sys.stderr,
    )
