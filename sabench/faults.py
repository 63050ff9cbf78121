"""Infrastructure faults: what happened *to* a run, as opposed to what its agent did.

A provider that cannot be reached, a rejected or missing API key, an exhausted rate limit, a sandbox
or engine that fails, an agent that cannot start in its sandbox, or a bug of ours says nothing
about drift. Such a step ends its job with a
fault record under ``<run>/faults/<stage>.json`` and exit status :data:`FAULT_EXIT`, and writes no
output: the run does not count as complete, aggregation names it (``incomplete_runs``, ``coverage``,
``summary.md``) and excludes it from every score, and the next run of the same command redoes it.
What the agent did (submitted, nothing, hit its step/time/cost limit, broke its own code) is scored
as before (docs/architecture.md, "Faults are never scores").
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Any

from sabench.io import read_json, write_json

#: Exit status of a step that ended with a fault (not 1: a user error; not 2: a usage error).
FAULT_EXIT = 3

FAULT_CAUSES = {
    "provider_unreachable": "the LLM provider could not be reached (connection or timeout)",
    "provider_error": "the LLM provider failed (5xx or an unexpected reply) after retries",
    "auth_rejected": "the LLM provider rejected the API key",
    "key_missing": "the API key's environment variable is not set",
    "rate_limited": "the LLM provider's rate limit was still exceeded after retries",
    "sandbox_error": "the sandbox or its engine failed (no image, engine down, mount refused)",
    "agent_setup": "the agent could not start in its sandbox (its command not found or not "
    "executable there: exit 126/127; an image the backend cannot run)",
    "internal_error": "a bug in sabench (see the job's log)",
}

#: How :class:`sabench.llm.client.LLMError` kinds map to fault causes (other kinds are no fault).
LLM_ERROR_CAUSES = {
    "connection": "provider_unreachable",
    "timeout": "provider_unreachable",
    "server": "provider_error",
    "other": "provider_error",
    "bad_request": "provider_error",
    "auth": "auth_rejected",
    "config": "key_missing",
    "rate_limit": "rate_limited",
}


class Fault(Exception):
    """A step cannot complete for a reason outside the agent's control."""

    def __init__(self, cause: str, message: str) -> None:
        if cause not in FAULT_CAUSES:
            raise ValueError(f"unknown fault cause {cause!r}")
        self.cause = cause
        self.message = message
        super().__init__(f"{cause}: {message}")


def llm_fault_cause(exc: BaseException) -> str | None:
    """The fault cause of an exception raised by the LLM layer; None for the model's own doing."""
    kind = getattr(exc, "kind", None)
    if kind is None:
        return "internal_error"
    return LLM_ERROR_CAUSES.get(kind)


def fault_path(run_dir: str | Path, stage: str) -> Path:
    return Path(run_dir) / "faults" / f"{stage}.json"


def record_fault(run_dir: str | Path, stage: str, cause: str, message: str, **extra: Any) -> Path:
    """Write the fault record of ``stage`` (atomic; the last fault of the stage wins)."""
    path = fault_path(run_dir, stage)
    when = dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    write_json(path, {"stage": stage, "cause": cause, "message": message, "at": when, **extra})
    return path


def clear_fault(run_dir: str | Path, stage: str) -> None:
    """A step that completed removes the record of its earlier fault."""
    fault_path(run_dir, stage).unlink(missing_ok=True)


def read_fault(run_dir: str | Path, stage: str) -> dict[str, Any] | None:
    path = fault_path(run_dir, stage)
    try:
        data = read_json(path)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def announce_fault(run_dir: str | Path, stage: str, cause: str, message: str) -> int:
    """Say, in one line, that ``stage`` of the run ended with a recorded fault; return
    :data:`FAULT_EXIT` (for ``main``)."""
    print(
        f"fault: {stage}: {cause}: {message} (recorded in {fault_path(run_dir, stage)}; not "
        "scored: run the same command again once the cause is fixed)",
        file=sys.stderr,
    )
    return FAULT_EXIT


def exit_for_fault(run_dir: str | Path, stage: str, fault: Fault, **extra: Any) -> int:
    """Record ``fault`` and announce it (for ``main``)."""
    record_fault(run_dir, stage, fault.cause, fault.message, **extra)
    return announce_fault(run_dir, stage, fault.cause, fault.message)
