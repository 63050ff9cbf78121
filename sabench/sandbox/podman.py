"""The Podman backend: the docker backend's code against podman's Docker-compatible API service.

Podman has no always-on daemon: ``podman system service --time=0 unix:///run/podman/podman.sock``
(or the rootless ``$XDG_RUNTIME_DIR/podman/podman.sock``, or a systemd socket unit) serves the API
the docker SDK speaks. The socket is ``$CONTAINER_HOST`` when set, else the first of those that
exists. Everything else (isolation, limits, images, reaping) is the docker backend's; the
differences handled here: podman's compat API leaves ``OOMKilled`` False, so an OOM is read from
the container cgroup's oom_kill counter (or exit 137 at the memory limit), and images live in
podman's own storage (built or imported there the same way, from the same cached rootfs/wheels).
"""

from __future__ import annotations

import os
import resource
from pathlib import Path
from typing import ClassVar

from sabench.sandbox import SUBMISSION_TARGET
from sabench.sandbox.docker import SANDBOX_UID, DockerSandbox


def default_socket() -> str:
    """``$CONTAINER_HOST``, else rootful /run/podman/podman.sock, else the rootless one."""
    env = os.environ.get("CONTAINER_HOST")
    if env:
        return env
    candidates = [Path("/run/podman/podman.sock")]
    runtime_dir = os.environ.get("XDG_RUNTIME_DIR")
    if runtime_dir:
        candidates.append(Path(runtime_dir) / "podman" / "podman.sock")
    for path in candidates:
        if path.exists():
            return f"unix://{path}"
    return f"unix://{candidates[-1] if os.geteuid() != 0 else candidates[0]}"


class PodmanSandbox(DockerSandbox):
    """A container per run through podman's API service; see the docker backend."""

    name = "podman"
    engine: ClassVar[str] = "podman"
    isolation = (
        f"sandboxed (podman): uid {SANDBOX_UID}, no capabilities, no-new-privileges, "
        f"read-only root, only {SUBMISSION_TARGET} writable, no network"
    )
    oom_flag_reliable: ClassVar[bool] = False
    full_network: ClassVar[str] = "bridge"

    def ulimits(self, fsize: int, staged: bool) -> list[tuple[str, int, int]]:
        """None when /submission is a sized filesystem: podman drops its configured default
        ulimits as soon as one is given, for built-in ones (nofile 1048576) that fail with EPERM
        where root lacks CAP_SYS_RESOURCE. Without one (rootless), the file-size cap is needed:
        nofile and nproc go along, as this process (the same user as rootless podman) has them.
        Sparse giants are removed after the run either way."""
        if staged:
            return []
        out = [("fsize", fsize, fsize)]
        for name, res in (("nofile", resource.RLIMIT_NOFILE), ("nproc", resource.RLIMIT_NPROC)):
            soft, hard = resource.getrlimit(res)
            hard = 1 << 20 if hard == resource.RLIM_INFINITY else hard
            soft = hard if soft == resource.RLIM_INFINITY else min(soft, hard)
            out.append((name, soft, hard))
        return out

    def cgroup_paths(self, cid: str) -> list[str]:
        return [f"libpod_parent/libpod-{cid}", f"machine.slice/libpod-{cid}.scope"]

    def engine_url(self) -> str:
        return self.base_url or default_socket()

    def _probe(self) -> tuple[bool, str]:
        ok, why = super()._probe()
        if not ok and self.base_url is None and not os.environ.get("CONTAINER_HOST"):
            why += (
                "; start the API service: podman system service --time=0 "
                "unix:///run/podman/podman.sock (or set CONTAINER_HOST)"
            )
        return ok, why
