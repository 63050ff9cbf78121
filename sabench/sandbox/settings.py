"""The sandbox settings (``runtime:`` of the config): their defaults and their one validation.

The config schema (``config/schema/config.schema.yaml``, ``runtime``) is the one home of the
defaults and of the rules (types, ranges, known keys); :func:`resolve_runtime` applies the same
schema to settings that reach a step directly (a standalone command, an agent's tools), then adds
what a schema cannot say: metrics files stay inside the submission, GPU requests parse.
docs/architecture.md, "The sandbox interface".
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path, PurePath, PurePosixPath
from typing import Any

from sabench.errors import UserError
from sabench.grid import runtime_defaults, validate_runtime
from sabench.sandbox.gpu import normalize_request as normalize_gpu_request

REPO = Path(__file__).resolve().parents[2]
#: Keys that say what the workflow runs, not how a sandbox runs it.
WORKFLOW_KEYS = ("execute",)


def default_python_env() -> str | None:
    """The sandbox Python env of a standalone step: ``$SABENCH_SANDBOX_ENV``, else the schema's
    default (``.venv-sandbox`` in the repository) where it exists."""
    env = os.environ.get("SABENCH_SANDBOX_ENV")
    if env:
        return env
    repo_env = REPO / runtime_defaults()["python_env"]
    return str(repo_env) if repo_env.is_dir() else None


def resolve_runtime(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """Defaults filled in and checked; errors name the ``runtime.<key>`` at fault. The python env
    stays as given (None: the caller picks, e.g. :func:`default_python_env`), since the schema's
    default is relative to the repository."""
    given = {k: _as_data(v) for k, v in (settings or {}).items() if v is not None}
    validate_runtime(given)
    merged = {**runtime_defaults(), "python_env": None, **given}
    for key in WORKFLOW_KEYS:
        merged.pop(key, None)
    for name in merged["metrics_files"]:
        p = PurePosixPath(str(name))
        if p.is_absolute() or ".." in p.parts or not p.parts:
            raise UserError(None, "runtime.metrics_files", f"{name!r} must be a relative path")
    merged["metrics_files"] = [str(f) for f in merged["metrics_files"]]
    try:
        normalize_gpu_request(merged["gpus"])
    except ValueError as exc:
        raise UserError(None, "runtime.gpus", str(exc)) from None
    merged["isolation"] = dict(merged["isolation"])
    return merged


def _as_data(value: Any) -> Any:
    """What the Python API may pass (paths, tuples) as the config's data types."""
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    return value
