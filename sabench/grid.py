"""Configuration and the static grid papers x agents x seeds, read at Snakefile parse time.

Imports only the standard library, PyYAML and jsonschema so a dry run stays near Snakemake's floor.
Every user mistake becomes a one-line :class:`UserError` naming the file and the field.
"""

from __future__ import annotations

import hashlib
import json
import re
from copy import deepcopy
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from sabench.errors import UserError

PAPER_FILES = ("paper.md", "paper.pdf")
SAU_FILES = ("saus.yaml", "saus.yml", "saus.json", "sau.json", "rubric.json")
IMPLEMENTED_AGENT_KINDS = ("replay", "null")
IMPLEMENTED_JUDGES = ("static",)
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
SCHEMA_DIR = Path(__file__).resolve().parents[1] / "config" / "schema"
PACKAGE_DIR = Path(__file__).resolve().parent

#: Source files whose content defines each judge; their hash is the judge's fingerprint.
JUDGE_SOURCES = {
    "static": ("judges/static.py", "index.py", "values.py", "contracts.py"),
}


@dataclass
class Settings:
    """The validated configuration plus the agents and the grid it implies."""

    config: dict[str, Any]
    agents: dict[str, dict[str, Any]]
    papers: list[str]
    judges: list[str]
    runs: list[tuple[str, str, str]] = field(default_factory=list)

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
        raise UserError(path, None, f"cannot parse: {str(exc).splitlines()[0]}") from None


@cache
def _schema(name: str) -> dict[str, Any]:
    return yaml.safe_load((SCHEMA_DIR / name).read_text())


def _field(error: Any) -> str:
    out = ""
    for part in error.absolute_path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def validate(data: Any, schema_name: str, path: str | Path) -> None:
    """Validate against a described JSON schema; the first error becomes a one-line UserError."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(_schema(schema_name))
    errors = sorted(validator.iter_errors(data), key=lambda e: (len(e.absolute_path), e.message))
    if errors:
        err = errors[0]
        raise UserError(path, _field(err), err.message)


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


def check_paper_folder(paper_dir: Path) -> None:
    if not paper_dir.is_dir():
        raise UserError(paper_dir, "papers", "paper folder not found")
    if not any((paper_dir / f).is_file() for f in PAPER_FILES):
        raise UserError(paper_dir, None, "no paper.md or paper.pdf in this paper folder")
    if not any((paper_dir / f).is_file() for f in SAU_FILES):
        raise UserError(paper_dir, None, f"no SAU file (one of {', '.join(SAU_FILES)})")


def load_agents(path: Path) -> dict[str, dict[str, Any]]:
    data = _load_yaml(path, "agents file")
    if isinstance(data, dict) and None in data:
        raise UserError(path, "null", 'an agent named null must be quoted: "null":')
    validate(data, "agents.schema.yaml", path)
    for name, agent in data.items():
        if agent["kind"] not in IMPLEMENTED_AGENT_KINDS:
            raise UserError(
                path,
                f"{name}.kind",
                f"kind {agent['kind']!r} is not available in this version "
                f"(available: {', '.join(IMPLEMENTED_AGENT_KINDS)})",
            )
        if agent["kind"] == "replay" and "{paper}" not in agent.get("path", ""):
            raise UserError(
                path, f"{name}.path", "a replay agent needs a path template with {paper}"
            )
    return data


def agent_seeds(agent: dict[str, Any], default: list[int]) -> list[str]:
    if agent["kind"] == "null" or (agent["kind"] == "replay" and "{seed}" not in agent["path"]):
        return ["0"]
    return [str(s) for s in agent.get("seeds", default)]


def load_settings(config: dict[str, Any], workdir: Path, config_path: str = "config") -> Settings:
    """Validate ``config`` (as Snakemake merged it) and build the grid."""
    validate(config, "config.schema.yaml", config_path)
    config = fill_defaults(config, _schema("config.schema.yaml"))
    agents_path = workdir / config["agents_file"]
    all_agents = load_agents(agents_path)
    wanted_agents = _as_list(config["agents"])
    if wanted_agents is None:
        wanted_agents = list(all_agents)
    for name in wanted_agents:
        if name not in all_agents:
            raise UserError(
                config_path, "agents", f"agent {name!r} is not defined in {agents_path}"
            )
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
        check_paper_folder(papers_dir / paper)
    judges = list(dict.fromkeys(config["judges"]))
    for judge in judges:
        if judge not in IMPLEMENTED_JUDGES:
            raise UserError(
                config_path,
                "judges",
                f"judge {judge!r} is not available in this version "
                f"(available: {', '.join(IMPLEMENTED_JUDGES)})",
            )
    agents = {name: all_agents[name] for name in wanted_agents}
    runs = [
        (agent, paper, seed)
        for agent in agents
        for paper in wanted_papers
        for seed in agent_seeds(agents[agent], config["seeds"])
    ]
    return Settings(config=config, agents=agents, papers=wanted_papers, judges=judges, runs=runs)


def fingerprint(data: Any) -> str:
    """A short stable hash of JSON-able data."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def judge_slug(judge: str) -> str:
    """A judge name as a file-name part (``llm:openai/gpt-4o`` -> ``llm-openai_gpt-4o``)."""
    return judge.replace(":", "-").replace("/", "_")


@cache
def _source_hash(judge: str) -> str:
    digest = hashlib.sha256()
    for rel in JUDGE_SOURCES.get(judge.split(":")[0], ()):
        digest.update((PACKAGE_DIR / rel).read_bytes())
    return digest.hexdigest()[:16]


def judge_fingerprint(judge: str, settings: dict[str, Any]) -> str:
    """Changes exactly when the judge's code or its settings change, so only that judge reruns."""
    return fingerprint({"judge": judge, "code": _source_hash(judge), "settings": settings})


def agent_fingerprint(name: str, agent: dict[str, Any]) -> str:
    """What an agent was given; a change reruns that agent and nothing else."""
    return fingerprint({"agent": name, **agent})
