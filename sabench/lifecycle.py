"""What the workflow does around its jobs: before the first job starts and after the last one ends.

Snakemake calls these from ``rules/common.smk`` (``onstart``, ``onsuccess``, ``onerror``); they run in
the main snakemake process, never in a dry run, and only when there are jobs to run.
"""

from __future__ import annotations

import ast
import json
import logging
import os
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from sabench.gateway.settings import GatewaySettings, uses_gateway
from sabench.judges.registry import judge_kind
from sabench.wording import noun, plural

log = logging.getLogger("sabench")


def on_start(settings: Any, workflow: Any) -> None:
    """Refuse to start what cannot succeed or would harm another run (one line each, exit 1)."""
    from sabench.cluster import preflight
    from sabench.locks import acquire_results

    acquire_results(settings.results)  # first: one writer per results folder (sabench.locks)
    problems = preflight(workflow) + missing_api_keys(settings)  # Slurm answers (sabench.cluster)
    if not problems:
        from sabench.llm.endpoint import silent_servers

        problems = silent_servers(model_servers(settings, _jobs_to_run(workflow)))
    if problems:
        for line in problems:
            print(f"error: {line}", file=sys.stderr)
        sys.exit(1)
    for line in missing_replay_sources(settings):
        print(f"warning: {line}", file=sys.stderr)
    switch = runtime_change_line(runtime_changes(workflow))
    if switch:
        print(f"warning: {switch}", file=sys.stderr)


def missing_replay_sources(settings: Any, repo: Path | None = None) -> list[str]:
    """A line per run of a replay agent (a folder template; an archive is read by its job) whose
    source has no folder for the paper: the run will be ``missing_source``, left out of the
    agent's scores (docs: an agent's ``papers`` scopes it to the papers it has)."""
    from sabench.agents import missing_source_line, resolve_template

    repo = repo or Path.cwd()
    lines = []
    for agent, paper, seed in settings.runs:
        spec = settings.agents[agent]
        if spec.get("kind") != "replay" or "path" not in spec:
            continue
        source = resolve_template(spec["path"], paper, seed, repo)
        if not source.is_dir():
            why = f"source folder not found: {source}"
            lines.append(missing_source_line(agent, paper, seed, spec, why))
    return lines


class RuntimeChange(NamedTuple):
    """A completed run whose execute job reruns only because its runtime settings changed."""

    record: Path  # the run's execution.json, which names the backend it ran under
    old: Mapping[str, Any]
    new: Mapping[str, Any]


def _settings_param(serialized: Iterable[Any]) -> Mapping[str, Any] | None:
    """The execute rule's one param (its runtime settings, JSON) as Snakemake records it
    (``repr`` of the string), or None when it is not that."""
    values = list(serialized)
    if len(values) != 1 or not isinstance(values[0], str):
        return None
    try:
        settings = json.loads(ast.literal_eval(values[0]))
    except (ValueError, SyntaxError, TypeError):
        return None
    return settings if isinstance(settings, dict) else None


def runtime_changes(workflow: Any) -> list[RuntimeChange]:
    """The execute jobs Snakemake reruns for a params change alone (its own reason, so exactly
    what its ``params`` rerun trigger decided): the runtime settings, backend included, are a
    param of every execution (rules/execute.smk), so a new backend reruns every completed run."""
    changes = []
    for job in workflow.dag.needrun_jobs():
        if job.rule.name != "execute":
            continue
        change = getattr(workflow.dag.reason(job), "params_changed", None)
        if not change:
            continue
        old = _settings_param(change.only_old)
        new = _settings_param(change.only_new)
        record = getattr(job.output, "record", None)
        if old is not None and new is not None and old != new and record is not None:
            changes.append(RuntimeChange(Path(str(record)), old, new))
    return changes


def _shown(key: str, value: Any) -> str:
    if value is None:
        return "unset"
    if key == "backend":
        from sabench.sandbox import backend_label

        return backend_label(value)
    return json.dumps(value, sort_keys=True)


def _setting(key: str, value: Any) -> str:
    """A runtime key as the config file says it (``runtime.backend: bwrap``), or that it is unset."""
    if value is None:
        return f"runtime.{key} unset"
    if key == "backend" and not isinstance(value, str):
        return f"runtime.backend: [{', '.join(value)}]"
    return f"runtime.{key}: {_shown(key, value)}"


def _ran_under(records: Iterable[Path]) -> str:
    """The backends the runs' execution.json say they ran under, with counts where several."""
    backends: Counter[str] = Counter()
    for path in records:
        try:
            backends[str(json.loads(path.read_text()).get("backend") or "?")] += 1
        except (OSError, ValueError, AttributeError):
            backends["?"] += 1
    if len(backends) == 1:
        return next(iter(backends))
    return ", ".join(f"{name} ({n})" for name, n in backends.most_common())


