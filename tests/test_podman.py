"""Podman-specific behaviour. The hostile suite runs against podman too: tests/test_docker.py,
parametrized over both engines (``pytest -m podman`` runs it for podman alone)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from sabench.sandbox import SandboxSpec, get_backend
from sabench.sandbox.images import RECIPES, image_tag
from sabench.sandbox.podman import PodmanSandbox, default_socket

REPO = Path(__file__).resolve().parents[1]


def test_socket_comes_from_container_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTAINER_HOST", "unix:///tmp/x/podman.sock")
    assert default_socket() == "unix:///tmp/x/podman.sock"
    assert PodmanSandbox().engine_url() == "unix:///tmp/x/podman.sock"
    assert PodmanSandbox(base_url="unix:///y.sock").engine_url() == "unix:///y.sock"


def test_unavailable_says_how_to_start_the_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CONTAINER_HOST", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    backend = PodmanSandbox(base_url=f"unix://{tmp_path}/none.sock")
    ok, why = backend.available()
    assert not ok and "no podman engine socket" in why
    res = backend.run(SandboxSpec(command=["true"], workdir=tmp_path), tmp_path / "log")
    assert res.status == "sandbox_error" and "podman unavailable" in res.message


def test_ulimits_only_where_no_sized_filesystem() -> None:
    """Any explicit ulimit makes podman drop its configured defaults (nofile 1048576 then fails
    with EPERM here): none when /submission is a sized fs; fsize + nofile + nproc otherwise."""
    backend = PodmanSandbox()
    assert backend.ulimits(100, staged=True) == []
    names = [name for name, _, _ in backend.ulimits(100, staged=False)]
    assert names == ["fsize", "nofile", "nproc"]
    assert get_backend("podman").name == "podman"


@pytest.mark.podman
def test_image_is_built_in_podman_storage_with_the_same_tag(podman_engine: Any) -> None:
    assert podman_engine.image.ref == image_tag(RECIPES["python"])
    assert podman_engine.client.images.get(podman_engine.image.ref).id == podman_engine.image.id


@pytest.mark.podman
def test_oom_is_read_from_the_cgroup_not_the_flag(podman_engine: Any, tmp_path: Path) -> None:
    backend = PodmanSandbox(base_url=podman_engine.url)
    spec = SandboxSpec(
        command=["python", "-c", "x = bytearray(1 << 30)"], workdir=tmp_path, mem_mb=128
    )
    res = backend.run(spec, tmp_path / "oom.log")
    assert res.status == "oom", res
    assert "OOM kill(s) in the cgroup" in res.message  # podman's OOMKilled stays False


@pytest.mark.podman
def test_start_script_is_idempotent(podman_engine: Any) -> None:
    if not podman_engine.started_here:
        pytest.skip("the podman service was not started by this session")
    pid = Path("/tmp/sabench-ct/podman.pid").read_text()
    again = subprocess.run(
        [str(REPO / "tests" / "containers" / "start_podman.sh"), "--tests"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 0 and again.stdout.strip() == f"PODMAN_HOST={podman_engine.url}"
    assert Path("/tmp/sabench-ct/podman.pid").read_text() == pid
