"""Agents reproduce a paper into a submission folder and record what happened in ``agent.json``.

Kinds implemented here: ``replay`` (copy an existing submission) and ``null`` (submit nothing).
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sabench import __version__
from sabench.faults import announce_fault, clear_fault, record_fault
from sabench.io import atomic_path, write_json
from sabench.twins import is_twin, original_of

#: Folders never copied from a replayed submission: VCS data and caches say nothing about the code.
IGNORED = shutil.ignore_patterns(".git", "__pycache__", "*.pyc", ".ipynb_checkpoints")


def submission_hash(root: Path) -> str:
    """Content hash of a submission: relative paths and file bytes, order-independent."""
    digest = hashlib.sha256()
    if root.is_dir():
        for path in sorted(p for p in root.rglob("*") if p.is_file() or p.is_symlink()):
            rel = path.relative_to(root).as_posix()
            digest.update(rel.encode() + b"\0")
            if path.is_symlink():
                digest.update(b"link:" + str(path.readlink()).encode())
            else:
                digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def resolve_template(template: str, paper: str, seed: str, repo: Path) -> Path:
    """A replay template's folder or archive for one run; relative to ``repo``. A canary twin
    without a submission of its own replays its original's: code written before the twin
    existed cannot know the twin's numbers, so such a run is the canary's honest control."""
    path = Path(template.format(paper=paper, seed=seed))
    path = path if path.is_absolute() else repo / path
    if is_twin(paper) and not path.exists():
        return resolve_template(template, original_of(paper), seed, repo)
    return path


def replay(source: Path, submission: Path) -> tuple[str, str | None]:
    """Copy ``source`` into ``submission``; a missing source gives an empty submission."""
    with atomic_path(submission, directory=True) as tmp:
        if not source.is_dir():
            return "missing_source", f"source folder not found: {source}"
        shutil.copytree(source, tmp, symlinks=True, ignore=IGNORED, dirs_exist_ok=True)
    return "replayed", None


def replay_archive(archive: Path, member: str, submission: Path) -> tuple[str, str | None, list]:
    """Extract folder ``member`` of ``archive`` into ``submission`` (see
    :mod:`sabench.peer_data.archive`); a missing archive or member gives an empty submission.
    Returns (status, error, refused members as "name: why")."""
    from sabench.peer_data.archive import extract_member

    with atomic_path(submission, directory=True) as tmp:
        if not archive.is_file():
            return "missing_source", f"archive not found: {archive}", []
        done = extract_member(archive, member, tmp)
        refused = [f"{name}: {why}" for name, why in done.refused]
        if not done.found:
            return "missing_source", f"{archive} has no folder {member!r}", refused
    return "replayed", None, refused


MODEL_KINDS = ("basic", "pipeline", "command")


def missing_source_line(
    name: str, paper: str, seed: str, agent: dict[str, Any], why: str | None
) -> str:
    """What a replay with no submission for the paper means, in one line (its log, the workflow's
    start): not drift, a run that does not exist."""
    if agent.get("missing_source") == "zero":
        return f"agent {name} has no submission for {paper}/{seed} ({why}): scored 0 (missing_source: zero)"
    return (
        f"agent {name} has no submission for {paper}/{seed} ({why}): left out of its scores and "
        f"counted in coverage (missing_source); list the papers it has in its papers: setting"
    )


def run_model_agent(
    agent: dict[str, Any],
    paper: str,
    seed: str,
    view: Path | None,
    submission: Path,
    transcript: Path,
    runtime: dict[str, Any],
    repo: Path | None = None,
) -> Any:
    """Run a model-driven agent on the GPUs it asks for (imported only here: the basic and pipeline
    kinds pull in the LLM layer). ``repo``: the base of a command agent's relative mounts.

    The agent's GPUs are held for the whole run with the same device locks as executions
    (:func:`sabench.sandbox.gpu.allocate`), so two agents asking for one GPU each on a multi-GPU
    host get different devices. GPUs this host cannot give are a fault (``sandbox_error``), never
    a run without them.
    """
    from sabench.agents.basic import AgentOutcome
    from sabench.sandbox.gpu import NoGpuError, allocate

    if view is None or not view.is_dir():
        raise ValueError(f"agent kind {agent['kind']!r} needs the paper's agent view")
    try:
        with allocate(agent.get("gpus", 0), owner=f"{paper}/{seed}") as gpu_ids:
            if agent["kind"] == "command":
                from sabench.agents.command import run_command

                log_path = transcript.with_name("agent-command.log")
                outcome = run_command(
                    agent,
                    paper,
                    seed,
                    view,
                    submission,
                    log_path,
                    runtime,
                    gpu_ids=gpu_ids,
                    repo=repo,
                )
            else:
                if agent["kind"] == "basic":
                    from sabench.agents.basic import run_basic as run
                else:
                    from sabench.agents.pipeline import run_pipeline as run
                outcome = run(
                    agent, paper, seed, view, submission, transcript, runtime, gpu_ids=gpu_ids
                )
    except NoGpuError as exc:
        return AgentOutcome(
            status="fault", fault="sandbox_error", error=str(exc)[:500], model=agent.get("model")
        )
    if gpu_ids:
        outcome.extra["gpu_ids"] = gpu_ids
    return outcome


def run_agent(
    name: str,
    agent: dict[str, Any],
    paper: str,
    seed: str,
    submission: Path,
    record: Path,
    repo: Path,
    view: Path | None = None,
    runtime: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Produce ``submission`` and ``record`` for one run; failures are statuses, not exceptions.

    Model-driven kinds (basic, pipeline) need the paper's agent ``view`` and the ``runtime``
    settings of the sandbox their tools run in; they also write transcript.jsonl beside ``record``.
    """
    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.monotonic()
    kind = agent["kind"]
    source: str | None = None
    outcome = None
    refused: list[str] = []
    if kind == "replay" and "archive" in agent:
        archive = resolve_template(agent["archive"], paper, seed, repo)
        member = str(agent.get("member", "")).format(paper=paper, seed=seed)
        source = f"{archive}:{member}"
        status, error, refused = replay_archive(archive, member, submission)
    elif kind == "replay":
        src = resolve_template(agent["path"], paper, seed, repo)
        source = str(src)
        status, error = replay(src, submission)
    elif kind == "null":
        with atomic_path(submission, directory=True):
            pass
        status, error = "empty", None
    elif kind in MODEL_KINDS:
        outcome = run_model_agent(
            agent,
            paper,
            seed,
            view,
            submission,
            record.parent / "transcript.jsonl",
            runtime or {},
            repo,
        )
        status, error = outcome.status, outcome.error or outcome.limit
        from sabench.agents.command import blacklist_hits

        logs = [record.parent / n for n in ("transcript.jsonl", "agent-command.log")]
        outcome.extra["blacklist_hits"] = blacklist_hits(view, *logs)
    else:
        raise ValueError(f"agent kind {kind!r} is not implemented")
    if status == "missing_source":
        print(f"warning: {missing_source_line(name, paper, seed, agent, error)}", file=sys.stderr)
    files = [p for p in submission.rglob("*") if p.is_file()] if submission.is_dir() else []
    data = {
        "agent": name,
        "paper": paper,
        "seed": seed,
        "kind": kind,
        "status": status,
        "steps": outcome.steps if outcome else 0,
        "wall_s": round(time.monotonic() - t0, 3),
        "prompt_tokens": outcome.prompt_tokens if outcome else 0,
        "completion_tokens": outcome.completion_tokens if outcome else 0,
        "cost_usd": round(outcome.cost_usd, 6) if outcome else 0.0,
        "cached_calls": outcome.cached_calls if outcome else 0,
        "limit": outcome.limit if outcome else None,
        **(outcome.extra if outcome else {}),
        "model": agent.get("model"),
        "error": error,
        "source": source,
        "refused": refused,
        "n_files": len(files),
        "submission_hash": submission_hash(submission),
        "config": {k: v for k, v in agent.items() if k != "api_key"},
        "started_at": started,
        "sabench_version": __version__,
    }
    if status == "fault":
        # not a record of the run: the run is incomplete until the same command redoes it
        data["fault"] = outcome.fault if outcome else "internal_error"
        record_fault(record.parent, "reproduce", data["fault"], str(error or ""), record=data)
        record.unlink(missing_ok=True)
        return data
    clear_fault(record.parent, "reproduce")
    write_json(record, data)
    return data


