"""The ``command`` scaffold: an external agent (OpenHands, aider, mini-swe-agent, a lab's own) run
from its own image with its own command line.

Contract, the same on every backend:
- the paper is read-only at ``/paper`` (paper.md, addendum.md, assets, blacklist.txt);
- the agent writes its repository to ``/submission`` (its working directory), with reproduce.sh;
- it gets only the environment variables its config names (``env``: names read from the host, e.g.
  the API key variable), plus ``SABENCH_PAPER=/paper``, ``SABENCH_SUBMISSION=/submission``,
  ``SABENCH_SEED`` and ``SABENCH_TIME_LIMIT_S``;
- no network unless its config says ``network: full`` (recorded in agent.json with a warning), or
  ``network: gateway``: one endpoint, the model gateway (:mod:`sabench.gateway`), which forwards
  to the agent's ``model`` with the key kept on the host, meters every call against the run's
  budget and records it in gateway_calls.parquet;
- its own code comes from its image (a container backend), or from host folders its config
  mounts read-only (``mounts``), or is installed by its command (docs/agents.md);
- stdout and stderr go to agent-command.log beside agent.json.

An agent that cannot start there (its command not found or not executable: exit 127 or 126; an
image the backend cannot run) did nothing: a fault (``agent_setup``), never a run scored 0. One
that ran and left nothing is the agent's doing, and scored.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

from sabench.agents.basic import AgentOutcome
from sabench.errors import UserError
from sabench.io import atomic_path
from sabench.sandbox import Mount, RunResult, Sandbox, SandboxSpec, get_backend
from sabench.sandbox.settings import resolve_runtime

log = logging.getLogger("sabench")
STATUS_OF = {"ok": "submitted", "timeout": "limit"}
#: The sandbox's shell starts the agent's command (``exec``: the command replaces it), so that a
#: command the sandbox lacks exits 127, and one it cannot execute 126, as a shell says it (bwrap
#: alone would say "execvp" and exit 1, as any failure of its own). Not under docker and podman: an
#: image's ENTRYPOINT takes the command as its arguments there, and a command the image lacks
#: fails the container's start (``sandbox_error``).
START = ["/bin/sh", "-c", 'exec "$@"', "agent"]
#: Exit statuses of a command that never started (a shell's: 126 not executable, 127 not found).
NOT_STARTED = (126, 127)
#: Where a fault's message sends the user.
HOW_TO_BRING_CODE = (
    "give it its code with mounts: (a host folder, read-only), an image, or an install step "
    "in its command (docs/agents.md)"
)


def agent_env(agent: dict[str, Any], seed: str, time_limit_s: float) -> dict[str, str]:
    """Only what the config names (``set_env``: values; ``env``: names read from the host); a
    named variable missing on the host is an error."""
    env = {
        **agent.get("set_env", {}),
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


def agent_mounts(agent: dict[str, Any], repo: Path) -> list[Mount]:
    """The host folders (or files) the agent's config shows it read-only (``mounts``), sources
    relative to ``repo``; checked where they are shown (``SandboxSpec``: a clean absolute target,
    not a system folder, not /paper or /submission, a source that exists)."""
    mounts = []
    for mount in agent.get("mounts", []):
        source = Path(mount["source"]).expanduser()
        mounts.append(Mount(source if source.is_absolute() else repo / source, mount["target"]))
    return mounts


def _last_words(log_path: Path) -> str:
    """The last line the agent's command wrote (its log without sabench's own lines)."""
    try:
        lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    said = [ln.strip() for ln in lines if ln.strip() and not ln.startswith("[sabench]")]
    return said[-1][:300] if said else ""


def _what_it_sees(backend: Sandbox, image: str | None) -> str:
    if backend.runs_images:
        return f"image {image}" if image else "the project's image"
    return "this host's system folders (/usr, /bin, /lib)"


def setup_fault(
    backend: Sandbox, image: str | None, exit_code: int | None, log_path: Path
) -> str | None:
    """Why the agent's command never started in its sandbox (a message), or None when it ran."""
    if exit_code not in NOT_STARTED:
        return None
    what = "not executable" if exit_code == 126 else "not found"
    said = _last_words(log_path)
    return (
        f"the agent's command could not start in its {backend.name} sandbox (exit {exit_code}, "
        f"{what}{': ' + said if said else ''}); it sees /paper, /submission, "
        f"{_what_it_sees(backend, image)} and its mounts: {HOW_TO_BRING_CODE}"
    )


