"""The judge registry: every judge's name, implementation, fingerprint sources and needs, in one place.

The grid's validation, the rules (which inputs and settings a judge's job gets), the judge step
(:mod:`sabench.judges.run`) and the pre-flight key check all read this table, so adding a judge is
its module (with a ``judge(inputs)`` function) plus one :class:`JudgeKind` line below
(docs/architecture.md, "Judges"). Standard library only: it is read at Snakefile parse time.
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sabench.contracts import Judgment

PACKAGE_DIR = Path(__file__).resolve().parents[1]

#: What every judge's retrieval and rows are made of: part of every fingerprint that reads code.
_CODE_READING = ("index/*.py", "values.py", "contracts.py")
#: The llm judge's code, prompts and the static retrieval it reuses (also the cascade's).
_LLM_JUDGING = (
    "judges/llm_judge.py",
    "judges/retrieval.py",
    "llm/*.py",
    "templates/judge_*.j2",
    "templates/repair.j2",
    # the retrieval it reuses
    "judges/static/*.py",
    "judges/fabrication.py",
    *_CODE_READING,
)


@dataclass(frozen=True)
class JudgeInputs:
    """Everything a judge may read about one run; each judge takes what it needs."""

    name: str
    settings: dict[str, Any]
    submission: Path
    saus: list[dict[str, Any]]
    execution: dict[str, Any] | None = None
    #: the run's agent record (agent, paper, seed), for judges that look verdicts up
    run: dict[str, Any] | None = None
    #: the run folder (``executed/``, ``execution.log``)
    run_dir: Path | None = None
    #: the sandbox settings, for judges that run code
    runtime: dict[str, Any] | None = None

    @property
    def folder(self) -> Path:
        return self.run_dir or Path(self.submission).parent


@dataclass(frozen=True)
class JudgeKind:
    """One judge implementation and what the workflow must give it."""

    name: str
    #: the module holding ``judge(inputs: JudgeInputs) -> list[Judgment]``
    module: str
    #: globs under ``sabench/`` whose content is the judge's code: a change reruns this judge only
    sources: tuple[str, ...]
    summary: str
    #: named ``<kind>:<model>`` and calls that model (needs its ``api_key_env``)
    model: bool = False
    #: runs code in a sandbox: gets the runtime settings, whose change reruns it
    runs_code: bool = False
    #: reads the submission's code (so it can re-judge drift mutants)
    reads_code: bool = True
    #: reads another benchmark's verdict files (``judge_settings.<name>.path``)
    verdicts: bool = False

    @property
    def batched(self) -> bool:
        """Cheap enough to judge a whole paper's runs in one job (no model, no sandbox):
        the workflow's judge_batch rule, sabench.judges.batch."""
        return not self.model and not self.runs_code

    @property
    def spelled(self) -> str:
        return f"{self.name}:<model>" if self.model else self.name


JUDGES: dict[str, JudgeKind] = {
    kind.name: kind
    for kind in (
        JudgeKind(
            "static",
            "sabench.judges.static",
            ("judges/static/*.py", "judges/fabrication.py", *_CODE_READING),
            "offline rules over the code index, no model",
        ),
        JudgeKind(
            "exec",
            "sabench.judges.exec_judge",
            ("judges/exec_judge.py", "checks/*.py", "judges/fabrication.py", *_CODE_READING),
            "the paper's checks run against the submission in the sandbox",
            runs_code=True,
        ),
        JudgeKind(
            "reference",
            "sabench.judges.reference",
            ("judges/reference.py", "contracts.py"),
            "another benchmark's own verdicts, for calibration",
            reads_code=False,
            verdicts=True,
        ),
        JudgeKind(
            "llm",
            "sabench.judges.llm_judge",
            _LLM_JUDGING,
            "a model judges each SAU from retrieved code",
            model=True,
        ),
        JudgeKind(
            "cascade",
            "sabench.judges.cascade",
            ("judges/cascade.py", *_LLM_JUDGING),
            "the static judge where its confidence reaches a threshold, llm:<model> for the rest",
            model=True,
        ),
    )
}


def judge_kind(name: str) -> JudgeKind | None:
    """The kind of a configured judge name (``llm:openai/gpt-4o`` -> ``llm``), None if unknown."""
    base, sep, model = name.partition(":")
    kind = JUDGES.get(base)
    if kind is None or kind.model != bool(sep) or (sep and not model):
        return None
    return kind


def judge_available(name: str) -> bool:
    return judge_kind(name) is not None


def available_judges() -> str:
    """For error messages: ``static, exec, reference, llm:<model>, cascade:<model>``."""
    return ", ".join(kind.spelled for kind in JUDGES.values())


def _kind(name: str) -> JudgeKind:
    kind = judge_kind(name)
    if kind is None:
        raise ValueError(f"judge {name!r} is not implemented (one of {available_judges()})")
    return kind


@cache
def source_hash(name: str) -> str:
    """The hash of the judge's code (its :attr:`JudgeKind.sources`)."""
    digest = hashlib.sha256()
    for rel in _kind(name).sources:
        for path in sorted(PACKAGE_DIR.glob(rel)):
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def implementation(name: str) -> Callable[[JudgeInputs], list[Judgment]]:
    """The judge's ``judge`` function, imported on first use (parse time stays cheap)."""
    return importlib.import_module(_kind(name).module).judge  # type: ignore[no-any-return]


def run_judge(inputs: JudgeInputs) -> list[Judgment]:
    return implementation(inputs.name)(inputs)


def files_stamp(paths: Iterable[str | Path]) -> str:
    """A short hash of the files' names, sizes and modification times: it changes when one of
    them is replaced, edited or touched (the workflow's stand-in for a long list of inputs)."""
    digest = hashlib.sha256()
    for path in paths:
        st = Path(path).stat()
        digest.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return digest.hexdigest()[:16]


def verdict_file(name: str, settings: dict[str, Any], run: dict[str, Any]) -> Path:
    """For judges of verdict files: the file that holds this run's verdicts (it may not exist)."""
    if not _kind(name).verdicts:
        raise ValueError(f"judge {name!r} reads no verdict files")
    return importlib.import_module(_kind(name).module).verdict_path(settings, run)  # type: ignore[no-any-return]
