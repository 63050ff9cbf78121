# Configuration, the grid and input functions. Parse time imports nothing heavy (see sabench.grid).
import hashlib
import inspect
import json
import re
import shlex
import sys
from functools import cache
from pathlib import Path

from sabench.errors import UserError
from sabench.judges.registry import files_stamp, judge_kind, verdict_file
from sabench.grid import (
    LLM_OPERATIONAL_SETTINGS,
    SCHEDULING_KEYS,
    SAU_FILES,
    JsonWord,
    batched_agent,
    configured_grid,
    execution_gpus,
    judge_fingerprint,
    judge_slug,
    load_settings,
    pack_runs,
)

try:
    SETTINGS = load_settings(
        config,
        Path(workflow.basedir),
        config_path="config (config/config.yaml + --config)",
    )
    # the tables cover the configured grid even when --config papers=/agents=/seeds= narrow it
    configured_grid(
        SETTINGS,
        config,
        workflow.configfiles,
        dict(workflow.config_settings.config),
        Path(workflow.basedir),
        config_path="config (config/config.yaml + --config)",
    )
except UserError as exc:
    sys.exit(f"error: {exc}")


_WILDCARDS_ONLY = inspect.Signature(
    [inspect.Parameter("wildcards", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
)


def of_wildcards(func):
    """An input function, or a callable param or resource, that takes the wildcards only, said
    once: Snakemake asks each such callable for its signature on every job (which arguments to
    pass), and a dry run of a large grid spent a tenth of its time in ``inspect``."""
    func.__signature__ = _WILDCARDS_ONLY
    return func


def shell_json(data):
    """JSON as one shell word inside a rule's command: quoted, braces doubled for Snakemake."""
    text = shlex.quote(json.dumps(data, sort_keys=True))
    return text.replace("{", "{{").replace("}", "}}")


R = SETTINGS.results
RUNTIME = dict(SETTINGS.config["runtime"])
# false: no execute jobs at all; judges get no execution record (re-judging replayed code).
EXECUTE = RUNTIME.pop("execute", True)
RUNTIME["python_env"] = str(Path(workflow.basedir) / RUNTIME["python_env"])
# The sandbox settings of model agents' tools: in the command line, not in params, so tuning the
# execution limits never reruns an agent.
TOOL_RUNTIME = shell_json(RUNTIME)
if RUNTIME.get("image_cache"):
    RUNTIME["image_cache"] = str(Path(workflow.basedir) / RUNTIME["image_cache"])
# One convention for every step, a shell command `{PYTHON} -m sabench.<module> ARGS > {log:q} 2>&1`
# in each rule (never a script or run block). The rule runs the same command a user types to debug
# one step (`python -m sabench.<module> --help`), it works the same under conda and Slurm, and the
# dry run does no per-job script lookup.
if "conda" in str(workflow.deployment_settings.deployment_method).lower():
    PYTHON = f"PYTHONPATH={shlex.quote(workflow.basedir)} python"
else:
    PYTHON = shlex.quote(sys.executable)
# The grid's LLM spending cap reaches every job in its environment (sabench.llm.budget); in the
# command, not in params, so that raising it reruns nothing.
if SETTINGS.config.get("llm_budget_usd"):
    _ledger = Path(R).resolve() / "logs" / "llm_spend.jsonl"
    PYTHON = (
        f"SABENCH_LLM_BUDGET_USD={float(SETTINGS.config['llm_budget_usd'])!r}"
        f" SABENCH_LLM_LEDGER={shlex.quote(str(_ledger))} {PYTHON}"
    )
# Each job watches the snakemake that runs it and ends with it (its environment names it).
from sabench.locks import mark_snakemake

mark_snakemake()
REPO = shlex.quote(workflow.basedir)
# The report's provenance: in its command, not in params, so that a new endpoint or concurrency
# reruns nothing, the report included (command text is no rerun trigger here).
CONFIG_HASH = hashlib.sha256(
    json.dumps(dict(config), sort_keys=True, default=str).encode()
).hexdigest()[:16]
SANDBOX_REQUIREMENTS = shlex.quote(str(Path(workflow.basedir) / "envs" / "sandbox.txt"))
PAPERS_DIR = Path(workflow.basedir) / SETTINGS.config["papers_dir"]
RUN = f"{R}/runs/{{agent}}/{{paper}}/{{seed}}"
JUDGE_BY_SLUG = {judge_slug(j): j for j in SETTINGS.judges}
TABLES = (
    "papers",
    "saus",
    "runs",
    "judgments",
    "scores_by_run",
    "scores_by_agent",
    "coverage",
    "tree_scores",
    "error_taxonomy",
    "judge_agreement",
    "judge_confusion",
    "incomplete_runs",
    "judge_directed_text",
    "judge_stability",
    "canary_runs",
    "fabrication_by_agent",
)
REPORT_FIGURES = ("scores_by_agent", "verdicts", "heatmap")
INCOMPLETE_MARKER = f"{R}/tables/.incomplete"  # sabench.aggregate.INCOMPLETE_MARKER


wildcard_constraints:
    paper=r"[A-Za-z0-9][A-Za-z0-9._-]*",
    agent=r"[A-Za-z0-9][A-Za-z0-9._-]*",
    seed=r"\d+",
    judge="|".join(JUDGE_BY_SLUG),


@cache
def _paper_inputs(paper):
    folder = PAPERS_DIR / paper
    files = [folder / n for n in ("paper.md", "paper.pdf") if (folder / n).is_file()]
    files = files[:1] or [folder / "paper.md"]
    files += [
        folder / n for n in ("addendum.md", "blacklist.txt") if (folder / n).is_file()
    ]
    return [str(f) for f in files]


@cache
def _sau_inputs(paper):
    if SETTINGS.config["saus_path"]:
        return [SETTINGS.config["saus_path"].format(paper=paper)]
    folder = PAPERS_DIR / paper
    return [str(folder / name) for name in SAU_FILES if (folder / name).is_file()]


@cache
def _check_inputs(paper):
    """Check files (``checks/`` beside the SAU file): editing one re-imports the SAUs."""
    folders = {Path(f).parent / "checks" for f in _sau_inputs(paper)}
    return sorted(
        str(p) for d in folders if d.is_dir() for p in d.iterdir() if p.is_file()
    )


# Input functions and per-agent values are looked up, not recomputed, for every job: the dry run
# of an SA-Bench-sized grid must stay near Snakemake's own floor.
AGENT_GPUS = {name: int(a.get("gpus", 0)) for name, a in SETTINGS.agents.items()}
AGENT_MEM_MB = {name: int(a.get("mem_mb", 4096)) for name, a in SETTINGS.agents.items()}
AGENT_RUNTIME_MIN = {
    name: int(a.get("time_limit_s", 3600) // 60) + 10
    for name, a in SETTINGS.agents.items()
}
# Slurm turns gpu + gpu_model into --gpus=<model>:<n>; a model without GPUs would ask for
# --gpus=<model>:0, so it is named only for agents that have GPUs.
AGENT_GPU_MODEL = {
    name: str(a.get("gpu_model") or "") if AGENT_GPUS[name] else ""
    for name, a in SETTINGS.agents.items()
}
AGENT_CPUS = {name: int(a.get("cpus", 1)) for name, a in SETTINGS.agents.items()}
# What each agent's execute job runs with: its own GPUs, else runtime.gpus (sabench.grid).
_EXECUTION_GPUS = {
    name: execution_gpus(a, RUNTIME) for name, a in SETTINGS.agents.items()
}
EXECUTE_GPUS = {name: count for name, (_, count) in _EXECUTION_GPUS.items()}
EXECUTE_GPU_MODEL = {
    name: str(SETTINGS.agents[name].get("gpu_model") or "") if count else ""
    for name, count in EXECUTE_GPUS.items()
}
EXECUTE_SETTINGS = {
    name: json.dumps({**RUNTIME, "gpus": request}, sort_keys=True)
    for name, (request, _) in _EXECUTION_GPUS.items()
}
# The agent's settings travel with the job (agents may be generated from benchmark data); as a
# param they rerun the agent when they change, except the keys that only steer the scheduler.
AGENT_SPECS = {
    name: json.dumps(
        {k: v for k, v in agent.items() if k not in SCHEDULING_KEYS}, sort_keys=True
    )
    for name, agent in SETTINGS.agents.items()
}
# Each judge's settings: what it judges by is a param (a change reruns it); how it reaches its
# model (api_base, concurrency, ...) is written into the command only, which is no rerun trigger.
JUDGE_PARAMS = {}
_judge_operational = {}
for _slug, _judge in JUDGE_BY_SLUG.items():
    _settings = SETTINGS.config["judge_settings"].get(_judge, {})
    _judged_by = {
        k: v for k, v in _settings.items() if k not in LLM_OPERATIONAL_SETTINGS
    }
    _judge_operational[_judge] = {
        k: v for k, v in _settings.items() if k in LLM_OPERATIONAL_SETTINGS
    }
    JUDGE_PARAMS[_slug] = JsonWord(
        name=_judge,
        settings_json=json.dumps(_judged_by, sort_keys=True),
        fingerprint=judge_fingerprint(_judge, _settings),
        # sandbox settings for judges that run code: a change reruns exec, never static or llm
        runtime_json=json.dumps(
            RUNTIME if judge_kind(_judge).runs_code else {}, sort_keys=True
        ),
    )
JUDGE_OPERATIONAL_ARG = shell_json(_judge_operational)
# The runs a command line narrowed the grid to, for the aggregate's .incomplete marker: in the
# command, not a param, so that narrowing the grid or not is no reason to make the tables again.
RUNS_NOW_ARG = (
    f" --runs-now {shell_json({'runs': pack_runs(SETTINGS.runs)})}"
    if SETTINGS.runs != SETTINGS.grid_runs
    else ""
)

# Batched steps (docs/architecture.md): cheap steps of one paper's runs share a job. Every paper
# has the same runs (agent, seed) of the agents that run every paper; an agent scoped to some
# (its `papers`) takes a job per run for every step, its merge included. A batch waits for all
# its runs, so it holds only runs that no fault can hold up: those of replay and null agents when
# nothing is executed. Their judges that call no model and run no code judge per paper; those
# agents without GPUs also replay per paper when no judge follows per run (a batch rewrites each
# of its runs, and what reads a rewritten run reruns).
# Scoped by the configured grid, not by a command line that narrows it (--config papers=P): an
# agent's runs are made by the same rule either way, or each switch would redo them (params).
_AGENT_PAPERS = {
    a: {p for b, p, _ in SETTINGS.grid_runs if b == a} for a in SETTINGS.agents
}
SCOPED_AGENTS = [
    a for a, ps in _AGENT_PAPERS.items() if ps != set(SETTINGS.grid_papers)
]
PAPER_RUNS = list(
    dict.fromkeys((a, s) for a, _, s in SETTINGS.runs if a not in SCOPED_AGENTS)
)
BATCHED_JUDGES = [s for s, j in JUDGE_BY_SLUG.items() if judge_kind(j).batched]
ALONE_JUDGES = [s for s in JUDGE_BY_SLUG if s not in BATCHED_JUDGES]
BATCHED_AGENTS = [
    a
    for a in SETTINGS.agents
    if not EXECUTE and batched_agent(SETTINGS.agents[a]) and a not in SCOPED_AGENTS
]
JUDGED_IN_BATCHES = bool(BATCHED_AGENTS and BATCHED_JUDGES)
REPLAYED_IN_BATCHES = [
    a for a in BATCHED_AGENTS if not ALONE_JUDGES and not AGENT_GPUS[a]
]
# every judgment of every run made by judge_batch: it writes judgments.parquet itself
MERGED_IN_BATCHES = not ALONE_JUDGES and set(BATCHED_AGENTS) == set(SETTINGS.agents)
BATCH_JUDGE_PARAMS = json.dumps(
    [
        {
            "name": JUDGE_PARAMS[slug]["name"],
            "fingerprint": JUDGE_PARAMS[slug]["fingerprint"],
            "settings_json": JUDGE_PARAMS[slug]["settings_json"],
        }
        for slug in BATCHED_JUDGES
    ],
    sort_keys=True,
)
REPLAYED_SPECS = json.dumps(
    {a: json.loads(AGENT_SPECS[a]) for a in REPLAYED_IN_BATCHES}, sort_keys=True
)


# On a cluster, CPU-only jobs share cluster jobs (docs/hpc.md): those of up to
# `group-components: runs=N` runs, and the batched judges of up to `papers=N` papers
# (profiles/slurm); a job with GPUs goes alone. Groups are set only where a profile counts jobs
# in nodes (`jobs:`, as a cluster profile must, its dry run too): a local run ignores them, and
# laying them out would slow its dry run.
RUN_GROUP = "runs"
PAPER_GROUP = "papers"
GROUPED = bool(workflow.resource_settings.nodes)


# A GPU model is declared only where some agent names one: an empty one would be a `gpu_model=`
# in every Slurm job (the jobs of a group, CPU-only ones included, must agree on it).
GPU_MODEL_NAMED = any(AGENT_GPU_MODEL.values()) or any(EXECUTE_GPU_MODEL.values())


def cluster_resources(**resources):
    """Resources only a cluster's scheduler reads (GPU model, CPUs per task, time limit, a run's
    scratch disk):
    declared where a profile counts jobs in nodes, as groups are; locally they would only be
    evaluated for every job of a dry run. ``gpu_model`` only where some agent names one.
    """
    if not GROUPED:
        return {}
    if not GPU_MODEL_NAMED:
        resources.pop("gpu_model", None)
    return resources


def gpu_resource(gpus):
    """The ``gpu`` resource of a run's job from ``gpus`` (by agent), declared only where some
    agent asks for GPUs: asking for none is asking for nothing, and a dry run would evaluate it
    for every job."""
    return {"gpu": by_wildcard("agent", gpus)} if any(gpus.values()) else {}


def cluster_group(name):
    return name if GROUPED else None


def run_group(gpus):
    """The group of a run's job that asks for ``gpus`` (by agent): none when it asks for some."""
    groups = {
        agent: None if n else cluster_group(RUN_GROUP) for agent, n in gpus.items()
    }
    return by_wildcard("agent", groups)


def paper_runs(name, agents=None):
    """The file ``name`` of each run of one paper, as patterns of ``{paper}``."""
    return [
        f"{R}/runs/{a}/{{paper}}/{s}/{name}"
        for a, s in PAPER_RUNS
        if agents is None or a in agents
    ]


@cache
def _batch_verdicts(paper):
    return files_stamp(
        path
        for slug in BATCHED_JUDGES
        for a, s in PAPER_RUNS
        if a in BATCHED_AGENTS
        for path in verdict_inputs(
            JUDGE_BY_SLUG[slug], {"agent": a, "paper": paper, "seed": s}
        )
    )


@of_wildcards
def batch_verdicts(wildcards):
    """The verdict files the batched judges read for one paper's batched runs, as a stamp of
    their names, sizes and times: a param, not inputs, so that a new version still reruns the
    batch but Snakemake's scheduler does not size them again and again while the batch waits.
    """
    return _batch_verdicts(wildcards.paper)


@of_wildcards
def paper_inputs(wildcards):
    """The paper text and what the agent reads beside it."""
    return _paper_inputs(wildcards.paper)


@of_wildcards
def sau_inputs(wildcards):
    return _sau_inputs(wildcards.paper)


@of_wildcards
def check_inputs(wildcards):
    return _check_inputs(wildcards.paper)


def verdict_inputs(judge, run):
    """The verdict file ``judge`` reads for ``run`` (agent, paper, seed), if it reads one."""
    if not judge_kind(judge).verdicts:
        return []
    path = verdict_file(judge, SETTINGS.config["judge_settings"][judge], run)
    return [str(path)] if path.is_file() else []


# judges that read a verdict file per run (reference): the judge rule looks one up only for them
VERDICT_JUDGES = [s for s, j in JUDGE_BY_SLUG.items() if judge_kind(j).verdicts]


@of_wildcards
def judge_verdicts(wildcards):
    """The verdict file of one run's judge: a new version rejudges the run."""
    run = {k: wildcards[k] for k in ("agent", "paper", "seed")}
    return verdict_inputs(JUDGE_BY_SLUG[wildcards.judge], run)


def by_wildcard(name, values):
    """A constant when every key has the same value, else a lookup by the wildcard ``name``.

    A string holding a brace stays a lookup: Snakemake fills wildcards into a constant string
    param (a replay agent's ``path: .../{paper}``), never into what a callable returns, and the
    recorded params must not depend on whether a command line narrowed the grid to one agent.
    """
    distinct = {repr(v) for v in values.values()}
    constant = next(iter(values.values()), None)
    if len(distinct) == 1 and not (isinstance(constant, str) and "{" in constant):
        return constant
    return of_wildcards(lambda wildcards: values[wildcards[name]])


def all_runs(pattern):
    return [
        pattern.format(agent=agent, paper=paper, seed=seed)
        for agent, paper, seed in SETTINGS.runs
    ]


def result(path):
    """A path under the results root."""
    return f"{R}/{path}"


def paper_file(name):
    return f"{R}/papers/{{paper}}/{name}"


def run_file(name):
    return f"{RUN}/{name}"


# Drift injection (drift_injection): one table, also shown in the report.
DRIFT = SETTINGS.config["drift"]
DRIFT_TABLES = [result("tables/drift_injection.parquet")] if SETTINGS.drift_runs else []
DRIFT_CODE = (
    hashlib.sha256(
        b"".join(
            p.read_bytes()
            for p in sorted((Path(workflow.basedir) / "sabench" / "drift").glob("*.py"))
        )
    ).hexdigest()[:16]
    if SETTINGS.drift_runs
    else ""
)


def all_targets():
    return (
        [result(f"tables/{t}.parquet") for t in TABLES]
        + DRIFT_TABLES
        + [result("report/index.html"), result("report/site")]
    )


onstart:
    from sabench.lifecycle import on_start

    on_start(SETTINGS, workflow)


onsuccess:
    from sabench.lifecycle import on_end

    on_end(SETTINGS, workflow, ok=True)


onerror:
    from sabench.lifecycle import on_end

    on_end(SETTINGS, workflow, ok=False)
