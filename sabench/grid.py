"""Configuration and the static grid papers x agents x seeds, read at Snakefile parse time.

Imports only the standard library, PyYAML and jsonschema so a dry run stays near Snakemake's floor.
Every user mistake becomes a one-line :class:`UserError` naming the file and the field.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from copy import deepcopy
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from sabench.errors import UserError, parse_error
from sabench.gateway.settings import check_gateway
from sabench.judges.registry import available_judges, judge_available, judge_kind, source_hash
from sabench.twins import SAU_FILES, original_of, with_twins

PAPER_FILES = ("paper.md", "paper.pdf")
IMPLEMENTED_AGENT_KINDS = ("replay", "null", "basic", "pipeline", "command")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
SCHEMA_DIR = Path(__file__).resolve().parents[1] / "config" / "schema"
PACKAGE_DIR = Path(__file__).resolve().parent

#: LLM SAU extraction (``saus_extraction``): the same, with the extraction prompts.
EXTRACT_SOURCES = (
    "extract.py",
    "saus.py",
    "llm/*.py",
    "templates/extract_*.j2",
    "templates/repair.j2",
)
#: LLM settings that change how calls are made, not what is asked: not part of fingerprints (the
#: response cache does not key on them either), so moving to another endpoint reruns nothing.
LLM_OPERATIONAL_SETTINGS = (
    "api_base",
    "api_key_env",
    "concurrency",
    "timeout_s",
    "max_retries",
    "backoff_s",
    "backoff_max_s",
    "cache",
    "cache_dir",
)


@dataclass
class Settings:
    """The validated configuration plus the agents and the grid it implies."""

    config: dict[str, Any]
    agents: dict[str, dict[str, Any]]
    papers: list[str]
    judges: list[str]
    runs: list[tuple[str, str, str]] = field(default_factory=list)
    #: runs whose submissions the drift rule mutates (empty unless drift_injection)
    drift_runs: list[tuple[str, str, str]] = field(default_factory=list)
    #: the grid the tables cover (:func:`configured_grid`): ``runs`` and ``papers`` unless the
    #: command line narrowed them
    grid_runs: list[tuple[str, str, str]] = field(default_factory=list)
    grid_papers: list[str] = field(default_factory=list)

    @property
    def results(self) -> str:
        return self.config["results"]


def _load_yaml(path: Path, what: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(path, None, f"{what} not found") from None
    except UnicodeDecodeError:
        raise UserError(path, None, "not UTF-8 text") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise parse_error(path, exc) from None


def check_yaml_syntax(path: str | Path) -> None:
    """A UserError with the line and column when ``path`` is there and is not YAML: the Snakefile
    checks its config file first, since Snakemake's own message names neither."""
    if Path(path).is_file():
        _load_yaml(Path(path), "config file")


@cache
def _schema(name: str) -> dict[str, Any]:
    """Our own schema, read with libyaml: every parse of the workflow (each job's too) reads it,
    and the pure-Python reader took 30 ms."""
    return yaml.load(
        (SCHEMA_DIR / name).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    )


