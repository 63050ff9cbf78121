"""What a container is made of besides its command: its labels (which run, which owner process),
its isolation (each relaxable, with a warning), its user and its GPU device requests."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from sabench.sandbox import ISOLATION_KEYS, SandboxSpec
from sabench.sandbox.common import SANDBOX_UID
from sabench.sandbox.gpu import normalize_request

LABEL_RUN = "org.sabench.run"
LABEL_OWNER = "org.sabench.owner"
LABEL_BACKEND = "org.sabench.backend"
ISOLATION_WARNINGS = {
    "non_root": "the command runs as root inside the container",
    "drop_capabilities": "the container keeps the engine's default capabilities",
    "no_new_privileges": "setuid binaries can raise privileges inside the container",
    "read_only_root": "the container's root filesystem is writable",
    "read_only_paper": "the paper mount /paper is writable (and shared with other runs)",
}


def _proc_start(pid: int) -> str:
    """The process's start time in clock ticks (tells a reused PID apart)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def owner_label(pid: int | None = None) -> str:
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}:{pid}:{_proc_start(pid)}"


def owner_alive(label: str) -> bool:
    """Whether the process named by an owner label still runs (True for other hosts: not ours)."""
    host, _, rest = label.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return True
    return _proc_start(int(pid_text)) == start and start != ""


def run_label(workdir: Path) -> str:
    """``agent/paper/seed`` for a workflow run (``.../runs/A/P/S/executed``), else the path."""
    parts = workdir.resolve().parts
    if len(parts) >= 5 and parts[-5] == "runs":
        return "/".join(parts[-4:-1])
    return str(workdir.resolve())


def effective_isolation(spec: SandboxSpec) -> dict[str, bool]:
    given = dict(getattr(spec, "isolation", None) or {})
    return {key: bool(given.get(key, True)) for key in ISOLATION_KEYS}


def weakened(spec: SandboxSpec) -> list[str]:
    """What the spec relaxes, as warnings (network too)."""
    iso = effective_isolation(spec)
    out = [ISOLATION_WARNINGS[k] for k in ISOLATION_KEYS if not iso[k]]
    if spec.network != "none":
        out.append(f"network={spec.network}: the container can reach the network")
    return out


def device_requests(gpus: Any) -> list[dict[str, Any]]:
    """Docker device requests for ``spec.gpus`` (a count, ``"all"`` or device ids), as the CLI's
    ``--gpus`` makes them: the NVIDIA container toolkit shows exactly these devices."""
    count, ids = normalize_request(gpus)
    if count == 0:
        return []
    request: dict[str, Any] = {"Driver": "", "Capabilities": [["gpu"]], "Options": {}}
    if ids is not None:
        request.update(Count=0, DeviceIDs=ids)
    else:
        request.update(Count=count, DeviceIDs=None)
    return [request]


def spec_option(spec: SandboxSpec, key: str) -> Any:
    options = getattr(spec, "options", None) or {}
    return options.get(key)


def sandbox_ids() -> tuple[int, int]:
    """The user the container runs as: 1000 when we are root, else our own ids (files stay ours)."""
    if os.geteuid() == 0:
        return SANDBOX_UID, SANDBOX_UID
    return os.getuid(), os.getgid()
