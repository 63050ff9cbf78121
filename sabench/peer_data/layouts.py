"""Benchmark data folders as sabench settings: papers, SAU files, replay agents, the reference judge.

Read at Snakefile parse time (standard library only; it lists folders, never opens an archive):

SA-Bench (``sabench_data``, laid out as ``../shared/sabench``)::

    papers/<paper>/paper.md           -> the papers (papers_dir)
    saus/<paper>.json                 -> their SAUs (saus_path)
    runs/<config>.tar.gz | <config>/  -> one replay agent per configuration, named after it
    reference/<config>/<paper>.json   -> judge ``reference`` (SA-Bench's own verdicts)

PaperBench (``paperbench_data``, laid out as ``../shared/paperbench``)::

    case_study/<paper>/paper.md       -> the papers
    rubrics/<paper>/rubric.json       -> their SAUs: the rubric's leaves, tree kept
    case_study/<paper>/repo.tar.gz    -> one replay agent (folder ``repo`` of the archive)
    case_study/<paper>/grade.json     -> judge ``reference`` (PaperBench's judge, code-only grading)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sabench.errors import UserError

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
#: The agent of PaperBench's case study (SA-Bench's paperbench_case_study): Claude Sonnet 4.6 with a
#: basic ReAct loop, named like SA-Bench's configurations.
PAPERBENCH_AGENT = "claude-sonnet_basic"


@dataclass
class Layout:
    """What a benchmark folder contributes to the settings."""

    key: str  # the config key that named the folder
    papers_dir: Path
    saus_path: str  # template with {paper}
    agents: dict[str, dict[str, Any]]
    reference: dict[str, Any]  # settings of judge ``reference``


def _t(path: Path) -> str:
    """A path as a literal inside a str.format template."""
    return str(path).replace("{", "{{").replace("}", "}}")


def _need_dir(path: Path, key: str, what: str) -> None:
    if not path.is_dir():
        raise UserError(path, key, f"folder not found ({what})")


def archive_name(entry: Path) -> str | None:
    """The configuration an archive stands for (``gpt4o_basic.tar.gz`` -> ``gpt4o_basic``)."""
    for suffix in ARCHIVE_SUFFIXES:
        if entry.name.endswith(suffix) and len(entry.name) > len(suffix):
            return entry.name[: -len(suffix)]
    return None


def sabench_layout(data: Path, key: str = "sabench_data") -> Layout:
    """A folder laid out as SA-Bench's release (see the module docstring)."""
    data = Path(data).resolve()
    _need_dir(data, key, "SA-Bench data: papers/, saus/, runs/, reference/")
    for sub, what in (
        ("papers", "papers/<paper>/paper.md"),
        ("saus", "saus/<paper>.json"),
        ("runs", "runs/<config>.tar.gz"),
    ):
        _need_dir(data / sub, key, what)
    agents: dict[str, dict[str, Any]] = {}
    entries = sorted((data / "runs").iterdir(), key=lambda p: (p.is_dir(), p.name))
    for entry in entries:  # archives first, so an unpacked folder of the same name wins
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            name = entry.name
            spec: dict[str, Any] = {"kind": "replay", "path": f"{_t(entry)}/{{paper}}"}
        else:
            found = archive_name(entry)
            if found is None:
                continue
            name = found
            spec = {"kind": "replay", "archive": _t(entry), "member": "{paper}"}
        if not _ID.match(name):
            raise UserError(entry, key, f"run archive {name!r} is not a valid agent name")
        spec["description"] = f"SA-Bench configuration {name} (replayed from {entry.name})"
        spec["missing_source"] = "zero"  # SA-Bench scores a configuration's missing run 0
        agents[name] = spec
    if not agents:
        raise UserError(data / "runs", key, "no run archive (<config>.tar.gz) or folder")
    return Layout(
        key=key,
        papers_dir=data / "papers",
        saus_path=f"{_t(data)}/saus/{{paper}}.json",
        agents=agents,
        reference={"path": f"{_t(data)}/reference/{{agent}}/{{paper}}.json", "format": "sabench"},
    )


def paperbench_layout(data: Path, key: str = "paperbench_data") -> Layout:
    """A folder laid out as ``../shared/paperbench`` (see the module docstring)."""
    data = Path(data).resolve()
    _need_dir(data, key, "PaperBench data: rubrics/, case_study/")
    _need_dir(data / "case_study", key, "case_study/<paper>/paper.md, repo.tar.gz, grade.json")
    _need_dir(data / "rubrics", key, "rubrics/<paper>/rubric.json")
    case = f"{_t(data)}/case_study/{{paper}}"
    agents = {
        PAPERBENCH_AGENT: {
            "kind": "replay",
            "archive": f"{case}/repo.tar.gz",
            "member": "repo",
            "description": "PaperBench case study: Claude Sonnet 4.6 with a basic ReAct agent",
        }
    }
    return Layout(
        key=key,
        papers_dir=data / "case_study",
        saus_path=f"{_t(data)}/rubrics/{{paper}}/rubric.json",
        agents=agents,
        reference={"path": f"{case}/grade.json", "format": "paperbench"},
    )


LAYOUTS = {"sabench_data": sabench_layout, "paperbench_data": paperbench_layout}


def layout_from_config(
    config: dict[str, Any], workdir: Path, config_path: str | Path = "config"
) -> Layout | None:
    """The layout a config names (``sabench_data`` or ``paperbench_data``), or None."""
    named = [k for k in LAYOUTS if config.get(k)]
    if len(named) > 1:
        raise UserError(config_path, named[1], f"give one of {' or '.join(LAYOUTS)}, not both")
    if not named:
        return None
    key = named[0]
    path = Path(str(config[key])).expanduser()
    return LAYOUTS[key](path if path.is_absolute() else workdir / path, key)
