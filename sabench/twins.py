"""Canary twins in the grid, read at Snakefile parse time: a twin's id, and which papers get one.

The twin itself is made by the ``canary`` step (:mod:`sabench.canary`); docs/agents.md, "Canary
papers". Standard library and PyYAML only, like :mod:`sabench.grid`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from sabench.errors import UserError, parse_error

#: The SAU files of a paper folder (``sabench.grid.SAU_FILES``).
SAU_FILES = ("saus.yaml", "saus.yml", "saus.json", "sau.json", "rubric.json")


def _load(path: Path) -> Any:
    try:
        return yaml.load(
            path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        )
    except yaml.YAMLError as exc:
        raise parse_error(path, exc) from None


#: The id of a paper's canary twin is the paper's with this suffix (sabench.canary).
CANARY_SUFFIX = "--canary"


def twin_of(paper: str) -> str:
    """The id of ``paper``'s canary twin."""
    return f"{paper}{CANARY_SUFFIX}"


def original_of(paper: str) -> str:
    """The paper a canary twin was made from (a paper that is no twin: itself)."""
    return paper.removesuffix(CANARY_SUFFIX)


def is_twin(paper: str) -> bool:
    return paper.endswith(CANARY_SUFFIX) and paper != CANARY_SUFFIX


def _carries_expected(data: Any) -> bool:
    """Whether a loaded SAU file holds an ``expected`` result anywhere (any of its formats)."""
    if isinstance(data, dict):
        if data.get("expected") is not None:
            return True
        return any(_carries_expected(v) for v in data.values())
    if isinstance(data, list):
        return any(_carries_expected(v) for v in data)
    return False


def papers_with_expected(
    papers: Iterable[str], papers_dir: Path, saus_path: str | None
) -> list[str]:
    """The papers whose SAU file states an expected result: those that get a canary twin."""
    out = []
    for paper in papers:
        if saus_path:
            files = [Path(saus_path.format(paper=paper))]
        else:
            files = [papers_dir / paper / name for name in SAU_FILES]
        if any(f.is_file() and _carries_expected(_load(f)) for f in files):
            out.append(paper)
    return out


def with_twins(
    config: dict[str, Any], papers: list[str], workdir: Path, config_path: str | Path
) -> list[str]:
    """``papers`` with, after each paper whose claims carry expected results, its canary twin
    (``canary: true``); the papers alone otherwise."""
    if not config["canary"]:
        return papers
    carrying = set(
        papers_with_expected(papers, workdir / config["papers_dir"], config["saus_path"])
    )
    if not carrying:
        raise UserError(
            config_path,
            "canary",
            f"no paper of the grid ({', '.join(papers)}) has an SAU with an `expected` result, "
            "so none gets a canary twin: add one, or set canary: false",
        )
    return [q for p in papers for q in ([p, twin_of(p)] if p in carrying else [p])]