def main(argv: list[str] | None = None) -> int:
    """Run one agent on one paper; the workflow's reproduce rule calls this too."""
    from sabench.grid import load_agents
    from sabench.steps import ArgumentParser, json_object, step

    parser = ArgumentParser(description="Run one agent on one paper into a run folder.")
    parser.add_argument(
        "agent", nargs="?", help="default: from --out, <results>/runs/<agent>/<paper>/<seed>"
    )
    parser.add_argument("paper", nargs="?", help="default: from --out")
    parser.add_argument("--seed", help="default: from --out when agent and paper are, else 0")
    parser.add_argument("--agents-file", type=Path, default=Path("config/agents.yaml"))
    parser.add_argument(
        "--spec", type=json_object, help="the agent's settings as JSON (instead of --agents-file)"
    )
    parser.add_argument("--repo", type=Path, default=Path.cwd(), help="base of relative paths")
    parser.add_argument(
        "--agent-view",
        type=Path,
        help="the paper as the agent sees it (/paper; default: <results>/papers/<paper>/agent_view "
        "beside --out, when there is one)",
    )
    parser.add_argument(
        "--runtime",
        type=json_object,
        default={},
        help="sandbox settings for the agent's tools (JSON)",
    )
    parser.add_argument("--out", type=Path, required=True, help="run folder")
    args = parser.parse_args(argv)
    from sabench.contracts import paper_folder, run_of_folder
    from sabench.locks import job_guard

    # the workflow names the run folder only: the run and the paper's view follow from it
    if args.agent is None or args.paper is None:
        if args.agent is not None:
            parser.error("give both agent and paper, or neither (they come from --out)")
        args.agent, args.paper, seed = run_of_folder(args.out)
        args.seed = seed if args.seed is None else args.seed
    args.seed = "0" if args.seed is None else args.seed
    if args.agent_view is None:
        view = paper_folder(args.out)
        args.agent_view = view / "agent_view" if view and (view / "agent_view").is_dir() else None
    with step(None, "reproduce") as log, job_guard(args.out, "reproduce"):
        agents = {args.agent: args.spec} if args.spec else load_agents(args.agents_file)
        if args.agent not in agents:
            from sabench.errors import UserError

            raise UserError(args.agents_file, args.agent, "agent not defined")
        data = run_agent(
            args.agent,
            agents[args.agent],
            args.paper,
            args.seed,
            args.out / "submission",
            args.out / "agent.json",
            args.repo,
            args.agent_view,
            args.runtime,
        )
        if data["error"]:
            log.warning("%s", data["error"])
        for refused in data["refused"]:
            log.warning("refused archive member %s", refused)
    if data["status"] == "fault":
        return announce_fault(args.out, "reproduce", data["fault"], str(data["error"]))
    print(f"{args.agent}/{args.paper}/{args.seed}: {data['status']} ({data['n_files']} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