def _field(error: Any) -> str:
    out = ""
    for part in error.absolute_path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def validate(data: Any, schema_name: str | dict[str, Any], path: str | Path | None) -> None:
    """Validate against a described JSON schema; the first error becomes a one-line UserError."""
    import jsonschema

    schema = _schema(schema_name) if isinstance(schema_name, str) else schema_name
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(data), key=lambda e: (len(e.absolute_path), e.message))
    if errors:
        err = errors[0]
        # of a oneOf's alternatives, the most specific error ("backend[1]: 'vm' is not one of
        # [...]", not "is not valid under any of the given schemas")
        while err.context:
            err = min(
                err.context,
                key=lambda e: (-len(e.absolute_path), e.validator in ("type", "enum")),
            )
        unknown = unknown_key(err)
        if unknown:
            field_name, message, key = unknown
            raise UserError(path, field_name, message, where=[*err.absolute_path, key])
        raise UserError(path, _field(err), err.message, where=list(err.absolute_path))


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """`` did you mean 'x'?`` for the known word closest to a misspelled one, else ''."""
    import difflib

    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def unknown_key(error: Any) -> tuple[str, str, str] | None:
    """(field, message, key) of a key that a schema's object does not allow, with the key it most
    likely misspells (``judge_settings.exec.time_limt_s: unknown key; did you mean
    'time_limit_s'?``); None for other errors."""
    if error.validator != "additionalProperties" or not isinstance(error.instance, dict):
        return None
    known = list(error.schema.get("properties", {}))
    patterns = list(error.schema.get("patternProperties", {}))
    extra = [
        str(k)
        for k in error.instance
        if k not in known and not any(re.search(pat, str(k)) for pat in patterns)
    ]
    if not extra:
        return None
    path = _field(error)
    field_name = extra[0] if path == "(top level)" else f"{path}.{extra[0]}"
    hint = did_you_mean(extra[0], known)
    if not hint:
        hint = f" (known: {', '.join(known)})" if known else " (it takes none)"
        if patterns:
            hint = hint[:-1] + ", or a name matching " + ", ".join(patterns) + ")"
    return field_name, f"unknown key{hint}", extra[0]


