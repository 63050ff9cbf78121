"""Shared fixtures: paths to the repo and to ../shared benchmark data (skipped with a reason when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


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
