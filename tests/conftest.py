"""Shared fixtures: paths to the repo and to ../shared benchmark data (skipped with a reason when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def sandbox_env() -> Path:
    """The project's sandbox Python env, built once from envs/sandbox.txt when missing."""
    from sabench.sandbox.pyenv import ensure_sandbox_env

    try:
        return ensure_sandbox_env(REPO / ".venv-sandbox", REPO / "envs" / "sandbox.txt")
    except Exception as exc:  # no package index reachable, no venv module...
        pytest.skip(f"cannot build the sandbox env .venv-sandbox: {exc}")


def _shared_dir(name: str) -> Path:
    path = SHARED / name
    if not path.is_dir():
        pytest.skip(f"{path} is absent: the real benchmark data lives in ../shared/{name}")
    return path


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def sabench_data() -> Path:
    return _shared_dir("sabench")


@pytest.fixture(scope="session")
def paperbench_data() -> Path:
    return _shared_dir("paperbench")
