"""Shared fixtures: paths to the repo and to ../shared benchmark data (skipped with a reason when absent)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def _container_engine(name: str) -> Iterator[Any]:
    """An answering engine with the project's sandbox image built (tests/containers/engines.py)."""
    import importlib.util
    import sys

    engines = sys.modules.get("sabench_test_engines")
    if engines is None:
        spec = importlib.util.spec_from_file_location(
            "sabench_test_engines", REPO / "tests" / "containers" / "engines.py"
        )
        assert spec is not None and spec.loader is not None
        engines = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = engines
        spec.loader.exec_module(engines)
    try:
        with engines.engine(name) as eng:
            try:
                engines.build_image(eng)
            except Exception as exc:
                if "no base image" in str(exc):  # no registry, no debootstrap: nothing to build on
                    pytest.skip(f"cannot build the sandbox image in {name}: {exc}")
                raise
            yield eng
    except engines.EngineUnavailable as exc:
        pytest.skip(f"no {name} engine: {exc}")


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[Any]:
    """A Docker engine that answers (DOCKER_HOST, /var/run/docker.sock, else a private dockerd
    started for the session and stopped by PID at the end) with the sandbox image built; its
    ``.url``, ``.client``, ``.image`` and ``.env()`` (DOCKER_HOST for subprocesses)."""
    yield from _container_engine("docker")


@pytest.fixture(scope="session")
def podman_engine() -> Iterator[Any]:
    """The same for podman's API service (CONTAINER_HOST for the podman backend)."""
    yield from _container_engine("podman")


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


@pytest.fixture(scope="module")
def runtime(sandbox_env: Path) -> dict:
    """The checks' runtime on bwrap with the project's sandbox Python (skips without bwrap)."""
    from sabench.sandbox import get_backend
    from sabench.sandbox.settings import resolve_runtime

    ok, why = get_backend("bwrap").available()
    if not ok:
        pytest.skip(f"bwrap unavailable: {why}")
    return resolve_runtime({"backend": "bwrap", "python_env": str(sandbox_env)})
