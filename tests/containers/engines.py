"""Container engines for the tests: find one that answers, or start a private one, and build the
project's sandbox image in it (cached by content hash). Used by conftest.py's session fixtures.

An engine that already answers (``DOCKER_HOST`` / ``/var/run/docker.sock``; ``CONTAINER_HOST`` /
``/run/podman/podman.sock``) is used as it is and never stopped. Otherwise the scripts next to this
file start one on a private socket under ``$SABENCH_CT_STATE`` (default /tmp/sabench-ct) with a PID
file; each test session holds a shared ``flock`` lease on it, and the last session out stops it by
PID (``SABENCH_KEEP_ENGINES=1`` keeps it running). Missing engines are installed with apt when the
tests run as root (a fresh machine gets what the tests need from the tests themselves).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
STATE = Path(os.environ.get("SABENCH_CT_STATE", "/tmp/sabench-ct"))


class EngineUnavailable(Exception):
    """Why no engine could be had (the fixture skips with it)."""


@dataclass
class Engine:
    name: str
    url: str
    client: Any
    started_here: bool
    image: Any = None  # sabench.sandbox.images.ImageInfo
    setup_s: float = 0.0
    image_s: float = 0.0

    def env(self) -> dict[str, str]:
        """The variable that points the backend (and subprocesses) at this engine."""
        return {"DOCKER_HOST" if self.name == "docker" else "CONTAINER_HOST": self.url}


def _answers(url: str) -> Any | None:
    if url.startswith("unix://") and not os.path.exists(url[len("unix://") :]):
        return None
    try:
        import docker

        client = docker.DockerClient(base_url=url, timeout=120)
        client.ping()
        return client
    except Exception:
        return None


def _apt_install(binary: str, packages: list[str]) -> None:
    if shutil.which(binary) or Path(f"/usr/sbin/{binary}").exists():
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise EngineUnavailable(f"{binary} is not installed (apt-get install {' '.join(packages)})")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *packages]):
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900)
        if done.returncode:
            raise EngineUnavailable(f"{' '.join(argv)} failed: {done.stderr.strip()[-500:]}")


@contextmanager
def engine(name: str) -> Iterator[Engine]:
    """An answering engine for the whole ``with`` block (started and stopped here if needed)."""
    t0 = time.monotonic()
    if name == "docker":
        candidates = [os.environ.get("DOCKER_HOST"), "unix:///var/run/docker.sock"]
        packages, binary = ["docker.io"], "dockerd"
    else:
        candidates = [os.environ.get("CONTAINER_HOST"), "unix:///run/podman/podman.sock"]
        packages, binary = ["podman", "runc"], "podman"
    for url in filter(None, candidates):
        client = _answers(url)
        if client is not None:
            yield Engine(name, url, client, False, setup_s=time.monotonic() - t0)
            return
    _apt_install(binary, packages)
    if name == "podman":
        _apt_install("runc", ["runc"])
    STATE.mkdir(parents=True, exist_ok=True)
    lease = open(STATE / f"{'dockerd' if name == 'docker' else 'podman'}.users", "a")  # noqa: SIM115
    fcntl.flock(lease, fcntl.LOCK_SH)  # held for the session: the last one out stops the engine
    try:
        script = HERE / ("start_dockerd.sh" if name == "docker" else "start_podman.sh")
        done = subprocess.run([str(script), "--tests"], capture_output=True, text=True, timeout=120)
        if done.returncode:
            raise EngineUnavailable(f"{script.name} failed: {done.stderr.strip()[-800:]}")
        url = done.stdout.strip().splitlines()[-1].split("=", 1)[1]
        client = _answers(url)
        if client is None:
            raise EngineUnavailable(f"{name} started but does not answer at {url}")
        yield Engine(name, url, client, True, setup_s=time.monotonic() - t0)
    finally:
        fcntl.flock(lease, fcntl.LOCK_UN)
        lease.close()
        if os.environ.get("SABENCH_KEEP_ENGINES") != "1":
            stop = HERE / ("stop_dockerd.sh" if name == "docker" else "stop_podman.sh")
            subprocess.run([str(stop), "--if-unused"], capture_output=True, timeout=120)


def build_image(eng: Engine) -> None:
    """The project's sandbox image in this engine (built once; then one inspect)."""
    from sabench.sandbox.images import ensure_image

    t0 = time.monotonic()
    with contextlib.suppress(EngineUnavailable):  # debootstrap makes the base without a registry
        _apt_install("debootstrap", ["debootstrap"])
    eng.image = ensure_image(eng.client, "python")
    eng.image_s = time.monotonic() - t0