def image_fault(backend: Sandbox, agent: dict[str, Any]) -> str | None:
    """An image the backend would not run (bwrap and local run the host's system), or None; an
    agent with ``requirements`` runs in its own Python env there instead."""
    image = agent.get("image")
    if not image or backend.runs_images or agent.get("requirements"):
        return None
    return (
        f"the agent's image {image} cannot run under the {backend.name} backend, which runs "
        "this host's system: set runtime.backend to docker, podman or apptainer, or drop image: "
        f"and {HOW_TO_BRING_CODE}"
    )


def run_command(
    agent: dict[str, Any],
    paper: str,
    seed: str,
    view: Path,
    submission: Path,
    log_path: Path,
    runtime: dict[str, Any],
    gpu_ids: list[str] | None = None,
    repo: Path | None = None,
) -> AgentOutcome:
    """Run the agent's command in a sandbox whose writable folder becomes the submission.

    ``gpu_ids``: the devices held for this agent (``sabench.sandbox.gpu.allocate``); without
    them the backend is given the agent's GPU count. ``repo``: the base of relative mount sources.
    """
    command = agent["command"]
    argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
    time_limit = float(agent.get("time_limit_s", 3600))
    network = agent.get("network", "none")
    outcome = AgentOutcome(model=agent.get("model"))
    if network == "full":
        log.warning("agent network is %r: the agent can reach the internet", network)
        outcome.extra["network_warning"] = f"network {network!r} was allowed by the agent's config"
    runtime = resolve_runtime(runtime)
    backend = get_backend(runtime["backend"])
    outcome.extra.update(backend=backend.name, image=agent.get("image"))
    unrunnable = image_fault(backend, agent)
    if unrunnable:
        outcome.status, outcome.fault, outcome.error = "fault", "agent_setup", unrunnable
        return outcome
    if agent.get("requirements") and backend.needs_python_env:
        try:
            runtime = {**runtime, "python_env": str(own_python_env(agent, repo or Path.cwd()))}
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            outcome.status, outcome.fault = "fault", "agent_setup"
            outcome.error = f"the agent's Python env could not be built: {exc}"[:500]
            return outcome
    if agent.get("npm"):
        from sabench.agents.setup import NPM_TARGET, agent_npm_folder

        try:
            folder = agent_npm_folder(agent, repo or Path.cwd())
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            outcome.status, outcome.fault = "fault", "agent_setup"
            outcome.error = f"the agent's npm packages could not be installed: {exc}"[:500]
            return outcome
        shown = {"source": str(folder), "target": NPM_TARGET}
        agent = {**agent, "mounts": [*agent.get("mounts", []), shown]}
    with contextlib.ExitStack() as stack:
        gateway = None
        if network == "gateway":
            from sabench.gateway.server import Gateway, GatewayError
            from sabench.gateway.settings import GatewaySettings

            try:
                gateway = stack.enter_context(Gateway(GatewaySettings.from_agent(agent)))
            except GatewayError as exc:
                outcome.status, outcome.fault, outcome.error = "fault", "sandbox_error", str(exc)
                return outcome
        result, transcript = _run_in_sandbox(
            agent, backend, argv, seed, view, submission, log_path, runtime, gpu_ids, repo, gateway
        )
        if gateway is not None:
            gateway.close()  # the sandbox is gone: no request is in flight
            gateway.write_record(log_path.parent)
            metered(outcome, gateway)
    if agent.get("transcript"):
        outcome.extra["transcript"] = transcript
    outcome.status = STATUS_OF.get(result.status, "error")
    outcome.steps = 1
    outcome.extra["exit_code"] = result.exit_code
    if result.status == "sandbox_error":  # the sandbox failed the agent, not the other way round
        outcome.status, outcome.fault = "fault", "sandbox_error"
    if result.status == "timeout":
        outcome.limit = f"time limit ({time_limit:.0f}s)"
    elif result.status != "ok":
        outcome.error = f"{result.status} (exit code {result.exit_code}): {result.message}"[:500]
    not_started = setup_fault(backend, agent.get("image"), result.exit_code, log_path)
    if result.status == "failed" and not_started:  # it did nothing: no run to score
        outcome.status, outcome.fault, outcome.error = "fault", "agent_setup", not_started
    elif gateway is not None and outcome.status != "fault":
        gateway_ending(outcome, gateway)
    return outcome


