"""Agents reproduce a paper into a submission folder and record what happened in ``agent.json``.

Kinds implemented here: ``replay`` (copy an existing submission) and ``null`` (submit nothing).
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sabench import __version__
from sabench.io import atomic_path, write_json

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


def _resolve_template(template: str, paper: str, seed: str, repo: Path) -> Path:
    path = Path(template.format(paper=paper, seed=seed))
    return path if path.is_absolute() else repo / path


def replay(source: Path, submission: Path) -> tuple[str, str | None]:
    """Copy ``source`` into ``submission``; a missing source gives an empty submission."""
    with atomic_path(submission, directory=True) as tmp:
        if not source.is_dir():
            return "missing_source", f"source folder not found: {source}"
        shutil.copytree(source, tmp, symlinks=True, ignore=IGNORED, dirs_exist_ok=True)
    return "replayed", None


def run_agent(
    name: str,
    agent: dict[str, Any],
    paper: str,
    seed: str,
    submission: Path,
    record: Path,
    repo: Path,
) -> dict[str, Any]:
    """Produce ``submission`` and ``record`` for one run; failures are statuses, not exceptions."""
    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.monotonic()
    kind = agent["kind"]
    source: str | None = None
    if kind == "replay":
        src = _resolve_template(agent["path"], paper, seed, repo)
        source = str(src)
        status, error = replay(src, submission)
    elif kind == "null":
        with atomic_path(submission, directory=True):
            pass
        status, error = "empty", None
    else:
        raise ValueError(f"agent kind {kind!r} is not implemented")
    files = [p for p in submission.rglob("*") if p.is_file()]
    data = {
        "agent": name,
        "paper": paper,
        "seed": seed,
        "kind": kind,
        "status": status,
        "steps": 0,
        "wall_s": round(time.monotonic() - t0, 3),
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cost_usd": 0.0,
        "model": agent.get("model"),
        "error": error,
        "source": source,
        "n_files": len(files),
        "submission_hash": submission_hash(submission),
        "config": {k: v for k, v in agent.items() if k != "api_key"},
        "started_at": started,
        "sabench_version": __version__,
    }
    write_json(record, data)
    return data


def main(argv: list[str] | None = None) -> int:
    """Run one agent on one paper; the workflow's reproduce rule calls this too."""
    from sabench.grid import load_agents
    from sabench.steps import step

    parser = argparse.ArgumentParser(description="Run one agent on one paper into a run folder.")
    parser.add_argument("agent")
    parser.add_argument("paper")
    parser.add_argument("--seed", default="0")
    parser.add_argument("--agents-file", type=Path, default=Path("config/agents.yaml"))
    parser.add_argument("--repo", type=Path, default=Path.cwd(), help="base of relative paths")
    parser.add_argument("--out", type=Path, required=True, help="run folder")
    args = parser.parse_args(argv)
    with step(None, "reproduce") as log:
        agents = load_agents(args.agents_file)
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
        )
        if data["error"]:
            log.warning("%s", data["error"])
    print(f"{args.agent}/{args.paper}/{args.seed}: {data['status']} ({data['n_files']} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
