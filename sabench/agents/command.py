"""The ``command`` scaffold: an external agent (OpenHands, aider, mini-swe-agent, a lab's own) run
from its own image with its own command line.

Contract, the same on every backend:
- the paper is read-only at ``/paper`` (paper.md, addendum.md, assets, blacklist.txt);
- the agent writes its repository to ``/submission`` (its working directory), with reproduce.sh;
- it gets only the environment variables its config names (``env``: names read from the host, e.g.
  the API key variable), plus ``SABENCH_PAPER=/paper``, ``SABENCH_SUBMISSION=/submission``,
  ``SABENCH_SEED`` and ``SABENCH_TIME_LIMIT_S``;
- no network unless its config says ``network: full`` (recorded in agent.json with a warning);
- stdout and stderr go to agent.log beside agent.json.
"""

from __future__ import annotations

import logging
import os
import shlex
from pathlib import Path
from typing import Any

from sabench.agents.basic import AgentOutcome
from sabench.errors import UserError
from sabench.io import atomic_path
from sabench.sandbox import Mount, SandboxSpec, get_backend
from sabench.sandbox.settings import resolve_runtime

log = logging.getLogger("sabench")
STATUS_OF = {"ok": "submitted", "timeout": "limit"}


def agent_env(agent: dict[str, Any], seed: str, time_limit_s: float) -> dict[str, str]:
    """Only what the config names; a named variable missing on the host is an error."""
    env = {
        "SABENCH_PAPER": "/paper",
        "SABENCH_SUBMISSION": "/submission",
        "SABENCH_SEED": seed,
        "SABENCH_TIME_LIMIT_S": str(int(time_limit_s)),
    }
    for name in agent.get("env", []):
        if name not in os.environ:
            raise UserError(None, "env", f"environment variable {name} is not set on this host")
        env[name] = os.environ[name]
    return env


def run_command(
    agent: dict[str, Any],
    paper: str,
    seed: str,
    view: Path,
    submission: Path,
    log_path: Path,
    runtime: dict[str, Any],
    gpu_ids: list[str] | None = None,
) -> AgentOutcome:
    """Run the agent's command in a sandbox whose writable folder becomes the submission.

    ``gpu_ids``: the devices held for this agent (``sabench.sandbox.gpu.allocate``); without
    them the backend is given the agent's GPU count.
    """
    command = agent["command"]
    argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
    time_limit = float(agent.get("time_limit_s", 3600))
    network = agent.get("network", "none")
    outcome = AgentOutcome(model=agent.get("model"))
    if network != "none":
        log.warning("agent network is %r: the agent can reach the internet", network)
        outcome.extra["network_warning"] = f"network {network!r} was allowed by the agent's config"
    runtime = resolve_runtime(runtime)
    backend = get_backend(runtime["backend"])
    env_path = runtime["python_env"]
    with atomic_path(submission, directory=True) as tmp:
        spec = SandboxSpec(
            command=argv,
            workdir=tmp,
            ro_mounts=[Mount(view, "/paper")],
            env=agent_env(agent, seed, time_limit),
            time_limit_s=time_limit,
            mem_mb=int(agent.get("mem_mb", runtime["mem_mb"])),
            pids=int(runtime["pids"]),
            output_limit_mb=int(runtime["output_limit_mb"]),
            network=network,
            gpus=gpu_ids or agent.get("gpus", 0),
            image=agent.get("image"),
            python_env=Path(env_path) if env_path and backend.needs_python_env else None,
        )
        result = backend.run(spec, log_path)
        if result.status == "ok" and not any(tmp.iterdir()):
            log.warning(
                "agent command exited 0 but left /submission empty for %s seed %s (see %s)",
                paper,
                seed,
                log_path,
            )
    outcome.status = STATUS_OF.get(result.status, "error")
    outcome.steps = 1
    if result.status == "sandbox_error":  # the sandbox failed the agent, not the other way round
        outcome.status, outcome.fault = "fault", "sandbox_error"
    if result.status == "timeout":
        outcome.limit = f"time limit ({time_limit:.0f}s)"
    elif result.status != "ok":
        outcome.error = f"{result.status} (exit code {result.exit_code}): {result.message}"[:500]
    outcome.extra.update(backend=backend.name, exit_code=result.exit_code, image=agent.get("image"))
    return outcome


def blacklist_hits(view: Path, *texts: Path) -> list[str]:
    """URLs of the paper's blacklist.txt (PaperBench: the authors' own code) found in the agent's
    transcript or logs: the run is flagged, not failed."""
    blacklist = view / "blacklist.txt"
    if not blacklist.is_file():
        return []
    urls = [u.strip() for u in blacklist.read_text(errors="replace").splitlines() if u.strip()]
    urls = [u for u in urls if not u.startswith("#")]
    found: set[str] = set()
    for path in texts:
        if path.is_file():
            content = path.read_text(errors="replace")
            found.update(u for u in urls if u.rstrip("/") in content)
    return sorted(found)