def runtime_change_line(changes: Sequence[RuntimeChange], shown: int = 4) -> str | None:
    """One line saying how many completed runs a runtime change (a new backend above all, e.g.
    ``--profile slurm``) re-executes and re-judges, what changed, and how to keep them; None when
    nothing is rerun for it. A warning, not an error: the rerun may be wanted."""
    if not changes:
        return None
    before: dict[str, set[str]] = {}
    after: dict[str, set[str]] = {}
    old_values: dict[str, list[Any]] = {}
    for change in changes:
        for key in sorted(set(change.old) | set(change.new)):
            if change.old.get(key) != change.new.get(key):
                before.setdefault(key, set()).add(_shown(key, change.old.get(key)))
                after.setdefault(key, set()).add(_shown(key, change.new.get(key)))
                values = old_values.setdefault(key, [])
                if change.old.get(key) not in values:
                    values.append(change.old.get(key))
    keys = sorted(before, key=lambda k: (k != "backend", k))  # the backend first
    diffs = [f"{k}: {'|'.join(sorted(before[k]))} -> {'|'.join(sorted(after[k]))}" for k in keys]
    if len(diffs) > shown:
        diffs = [*diffs[:shown], f"{len(keys) - shown} more"]
    keep = "the runtime settings they ran with"
    if all(len(old_values[k]) == 1 for k in keys):  # one old value each: name them
        named = ", ".join(_setting(k, old_values[k][0]) for k in keys[:shown])
        keep += f" ({named}{', ...' * (len(keys) > shown)})"
    ran = _ran_under(c.record for c in changes)
    if ran not in before.get("backend", {ran}):  # what "auto" or a list picked
        diffs.append(f"ran under {ran}")
    n = len(changes)
    return (
        f"{plural(n, 'completed run')} of this results folder will be re-executed and "
        f"re-judged: the runtime settings of {noun(n, 'its', 'their')} execution changed "
        f"({'; '.join(diffs)}), and a run's results are those of its backend and settings. To "
        f"keep them, run this folder with {keep}, or give the new backend its own results= "
        "folder (docs/hpc.md)"
    )


def on_end(settings: Any, workflow: Any, *, ok: bool) -> None:
    """After the last job: when jobs failed, remove what waited on them and tabulate what
    completed; release what on_start took."""
    from sabench.locks import release_results

    try:
        if not ok:
            removed = remove_stale_outputs(workflow)
            if removed:
                print(
                    f"sabench: removed {plural(len(removed), 'output')} of steps that were to be "
                    "redone after a step that did not complete; the same command redoes them",
                    file=sys.stderr,
                )
            tabulate_what_completed(settings, workflow)
    finally:
        release_results()  # last: the results folder's lock (sabench.locks; also at exit)


#: Rules whose outputs a failed run keeps: the tables and the report are rewritten from what
#: completed (tabulate_what_completed), and their ``.incomplete`` marker reruns them.
TABULATED_RULES = ("aggregate", "report", "all")


def stale_outputs(workflow: Any) -> list[Path]:
    """The outputs of jobs this run was to redo after a job that did not finish (failed, or never
    started because one failed): they derive from what that job was to replace, so they are
    stale. Snakemake removes a failed job's own outputs but not these, and the next run would
    trust them: a step whose output is there is never redone for a missing input upstream (a
    fault in ``reproduce`` left the old ``execution.json`` and ``judgments.parquet``, and the
    same command redid nothing). Decided on Snakemake's own DAG: the jobs it planned and did
    not finish."""
    dag = workflow.dag
    unfinished = set(dag.needrun_jobs())
    stale: list[Path] = []
    for job in unfinished:
        if job.rule.name in TABULATED_RULES:
            continue
        if any(dep in unfinished for dep in dag.dependencies[job]):
            stale += [Path(str(f)) for f in job.output]
    return sorted(set(stale))


def remove_stale_outputs(workflow: Any) -> list[Path]:
    """Remove :func:`stale_outputs` that exist; return them. So the files say what the run
    is: a step that did not complete leaves nothing after it, the tables count the run as
    incomplete, and the next run of the same command redoes exactly the steps it lacks."""
    import shutil

    removed = []
    for path in stale_outputs(workflow):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        elif path.exists() or path.is_symlink():
            path.unlink(missing_ok=True)
        else:
            continue
        removed.append(path)
    return removed


def _key(
    owner: str,
    model: str | None,
    settings: dict[str, Any] | None,
    field: str,
    config_key: str | None = None,
) -> list[str]:
    from sabench.llm.keys import missing_key

    line = missing_key(model, settings, owner, field, config_key)
    return [line] if line else []