def _run_in_sandbox(
    agent: dict[str, Any],
    backend: Sandbox,
    argv: list[str],
    seed: str,
    view: Path,
    submission: Path,
    log_path: Path,
    runtime: dict[str, Any],
    gpu_ids: list[str] | None,
    repo: Path | None,
    gateway: Any,
) -> tuple[RunResult, str | None]:
    """The agent's command in its sandbox, behind the model gateway when it has one; and the name
    of its transcript moved into the run folder (``transcript:``), if it wrote one."""
    time_limit = float(agent.get("time_limit_s", 3600))
    network = agent.get("network", "none")
    command = argv if backend.keeps_entrypoint else [*START, *argv]
    mounts, env, options = [], agent_env(agent, seed, time_limit), {}
    if gateway is not None:
        from sabench.gateway.launch import launch

        started = launch(gateway, backend, argv, START)
        command, mounts, options = started.command, started.mounts, started.options
        env.update(started.env)
        network = "none"  # the gateway's socket is the one way out
    env_path = runtime["python_env"]
    transcript = None
    with atomic_path(submission, directory=True) as tmp:
        spec = SandboxSpec(
            command=command,
            workdir=tmp,
            ro_mounts=[Mount(view, "/paper"), *agent_mounts(agent, repo or Path.cwd()), *mounts],
            env=env,
            time_limit_s=time_limit,
            mem_mb=int(agent.get("mem_mb", runtime["mem_mb"])),
            pids=int(runtime["pids"]),
            output_limit_mb=int(runtime["output_limit_mb"]),
            network=network,
            gpus=gpu_ids or agent.get("gpus", 0),
            image=agent.get("image") if backend.runs_images else None,
            python_env=Path(env_path) if env_path and backend.needs_python_env else None,
            options=options,
        )
        result = backend.run(spec, log_path)
        if agent.get("transcript"):  # the agent's, never part of its submission
            from sabench.agents.setup import capture_transcript

            transcript = capture_transcript(agent["transcript"], tmp, log_path.parent)
        if result.status == "ok" and not any(tmp.iterdir()):
            log.warning(
                "agent command exited 0 but left /submission empty (seed %s; see %s)",
                seed,
                log_path,
            )
    return result, transcript


def own_python_env(agent: dict[str, Any], repo: Path) -> Path:
    """The Python env of an agent with ``requirements`` (bwrap): the sandbox's pins and its own."""
    from sabench.agents.setup import agent_python_env
    from sabench.sandbox.images import SANDBOX_REQUIREMENTS

    return agent_python_env(agent, repo, SANDBOX_REQUIREMENTS)


def metered(outcome: AgentOutcome, gateway: Any) -> None:
    """The gateway's totals into the agent's record (agent.json: tokens, cost, ``gateway``)."""
    totals = gateway.summary()
    outcome.prompt_tokens = totals["prompt_tokens"]
    outcome.completion_tokens = totals["completion_tokens"]
    outcome.cost_usd = totals["cost_usd"]
    outcome.extra["gateway"] = totals


def gateway_ending(outcome: AgentOutcome, gateway: Any) -> None:
    """A run whose budget ran out ends as ``limit`` (what it wrote is kept and scored); one whose
    model calls failed at the provider is a fault (redone, never scored)."""
    from sabench.faults import LLM_ERROR_CAUSES
    from sabench.gateway.launch import FAULT_KINDS
    from sabench.gateway.server import CALLS_FILE

    kinds = gateway.upstream_failures()
    if "budget" in kinds:  # the grid's llm_budget_usd: the run is not finished (docs/llm.md)
        raise UserError(None, "llm_budget_usd", gateway.budget_message())
    failed = [kind for kind in kinds if kind in FAULT_KINDS]
    if failed:
        outcome.status, outcome.fault = "fault", LLM_ERROR_CAUSES[failed[0]]
        outcome.error = (
            f"{len(failed)} model call(s) failed at the provider through the gateway "
            f"({failed[0]}; see {CALLS_FILE})"
        )
    elif gateway.limit:
        outcome.status, outcome.limit, outcome.error = "limit", gateway.limit, None


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
