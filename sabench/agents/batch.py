"""Replay and null agents of one paper in one process (the workflow's replay rule).

Copying a submission takes milliseconds; a job per run would spend its time starting up
(docs/architecture.md, "Batched steps"). Each run still gets its own folder, ``agent.json`` and
``agent.log``. Copies keep the source's file times, so the judges' cache (sabench.judges.batch)
sees a replayed-again submission as unchanged.
"""

from __future__ import annotations

import sys
from pathlib import Path

from sabench.agents import run_agent


def replay_batch(specs: dict[str, dict], records: list[Path], repo: Path) -> dict[str, int]:
    """Replay each run whose ``agent.json`` is in ``records`` (``.../<agent>/<paper>/<seed>/``,
    the agent's settings in ``specs``); the count of runs by status."""
    from sabench.locks import job_guard

    counts: dict[str, int] = {}
    for record in records:
        run_dir = record.parent
        agent, paper, seed = run_dir.parts[-3:]
        with job_guard(run_dir, "reproduce"):
            data = run_agent(agent, specs[agent], paper, seed, run_dir / "submission", record, repo)
        lines = [f"{agent}/{paper}/{seed}: {data['status']} ({data['n_files']} files)"]
        lines += [f"warning: {data['error']}"] if data["error"] else []
        lines += [f"warning: refused archive member {r}" for r in data["refused"]]
        (run_dir / "agent.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
        print("\n".join(lines), flush=True)
        counts[data["status"]] = counts.get(data["status"], 0) + 1
    return counts


def main(argv: list[str] | None = None) -> int:
    """Replay runs of replay and null agents; the workflow's replay rule calls this."""
    from sabench.grid import batched_agent
    from sabench.steps import ArgumentParser, json_object, step

    parser = ArgumentParser(description="Replay and null agents into their run folders.")
    parser.add_argument(
        "records",
        type=Path,
        nargs="+",
        help="the runs' agent.json to write: results/runs/<agent>/<paper>/<seed>/agent.json",
    )
    parser.add_argument(
        "--specs", type=json_object, required=True, help="agent name -> settings (JSON)"
    )
    parser.add_argument("--repo", type=Path, default=Path.cwd(), help="base of relative paths")
    args = parser.parse_args(argv)
    for record in args.records:
        agent = record.parent.parts[-3] if len(record.parent.parts) >= 3 else ""
        spec = args.specs.get(agent)
        if spec is None or not batched_agent(spec):
            parser.error(f"{record}: agent {agent!r} is not a replay or null agent of --specs")
    with step(None, "reproduce"):
        counts = replay_batch(args.specs, args.records, args.repo)
    print(f"{len(args.records)} run(s) replayed: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
