"""How a sandbox starts an agent behind its model gateway: the in-sandbox forwarder first."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sabench.gateway.server import FORWARDER, GATEWAY_TARGET, SOCKET_NAME, Gateway
from sabench.sandbox import Mount, Sandbox

#: Upstream failures (LLMError kinds) that are the provider's doing: the run is a fault, redone.
FAULT_KINDS = ("connection", "timeout", "server", "auth", "config", "rate_limit")


@dataclass
class Launch:
    """How a sandbox starts the agent behind the gateway: its command (or, under docker and
    podman, the launcher that runs the image's entrypoint), mounts and environment."""

    command: list[str]
    mounts: list[Mount] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)


def launch(gateway: Gateway, backend: Sandbox, argv: list[str], start: list[str]) -> Launch:
    """The agent's ``argv`` started by the in-sandbox forwarder. The gateway's folder (its socket
    and forward.py) is mounted read-only at :data:`GATEWAY_TARGET`; the local backend, which
    shows no mounts, gets its host path. ``start``: the sandbox shell's ``exec`` (a forwarder the
    sandbox cannot start exits 127, an ``agent_setup`` fault)."""
    local = backend.name == "local"
    folder = str(gateway.folder) if local else GATEWAY_TARGET
    forwarder = [
        "python3",
        "-I",
        f"{folder}/{FORWARDER.name}",
        f"{folder}/{SOCKET_NAME}",
        f"{gateway.settings.grace_s:g}",
        "--",
    ]
    mounts = [] if local else [Mount(gateway.folder, GATEWAY_TARGET)]
    env = {
        "SABENCH_GATEWAY_TOKEN": gateway.token,
        "SABENCH_GATEWAY_MODEL": gateway.settings.route.model,
    }
    if backend.keeps_entrypoint:
        return Launch(list(argv), mounts, env, {"launcher": [*start, *forwarder]})
    return Launch([*start, *forwarder, *argv], mounts, env)
