"""The paper and /submission as the workflow makes them, for every backend's access test.

The view comes from sabench's own ingest (its atomic writer), the submission from a ``command``
agent, the executed copy from the execute step, all under a given umask and as this (root) user:
the sandbox user (uid 1000 in a container) must still read /paper and write /submission, and the
host must own, and a cluster group read, what comes out.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sabench.agents import run_agent
from sabench.execute import execute_run
from sabench.ingest import ingest_paper

REPO = Path(__file__).resolve().parents[1]
PAPER = REPO / "resources" / "papers" / "ridge-gd"
#: The agent copies the paper, and writes a reproduce.sh that reads it again and writes results.
AGENT_SCRIPT = (
    "set -e; cp /paper/paper.md got-paper.md; id -u > agent-uid.txt; "
    "printf 'set -e\\ncat got-paper.md > seen.md\\necho done > out/result.txt\\n' > reproduce.sh;"
    " mkdir out"
)


@contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def paper_agent_execute(
    tmp_path: Path, mask: int, runtime: dict[str, Any], agent: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Ingest, a command agent, execute: the records and the paths, as the workflow lays them."""
    results = tmp_path / "results"
    papers = results / "papers" / "ridge-gd"
    run = results / "runs" / "cmd" / "ridge-gd" / "0"
    with umask(mask):
        ingest_paper(PAPER, papers / "paper.md", papers / "paper.json", papers / "agent_view")
        spec = {"kind": "command", "command": ["sh", "-c", AGENT_SCRIPT], **(agent or {})}
        agent_record = run_agent(
            "cmd",
            spec,
            "ridge-gd",
            "0",
            run / "submission",
            run / "agent.json",
            REPO,
            papers / "agent_view",
            runtime,
        )
        execution = execute_run(
            run / "submission",
            run / "executed",
            run / "execution.json",
            run / "execution.log",
            {"time_limit_s": 60, "mem_mb": 512, "output_limit_mb": 64, **runtime},
        )
    return {
        "agent": agent_record,
        "execution": execution,
        "view": papers / "agent_view",
        "run": run,
        "results": results,
    }


def assert_read_and_written(out: dict[str, Any]) -> None:
    """The agent and reproduce.sh read the paper and wrote their folders."""
    paper = (out["view"] / "paper.md").read_text()
    agent_log = out["run"] / "agent-command.log"
    assert out["agent"]["status"] == "submitted", (out["agent"], agent_log.read_text())
    assert out["execution"]["status"] == "ok", (
        out["execution"],
        (out["run"] / "execution.log").read_text(),
    )
    submission, executed = out["run"] / "submission", out["run"] / "executed"
    assert (submission / "got-paper.md").read_text() == paper
    assert (executed / "seen.md").read_text() == paper
    assert (executed / "out" / "result.txt").read_text() == "done\n"


def assert_outputs_follow(out: dict[str, Any], mask: int) -> None:
    """Every output is the host user's and has the umask's mode (what sabench itself made), or
    at least the owner's read/write and the group's read (what the sandbox made, umask 022)."""
    made_here = [
        out["view"],
        out["view"] / "paper.md",
        out["view"].parent / "paper.json",
        out["run"] / "submission",
        out["run"] / "agent.json",
        out["run"] / "agent-command.log",
        out["run"] / "execution.json",
        out["run"] / "execution.log",
    ]
    for path in made_here:
        want = (0o777 if path.is_dir() else 0o666) & ~mask
        got = stat.S_IMODE(path.stat().st_mode)
        if path.is_relative_to(out["view"]):  # the paper may be opened wider, never narrower
            assert got & want == want, (path, oct(got))
        else:
            assert got == want, (path, oct(got), oct(want))
    for top in (out["run"] / "submission", out["run"] / "executed"):
        for path in [top, *top.rglob("*")]:
            st = path.lstat()
            assert st.st_uid == os.getuid(), (path, st.st_uid)
            if mask & 0o040 == 0:  # a group-readable umask: the group reads the results
                assert st.st_mode & 0o040, (path, oct(st.st_mode))