def yaml_line(text: str, where: Sequence[str | int]) -> int | None:
    """The line (1-based) of the YAML ``text`` where the keys and indexes ``where`` lead: the
    line of the last key found (its mapping's, when a key is absent)."""
    try:
        node = yaml.compose(text)
    except yaml.YAMLError:
        return None
    line = None
    for part in where:
        if isinstance(node, yaml.MappingNode):
            found = next(((k, v) for k, v in node.value if k.value == str(part)), None)
            if found is None:
                break
            line, node = found[0].start_mark.line + 1, found[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                break
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


@cache
def _runtime_schema() -> dict[str, Any]:
    full = _schema("config.schema.yaml")
    runtime = full["properties"]["runtime"]
    return {"$defs": full.get("$defs", {}), "type": "object", "properties": {"runtime": runtime}}


def runtime_defaults() -> dict[str, Any]:
    """The sandbox settings' defaults (``runtime:``): the config schema is their one home."""
    properties = _runtime_schema()["properties"]["runtime"]["properties"]
    return {key: deepcopy(spec.get("default")) for key, spec in properties.items()}


def validate_runtime(runtime: dict[str, Any], path: str | Path | None = None) -> None:
    """The schema's rules for ``runtime:``, for the steps that take sandbox settings directly
    (standalone commands, the agents' tools); errors name ``runtime.<key>``."""
    validate({"runtime": runtime}, _runtime_schema(), path)


_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null"}


def _json_type_ok(value: Any, types: list[str]) -> bool:
    kind = _JSON_TYPES.get(type(value))
    return kind in types or (kind == "integer" and "number" in types)


def coerce_to_schema(value: Any, schema: dict[str, Any], root: dict[str, Any] | None = None) -> Any:
    """``value`` converted to the types ``schema`` asks for, where it is not already one of them.

    Snakemake's ``--config`` types a top-level value only as int, float or ``True``/``False`` and
    leaves everything nested a string (``seeds=[0, 1]`` -> ``['0', '1']``,
    ``runtime='{time_limit_s: 60}'`` -> ``{'time_limit_s': '60'}``). Here a string becomes its YAML
    scalar (``60``, ``true``, ``null``) when the schema accepts that type, as it would have in a
    config file; a number becomes a string where
    only strings are allowed, and an array also takes ``a,b`` or a single value. Values of the config
    files are already typed and pass unchanged; what still does not fit is left for validation to
    report.
    """
    root = schema if root is None else root
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    alternatives = schema.get("oneOf") or schema.get("anyOf")
    if alternatives:
        import jsonschema

        validator = jsonschema.Draft202012Validator(root)
        rest = {k: v for k, v in schema.items() if k not in ("oneOf", "anyOf")}
        for alternative in alternatives:
            candidate = coerce_to_schema(value, {**rest, **alternative}, root)
            if validator.evolve(schema={**rest, **alternative}).is_valid(candidate):
                return candidate
        return value
    types = schema.get("type")
    types = [types] if isinstance(types, str) else list(types or [])
    if isinstance(value, dict):
        if types and "object" not in types:
            return value
        out = {}
        for key, item in value.items():
            sub = schema.get("properties", {}).get(key)
            if sub is None:
                patterns = schema.get("patternProperties", {})
                sub = next((s for p, s in patterns.items() if re.search(p, str(key))), None)
            if sub is None and isinstance(schema.get("additionalProperties"), dict):
                sub = schema["additionalProperties"]
            out[key] = coerce_to_schema(item, sub, root) if sub else item
        return out
    items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
    if isinstance(value, list):
        return [coerce_to_schema(v, items, root) for v in value] if items else value
    if "array" in types and not _json_type_ok(value, types):
        parts = [p.strip() for p in value.split(",")] if isinstance(value, str) else [value]
        return [coerce_to_schema(p, items, root) for p in parts if p != ""]
    if isinstance(value, str) and types != ["string"]:
        try:
            typed = yaml.safe_load(value)
        except yaml.YAMLError:
            return value
        if not isinstance(typed, (str, list, dict)) and (
            _json_type_ok(typed, types) if types else "enum" in schema and typed in schema["enum"]
        ):
            return typed
    elif types and not _json_type_ok(value, types) and "string" in types:
        return str(value)
    return value


def fill_defaults(data: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Fill schema defaults, recursing into nested objects."""
    out = deepcopy(data)
    for key, sub in schema.get("properties", {}).items():
        if key not in out and "default" in sub:
            out[key] = deepcopy(sub["default"])
        if isinstance(out.get(key), dict) and sub.get("type") == "object":
            out[key] = fill_defaults(out[key], sub)
    return out


def _as_list(value: Any) -> list[str] | None:
    """'all' -> None; 'a,b' or ['a', 'b'] -> ['a', 'b']."""
    if isinstance(value, str):
        if value.strip() == "all":
            return None
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v) for v in value]


def check_id(value: str, path: str | Path, field_name: str) -> None:
    if not _ID.match(value) or ".." in value:
        raise UserError(
            path,
            field_name,
            f"{value!r} is not a valid id (letters, digits, '.', '-', '_'; no path separators or '..')",
        )


def discover_papers(papers_dir: Path) -> list[str]:
    if not papers_dir.is_dir():
        raise UserError(papers_dir, "papers_dir", "folder not found")
    return sorted(
        p.name
        for p in papers_dir.iterdir()
        if p.is_dir() and not p.name.startswith(".") and any((p / f).is_file() for f in PAPER_FILES)
    )


def check_paper_folder(
    paper_dir: Path, saus_path: str | None = None, extract: str | None = None
) -> None:
    """A paper file and an SAU file; without one, ``extract`` (an LLM, saus_extraction.extractor)
    makes the SAUs."""
    if not paper_dir.is_dir():
        raise UserError(paper_dir, "papers", "paper folder not found")
    if not any((paper_dir / f).is_file() for f in PAPER_FILES):
        raise UserError(paper_dir, None, "no paper.md or paper.pdf in this paper folder")
    if saus_path:
        sau_file = Path(saus_path.format(paper=paper_dir.name))
        if not sau_file.is_file():
            raise UserError(sau_file, "saus_path", f"no SAU file for paper {paper_dir.name!r}")
    elif not extract and not any((paper_dir / f).is_file() for f in SAU_FILES):
        raise UserError(
            paper_dir,
            None,
            f"no SAU file (one of {', '.join(SAU_FILES)}; or set saus_extraction.extractor)",
        )


def replay_template(agent: dict[str, Any]) -> str:
    """Where a replay agent reads from: its folder ``path``, or ``archive`` + ``member``."""
    if "archive" in agent:
        return f"{agent['archive']}/{agent.get('member', '')}"
    return str(agent.get("path", ""))


#: Keys of a command agent's sandbox that no other kind has.
COMMAND_ONLY_KEYS = ("mounts", "requirements", "set_env", "transcript")


def check_agents(agents: dict[str, dict[str, Any]], path: str | Path) -> None:
    """Kinds this version runs, and a replay source that names the paper."""
    for name, agent in agents.items():
        if agent["kind"] not in IMPLEMENTED_AGENT_KINDS:
            raise UserError(
                path,
                f"{name}.kind",
                f"kind {agent['kind']!r} is not available in this version "
                f"(available: {', '.join(IMPLEMENTED_AGENT_KINDS)})",
                where=(name, "kind"),
            )
        if agent["kind"] == "command" and not agent.get("command"):
            raise UserError(
                path,
                f"{name}.command",
                "a command agent needs its command line",
                where=(name, "command"),
            )
        if agent["kind"] in ("basic", "pipeline") and not agent.get("model"):
            raise UserError(
                path, f"{name}.model", f"a {agent['kind']} agent needs a model", where=(name,)
            )
        check_gateway(name, agent, path)
        for key in COMMAND_ONLY_KEYS:
            if agent.get(key) and agent["kind"] != "command":
                raise UserError(
                    path, f"{name}.{key}", f"only a command agent takes {key}", where=(name, key)
                )
        if agent["kind"] != "replay":
            continue
        if "archive" in agent and "path" in agent:
            raise UserError(
                path,
                f"{name}.archive",
                "give either path or archive, not both",
                where=(name, "archive"),
            )
        if "{paper}" not in replay_template(agent):
            key = "archive" if "archive" in agent else "path"
            raise UserError(
                path,
                f"{name}.{key}",
                "a replay agent needs a path template with {paper}",
                where=(name, key),
            )


def check_mount_sources(agents: dict[str, dict[str, Any]], path: str | Path, repo: Path) -> None:
    """Every folder a command agent mounts is there (relative to ``repo``, as the agent's job
    reads it): a missing one would be every run of the agent failing to start."""
    for name, agent in agents.items():
        for i, mount in enumerate(agent.get("mounts", [])):
            source = Path(mount["source"]).expanduser()
            if not (source if source.is_absolute() else repo / source).exists():
                raise UserError(
                    path,
                    f"{name}.mounts[{i}].source",
                    f"{mount['source']} does not exist (a host folder or file; relative to {repo})",
                )


def load_agents(path: Path) -> dict[str, dict[str, Any]]:
    """The agents file, validated, its presets expanded into the command agents they name."""
    from sabench.agents.presets import expand_preset

    data = _load_yaml(path, "agents file")
    if isinstance(data, dict) and None in data:
        raise UserError(path, "null", 'an agent named null must be quoted: "null":')
    try:
        validate(data, "agents.schema.yaml", path)
        data = {name: expand_preset(name, agent, path) for name, agent in data.items()}
        check_agents(data, path)
    except UserError as exc:
        line = yaml_line(path.read_text(encoding="utf-8"), exc.where) if exc.where else None
        if line is None:
            raise
        raise UserError(path, f"line {line}: {exc.field}", exc.message) from None
    return data


def execution_gpus(agent: dict[str, Any], runtime: dict[str, Any]) -> tuple[Any, int]:
    """(what the sandbox of the agent's execution gets, how many GPUs its job asks the scheduler).

    An agent with ``gpus`` runs its reproduce.sh on as many as it wrote the code with; other agents
    get ``runtime.gpus`` (a count, a list of ids, or ``"all"``: whatever the host or the job has,
    so the scheduler is asked for none).
    """
    if agent.get("gpus"):
        return int(agent["gpus"]), int(agent["gpus"])
    request = runtime.get("gpus", 0)
    if isinstance(request, list):
        return request, len(request)
    if isinstance(request, int) or (isinstance(request, str) and request.strip().isdigit()):
        return request, int(request)
    if isinstance(request, str) and request.strip().lower() != "all":
        return request, len([p for p in request.split(",") if p.strip()])
    return request, 0


#: Agent kinds that call no model and cannot fault: their runs of one paper can share jobs
#: (sabench.agents.batch, sabench.judges.batch; docs/architecture.md, batched steps).
BATCHED_AGENT_KINDS = ("replay", "null")


def batched_agent(agent: dict[str, Any]) -> bool:
    """A replay or null agent: nothing it does depends on a provider, an engine or a key."""
    return agent["kind"] in BATCHED_AGENT_KINDS


def agent_seeds(agent: dict[str, Any], default: list[int]) -> list[str]:
    if agent["kind"] == "null" or (
        agent["kind"] == "replay" and "{seed}" not in replay_template(agent)
    ):
        return ["0"]
    return [str(s) for s in agent.get("seeds", default)]


def agent_papers(agent: dict[str, Any], papers: list[str]) -> list[str]:
    """The papers of ``papers`` the agent runs: those its ``papers`` list names or matches (glob
    patterns, ``ridge-*``), in grid order; every paper when it has no list. A canary twin goes
    with its original (or is named itself)."""
    patterns = agent.get("papers")
    if patterns is None:
        return papers
    return [
        p
        for p in papers
        if any(
            fnmatch.fnmatchcase(name, str(pat)) for pat in patterns for name in {p, original_of(p)}
        )
    ]


def load_settings(config: dict[str, Any], workdir: Path, config_path: str = "config") -> Settings:
    """Validate ``config`` (as Snakemake merged it, ``--config`` values typed by the schema) and
    build the grid."""
    config = coerce_to_schema(config, _schema("config.schema.yaml"))
    validate(config, "config.schema.yaml", config_path)
    config = fill_defaults(config, _schema("config.schema.yaml"))
    all_agents = _benchmark_data(config, workdir, config_path)
    agents_path = workdir / config["agents_file"] if config["agents_file"] else None
    if agents_path is not None:
        for name, agent in load_agents(agents_path).items():
            if name in all_agents:
                raise UserError(
                    agents_path, name, f"agent {name!r} is also generated from the benchmark data"
                )
            all_agents[name] = agent
    wanted_agents = _as_list(config["agents"])
    if wanted_agents is None:
        wanted_agents = list(all_agents)
    for name in wanted_agents:
        if name not in all_agents:
            where = agents_path or "the benchmark data"
            raise UserError(config_path, "agents", f"agent {name!r} is not defined in {where}")
    papers_dir = workdir / config["papers_dir"]
    wanted_papers = _as_list(config["papers"])
    if wanted_papers is None:
        wanted_papers = discover_papers(papers_dir)
        if not wanted_papers:
            raise UserError(
                papers_dir, "papers_dir", "no paper folders (with paper.md or paper.pdf)"
            )
    for paper in wanted_papers:
        check_id(paper, config_path, "papers")
        check_paper_folder(
            papers_dir / paper, config["saus_path"], config["saus_extraction"]["extractor"]
        )
    judges = list(dict.fromkeys(config["judges"]))
    for i, judge in enumerate(config["judges"]):
        if not judge_available(judge):
            raise UserError(
                config_path,
                f"judges[{i}]",
                f"judge {judge!r} is not available in this version "
                f"(available: {available_judges()})",
            )
        kind = judge_kind(judge)
        if kind.verdicts and not config["judge_settings"].get(judge, {}).get("path"):
            raise UserError(
                config_path,
                f"judge_settings.{judge}.path",
                f"judge {judge} needs the verdict files: a path template with {{paper}} "
                "(or set sabench_data / paperbench_data)",
            )
    agents = {name: all_agents[name] for name in wanted_agents}
    check_mount_sources(agents, agents_path or config_path, workdir)
    wanted_papers = with_twins(config, wanted_papers, workdir, config_path)
    runs = [
        (agent, paper, seed)
        for agent in agents
        for paper in agent_papers(agents[agent], wanted_papers)
        for seed in agent_seeds(agents[agent], config["seeds"])
    ]
    return Settings(
        config=config,
        agents=agents,
        papers=wanted_papers,
        judges=judges,
        runs=runs,
        drift_runs=_drift_runs(config, agents, runs, config_path),
        grid_runs=list(runs),
        grid_papers=list(wanted_papers),
    )


#: Config keys that choose the grid's runs: given on the command line, they narrow what runs now,
#: not what the tables cover.
GRID_KEYS = ("papers", "agents", "seeds")


def configured_grid(
    settings: Settings,
    merged: dict[str, Any],
    config_files: list[str | Path],
    command_line: dict[str, Any],
    workdir: Path,
    config_path: str = "config",
) -> None:
    """Set ``settings.grid_runs`` / ``grid_papers``: the grid of the config files (with every other
    command-line setting), plus what the command line asked for.

    A ``--config papers=P`` run is a subset: it runs P's jobs, and the tables it writes still cover
    every completed run of the configured grid (``sabench.aggregate``), so a one-paper rerun updates
    the grid's tables instead of replacing them by one paper's."""
    narrowed = [key for key in GRID_KEYS if key in command_line]
    if not narrowed:
        return
    from_files: dict[str, Any] = {}
    for path in config_files:
        data = _load_yaml(Path(path), "config file")
        if isinstance(data, dict):
            from_files.update({k: data[k] for k in GRID_KEYS if k in data})
    full = {k: v for k, v in merged.items() if k not in narrowed}
    full.update({k: from_files[k] for k in narrowed if k in from_files})
    whole = load_settings(full, workdir, config_path)
    runs = set(whole.runs)
    settings.grid_runs = whole.runs + [r for r in settings.runs if r not in runs]
    settings.grid_papers = list(dict.fromkeys([*whole.papers, *settings.papers]))


class JsonWord(dict[str, Any]):
    """A dict param that a rule's command shows as its JSON (``{params.x:q}``: one field where
    there would be one per key, and a large grid's dry run formats every command three times).
    Its repr, which Snakemake records to see whether params changed, stays the dict's, so runs
    made when the command named each key are not redone. Made once, never changed."""

    def __init__(self, **items: Any) -> None:
        super().__init__(**items)
        self.json = json.dumps(self, sort_keys=True)

    def __str__(self) -> str:
        return self.json


def pack_runs(runs: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    """``runs`` as blocks ``{"papers": [...], "seeds": {agent: [seed, ...]}}``, each standing for
    agent x paper x that agent's seeds in that order: a grid fits one command-line argument (at
    most 128 KiB) even at 100k runs. Exact for any list (:func:`unpack_runs` gives it back); a grid
    is one block, a narrowed one (:func:`configured_grid`) one more for the runs it adds."""
    cells: list[tuple[str, str, list[str]]] = []  # consecutive seeds of one agent and paper
    for agent, paper, seed in runs:
        if cells and cells[-1][:2] == (agent, paper):
            cells[-1][2].append(seed)
        else:
            cells.append((agent, paper, [seed]))
    rows: list[tuple[str, list[str], list[str]]] = []  # consecutive papers with the same seeds
    for agent, paper, seeds in cells:
        if rows and rows[-1][0] == agent and rows[-1][2] == seeds:
            rows[-1][1].append(paper)
        else:
            rows.append((agent, [paper], seeds))
    blocks: list[dict[str, Any]] = []  # consecutive agents over the same papers
    for agent, papers, seeds in rows:
        if blocks and blocks[-1]["papers"] == papers and agent not in blocks[-1]["seeds"]:
            blocks[-1]["seeds"][agent] = seeds
        else:
            blocks.append({"papers": papers, "seeds": {agent: seeds}})
    return blocks


def unpack_runs(blocks: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """The runs of :func:`pack_runs`' blocks, in their order."""
    return [
        (agent, paper, seed)
        for block in blocks
        for agent, seeds in block["seeds"].items()
        for paper in block["papers"]
        for seed in seeds
    ]


def _drift_runs(
    config: dict[str, Any],
    agents: dict[str, dict[str, Any]],
    runs: list[tuple[str, str, str]],
    config_path: str | Path,
) -> list[tuple[str, str, str]]:
    """The runs the drift rule mutates (``drift_injection``), its judges checked."""
    drift = config["drift"]
    if not config["drift_injection"]:
        return []
    for i, judge in enumerate(drift["judges"]):
        kind = judge_kind(judge)
        if kind is None or not kind.reads_code:
            raise UserError(
                config_path,
                f"drift.judges[{i}]",
                f"judge {judge!r} cannot re-judge mutants (it must read the code)",
            )
    wanted = _as_list(drift["agents"])
    for name in wanted or []:
        if name not in agents:
            raise UserError(config_path, "drift.agents", f"agent {name!r} is not in the grid")
    return [r for r in runs if wanted is None or r[0] in wanted]


def _benchmark_data(
    config: dict[str, Any], workdir: Path, config_path: str | Path
) -> dict[str, dict[str, Any]]:
    """Apply ``sabench_data`` / ``paperbench_data``: papers, SAU files, replay agents and judge
    ``reference`` come from the benchmark's folder (listed, never unpacked). Returns the agents."""
    from sabench.peer_data.layouts import layout_from_config

    layout = layout_from_config(config, workdir, config_path)
    if layout is None:
        if config["saus_path"] and "{paper}" not in config["saus_path"]:
            raise UserError(config_path, "saus_path", "needs a {paper} placeholder")
        if config["saus_path"] and not Path(config["saus_path"]).is_absolute():
            config["saus_path"] = str(workdir / config["saus_path"])
        reference = config["judge_settings"].get("reference")
        if reference and reference.get("path") and not Path(reference["path"]).is_absolute():
            config["judge_settings"] = dict(config["judge_settings"])
            config["judge_settings"]["reference"] = {
                **reference,
                "path": str(workdir / reference["path"]),
            }
        return {}
    config["papers_dir"] = str(layout.papers_dir)
    config["saus_path"] = layout.saus_path
    config["judge_settings"] = dict(config["judge_settings"])
    config["judge_settings"]["reference"] = {
        **layout.reference,
        **config["judge_settings"].get("reference", {}),
    }
    check_agents(layout.agents, f"{config_path} ({layout.key})")
    return dict(layout.agents)


def fingerprint(data: Any) -> str:
    """A short stable hash of JSON-able data."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def judge_slug(judge: str) -> str:
    """A judge name as a file-name part (``llm:openai/gpt-4o`` -> ``llm-openai_gpt-4o``)."""
    return judge.replace(":", "-").replace("/", "_")


def judged_by(judge: str, settings: dict[str, Any]) -> dict[str, Any]:
    """The settings a judge's verdicts depend on (its fingerprint's): of a judge that calls a
    model, not those that only say how the calls are made (endpoint, concurrency, ...)."""
    kind = judge_kind(judge)
    if kind is not None and kind.model:
        return {k: v for k, v in settings.items() if k not in LLM_OPERATIONAL_SETTINGS}
    return dict(settings)


def judge_fingerprint(judge: str, settings: dict[str, Any]) -> str:
    """Changes exactly when the judge's code or its settings change, so only that judge reruns."""
    return fingerprint(
        {"judge": judge, "code": source_hash(judge), "settings": judged_by(judge, settings)}
    )


def extraction_fingerprint(extraction: dict[str, Any], settings: dict[str, Any]) -> str:
    """Of LLM SAU extraction: its code and prompts, model and settings (not the operational ones)."""
    digest = hashlib.sha256()
    for rel in EXTRACT_SOURCES:
        for path in sorted(PACKAGE_DIR.glob(rel)):
            digest.update(path.read_bytes())
    given = {k: v for k, v in settings.items() if k not in LLM_OPERATIONAL_SETTINGS}
    options = {k: v for k, v in extraction.items() if k != "settings"}
    return fingerprint({"code": digest.hexdigest(), "options": options, "settings": given})


#: Agent keys that only say where its jobs are scheduled or which papers it runs (moving a grid to a
#: cluster, naming the site's GPU model or scoping an agent to its papers must not rerun it).
SCHEDULING_KEYS = ("gpu_model", "cpus", "papers")