def missing_api_keys(settings: Any) -> list[str]:
    """Every key the grid's agents, judges and SAU extraction lack: an ``api_key_env`` whose
    variable is unset or empty, or, without one (and without an ``api_base`` server), the provider's
    own variable litellm names (``OPENAI_API_KEY``); and every variable a ``command`` agent passes
    on that the host lacks: each one line naming who needs it. Checked before any job starts, so
    that a missing key is one line, not a grid of failed runs."""
    config = settings.config
    problems: list[str] = []
    for name, agent in settings.agents.items():
        model = agent.get("model") if agent.get("kind") in ("basic", "pipeline") else None
        routed = GatewaySettings.from_agent(agent).routed_models() if uses_gateway(agent) else []
        for each in routed or [model]:
            if each or agent.get("api_key_env"):
                problems += _key(
                    f"agent {name}" + (f" (gateway route {each})" if routed else ""),
                    each,
                    agent,
                    "api_key_env",
                    f"config/agents.yaml: {name}.api_key_env",
                )
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
            endpoint = config["judge_settings"].get(judge) or {}
            model = judge.split(":", 1)[1] if ":" in judge else endpoint.get("model")
            problems += _key(
                f"judge {judge}",
                endpoint.get("model") or model,
                endpoint,
                "api_key_env",
                f'judge_settings["{judge}"].api_key_env',
            )
    extraction = config.get("saus_extraction") or {}
    extractor = extraction.get("extractor")
    if extractor:
        merged = {**config["judge_settings"].get(extractor, {}), **extraction.get("settings", {})}
        model = extractor.split(":", 1)[1] if extractor.startswith("llm:") else extractor
        problems += _key(
            f"saus_extraction {extractor}",
            merged.get("model") or model,
            merged,
            "saus_extraction.settings.api_key_env",
        )
    return problems


def _jobs_to_run(workflow: Any) -> list[tuple[str, dict[str, str]]]:
    """(rule, wildcards) of every job this invocation runs."""
    return [(job.rule.name, dict(job.wildcards)) for job in workflow.dag.needrun_jobs()]


def model_servers(
    settings: Any, jobs: Iterable[tuple[str, Mapping[str, str]]]
) -> list[tuple[str, str]]:
    """(who, api_base) of every model server the jobs about to run will call: an agent's when
    its reproduce job runs, a judge's when it judges, the SAU extractor's when it extracts."""
    from sabench.grid import judge_slug

    config = settings.config
    drift_judges = list((config.get("drift") or {}).get("judges") or [])
    agents, judging, extracting = set(), set(), False
    for rule, wildcards in jobs:
        if rule == "reproduce":
            agents.add(wildcards.get("agent"))
        elif rule == "judge":
            judging.add(wildcards.get("judge"))
        elif rule == "drift":  # re-judges the mutants with the drift judges
            judging.update(judge_slug(j) for j in drift_judges)
        elif rule == "saus_extract":
            extracting = True
    servers = [
        (f"agent {name}", agent["api_base"])
        for name, agent in settings.agents.items()
        if name in agents and agent.get("api_base")
    ]
    for judge in dict.fromkeys([*settings.judges, *drift_judges]):
        base = (config["judge_settings"].get(judge) or {}).get("api_base")
        kind = judge_kind(judge)
        if base and kind is not None and kind.model and judge_slug(judge) in judging:
            servers.append((f"judge {judge}", base))
    extraction = config.get("saus_extraction") or {}
    extractor = extraction.get("extractor")
    if extracting and extractor:
        merged = {**config["judge_settings"].get(extractor, {}), **extraction.get("settings", {})}
        if merged.get("api_base"):
            servers.append((f"saus_extraction {extractor}", merged["api_base"]))
    return servers


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
            runs_now=settings.runs if settings.runs != settings.grid_runs else None,
        )
        if "report" in planned:
            from sabench.report import make_report, read_tables

            make_report(read_tables(results / "tables"), results / "report", results)
    except Exception as exc:  # the failed jobs come first; say why the tables are not there
        print(f"sabench: could not tabulate the completed runs: {exc}", file=sys.stderr)
        return
    print(failed_tables_line(results / "tables", summary) + "\n" + summary, file=sys.stderr)


def failed_tables_line(tables: Path, summary: str) -> str:
    """The line before summary.md when jobs failed: it points to summary.md's 'Not complete'
    section only when there is one (every run may be complete, when what failed came after the
    judgments: the report, drift injection)."""
    from sabench.aggregate import NOT_COMPLETE_HEADING

    if NOT_COMPLETE_HEADING in summary:
        where = "the runs that completed (see 'Not complete' in summary.md)"
    else:
        where = "every run of the grid; what failed is named above"
    return f"sabench: jobs failed; the tables in {tables} cover {where}:"
