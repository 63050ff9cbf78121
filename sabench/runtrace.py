"""The execution trace, host side (docs/architecture.md, "The execution trace").

Every Python process of a submission's run writes ``<executed>/.sabench-trace/<pid>.json`` (the
sandbox program ``sandbox/trace_site.py``, installed as ``sitecustomize.py`` by
:func:`install_site`): the lines of the submission's own files that ran and the first calls of its
module-level functions. :func:`read_trace` merges them; :func:`with_lines` gives a judge's
execution record the lines that ran.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("sabench.runtrace")

#: The folder, inside the submission's workdir, that holds one trace file per Python process.
TRACE_DIR = ".sabench-trace"
#: Where the site folder appears inside a sandbox (the local backend uses its host path).
SITE_TARGET = "/opt/sabench-site"
#: A trace file larger than this is not read (calls are capped at 4 MB per process).
MAX_TRACE_BYTES = 64 << 20
_PROGRAMS = Path(__file__).resolve().parent


@dataclass(frozen=True)
class RunTrace:
    """What a run's Python processes recorded, merged: lines per file (paths relative to the
    submission), calls in file order, the recorder(s) and how many process files were read;
    ``raised``: per file, the lines an uncaught exception that ended a process was raised through
    (statements that did not complete)."""

    lines: dict[str, frozenset[int]]
    calls: tuple[dict[str, Any], ...]
    recorder: str
    processes: int
    raised: dict[str, frozenset[int]] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """The execution record's ``trace`` key."""
        return {
            "recorder": self.recorder,
            "processes": self.processes,
            "files": len(self.lines),
            "lines": sum(len(v) for v in self.lines.values()),
        }


def site_program(root: str = "/submission", recorder: str = "", calls: bool = True) -> str:
    """The text of the sitecustomize.py the sandbox runs: the checks' wire encoding, its settings
    (the submission's ``root``; a forced ``recorder`` and ``calls=False``, lines only, are for
    benchmarks), then the trace program (both standard library only). Settings live in the
    program, not the environment, where a run could change them and a detector could read them."""
    wire = (_PROGRAMS / "checks" / "sandbox_wire.py").read_text(encoding="utf-8")
    trace = (_PROGRAMS / "sandbox" / "trace_site.py").read_text(encoding="utf-8")
    settings = {"root": root, "recorder": recorder, "calls": calls}
    return f"{wire}\n_TRACE_SETTINGS = {settings!r}\n{trace}"


def install_site(
    folder: Path, root: str = "/submission", recorder: str = "", calls: bool = True
) -> Path:
    """Write the site folder (``sitecustomize.py``, world-readable) into ``folder``; return it.
    ``root``: where the submission is as the traced processes see it (see :func:`site_program`)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "sitecustomize.py"
    target.write_text(site_program(root, recorder, calls), encoding="utf-8")
    target.chmod(0o644)
    folder.chmod(0o755)
    return folder


def _valid_lines(value: Any) -> dict[str, list[int]] | None:
    if not isinstance(value, dict):
        return None
    out = {}
    for rel, nums in value.items():
        if not isinstance(rel, str) or not isinstance(nums, list):
            return None
        if rel.startswith(("/", "../")) or rel == "..":
            continue
        out[rel] = [n for n in nums if isinstance(n, int) and not isinstance(n, bool) and n > 0]
    return out


def read_trace(executed: Path) -> RunTrace | None:
    """The merged trace of a run's executed copy; None when it has no trace folder (a run from
    before traces, or one that ran no Python). A malformed file is skipped with a warning."""
    folder = Path(executed) / TRACE_DIR
    if not folder.is_dir():
        return None
    lines: dict[str, set[int]] = {}
    raised: dict[str, set[int]] = {}
    calls: list[dict[str, Any]] = []
    recorders: set[str] = set()
    processes = 0
    for path in sorted(folder.glob("*.json"), key=lambda p: p.name):
        try:
            if not path.is_file() or path.is_symlink():
                raise ValueError("not a regular file")
            if path.stat().st_size > MAX_TRACE_BYTES:
                raise ValueError(f"over {MAX_TRACE_BYTES} bytes")
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or data.get("version") != 1:
                raise ValueError("not a version 1 trace")
            found = _valid_lines(data.get("lines", {}))
            got_calls = data.get("calls", [])
            if found is None or not isinstance(got_calls, list):
                raise ValueError("lines or calls malformed")
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            log.warning("trace file %s skipped: %s", path, str(exc)[:200])
            continue
        processes += 1
        recorders.add(str(data.get("recorder") or "unknown"))
        for rel, nums in found.items():
            lines.setdefault(os.path.normpath(rel), set()).update(nums)
        for frame in data.get("raised") or []:
            if isinstance(frame, list) and len(frame) == 2 and isinstance(frame[1], int):
                raised.setdefault(os.path.normpath(str(frame[0])), set()).add(frame[1])
        calls += [
            c
            for c in got_calls
            if isinstance(c, dict) and isinstance(c.get("function"), str) and "result" in c
        ]
    return RunTrace(
        lines={rel: frozenset(nums) for rel, nums in sorted(lines.items())},
        calls=tuple(calls),
        recorder=", ".join(sorted(recorders)),
        processes=processes,
        raised={rel: frozenset(nums) for rel, nums in sorted(raised.items())},
    )


def with_lines(execution: dict[str, Any] | None, executed: Path) -> dict[str, Any] | None:
    """``execution`` with ``lines_run`` ({relpath: sorted lines}) when the run left a trace, and
    ``lines_raised`` (the same shape) when an uncaught exception ended one of its processes; the
    record unchanged otherwise (and None stays None)."""
    if execution is None:
        return None
    trace = read_trace(executed)
    if trace is None:
        return execution
    out = {**execution, "lines_run": {rel: sorted(nums) for rel, nums in trace.lines.items()}}
    if trace.raised:
        out["lines_raised"] = {rel: sorted(nums) for rel, nums in trace.raised.items()}
    return out


__all__ = [
    "MAX_TRACE_BYTES",
    "SITE_TARGET",
    "TRACE_DIR",
    "RunTrace",
    "install_site",
    "read_trace",
    "site_program",
    "with_lines",
]
