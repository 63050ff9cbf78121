"""Replay and null agents: what they copy, what they record, and a missing source as a status;
command agents that cannot start in their sandbox (a fault, never a score) and the read-only
mounts that bring their code (real bwrap sandboxes)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sabench.agents import run_agent, submission_hash
from sabench.faults import read_fault

REPO = Path(__file__).resolve().parents[1]
#: An agent's own code: it writes a submission that runs.
RUN_SH = (
    "#!/usr/bin/env bash\n"
    "cp /paper/paper.md notes.md\n"
    "printf 'echo {}> results.json\\n' > reproduce.sh\n"
    "touch /agent/written 2>/dev/null && echo agent-code-writable || echo agent-code-read-only\n"
)


def _run(tmp_path: Path, agent: dict, paper: str = "p", seed: str = "0") -> tuple[dict, Path]:
    out = tmp_path / "run"
    record = run_agent("a", agent, paper, seed, out / "submission", out / "agent.json", tmp_path)
    assert json.loads((out / "agent.json").read_text()) == record
    return record, out / "submission"


def test_replay_copies_and_hashes(tmp_path: Path) -> None:
    src = tmp_path / "subs" / "p" / "1"
    (src / "pkg").mkdir(parents=True)
    (src / "reproduce.sh").write_text("echo hi\n")
    (src / "pkg" / "m.py").write_text("x = 1\n")
    (src / ".git").mkdir()
    (src / ".git" / "HEAD").write_text("ref")
    (src / "pkg" / "__pycache__").mkdir()
    record, sub = _run(tmp_path, {"kind": "replay", "path": "subs/{paper}/{seed}"}, seed="1")
    assert record["status"] == "replayed" and record["n_files"] == 2
    assert sorted(p.relative_to(sub).as_posix() for p in sub.rglob("*") if p.is_file()) == [
        "pkg/m.py",
        "reproduce.sh",
    ]
    assert record["submission_hash"] == submission_hash(sub)
    before = record["submission_hash"]
    (src / "pkg" / "m.py").write_text("x = 2\n")
    record2, _ = _run(tmp_path, {"kind": "replay", "path": "subs/{paper}/{seed}"}, seed="1")
    assert record2["submission_hash"] != before


def test_missing_source_is_a_status(tmp_path: Path) -> None:
    record, sub = _run(tmp_path, {"kind": "replay", "path": "nowhere/{paper}"})
    assert record["status"] == "missing_source" and "nowhere/p" in record["error"]
    assert sub.is_dir() and not any(sub.iterdir())


def test_null_agent_submits_nothing(tmp_path: Path) -> None:
    record, sub = _run(tmp_path, {"kind": "null"})
    assert record["status"] == "empty" and record["n_files"] == 0 and not any(sub.iterdir())
    assert record["submission_hash"] == submission_hash(tmp_path / "does-not-exist")


# --------------------------------------------------------------------------- command agents


@pytest.fixture
def runtime(sandbox_env: Path) -> dict:
    return {"backend": "bwrap", "python_env": str(sandbox_env), "time_limit_s": 60}


def _command(tmp_path: Path, agent: dict, runtime: dict) -> tuple[dict, Path]:
    view = tmp_path / "agent_view"
    view.mkdir(exist_ok=True)
    shutil.copy(REPO / "resources" / "papers" / "ridge-gd" / "paper.md", view / "paper.md")
    out = tmp_path / "run"
    record = run_agent(
        "mine",
        {"kind": "command", **agent},
        "ridge-gd",
        "0",
        out / "submission",
        out / "agent.json",
        tmp_path,
        view,
        runtime,
    )
    return record, out


def _agent_code(tmp_path: Path, mode: int = 0o755) -> Path:
    code = tmp_path / "agent-code"
    code.mkdir()
    (code / "run.sh").write_text(RUN_SH)
    (code / "run.sh").chmod(mode)
    return code


@pytest.mark.bwrap
@pytest.mark.parametrize(
    ("command", "exit_code", "said"),
    [
        # the case: a script on the host, which the sandbox does not show
        (["bash", "{code}/run.sh"], 127, "No such file or directory"),
        (["{code}/run.sh"], 127, "not found"),
        (["/agent/run.sh"], 126, "Permission denied"),  # mounted, but not executable
    ],
)
def test_an_agent_that_cannot_start_is_a_fault_not_a_run(
    tmp_path: Path, runtime: dict, command: list[str], exit_code: int, said: str
) -> None:
    code = _agent_code(tmp_path, mode=0o644)
    agent = {
        "command": [part.format(code=code) for part in command],
        "mounts": [{"source": "agent-code", "target": "/agent"}],
    }
    record, out = _command(tmp_path, agent, runtime)
    assert (record["status"], record["fault"]) == ("fault", "agent_setup"), record
    assert not (out / "agent.json").exists(), "no record of a finished run: nothing to score"
    fault = read_fault(out, "reproduce")
    assert fault is not None and fault["cause"] == "agent_setup"
    message = fault["message"]
    assert f"exit {exit_code}" in message and said in message, message
    assert "mounts:" in message and "docs/agents.md" in message
    assert fault["record"]["exit_code"] == exit_code


@pytest.mark.bwrap
def test_mounts_bring_the_agents_code_read_only(tmp_path: Path, runtime: dict) -> None:
    _agent_code(tmp_path)
    agent = {
        "command": ["bash", "/agent/run.sh"],
        "mounts": [{"source": "agent-code", "target": "/agent"}],  # relative to the repo
    }
    record, out = _command(tmp_path, agent, runtime)
    assert record["status"] == "submitted", record
    assert sorted(p.name for p in (out / "submission").iterdir()) == ["notes.md", "reproduce.sh"]
    assert "agent-code-read-only" in (out / "agent-command.log").read_text()
    assert not (tmp_path / "agent-code" / "written").exists()
    assert read_fault(out, "reproduce") is None


@pytest.mark.bwrap
@pytest.mark.parametrize(
    ("command", "status"),
    [
        (["true"], "submitted"),  # ran and left nothing: the agent's doing, scored
        (["bash", "-c", "exit 3"], "error"),  # its own failure: scored as what it left
        (["bash", "-c", "exit 2"], "error"),
    ],
)
def test_an_agent_that_ran_is_a_run(
    tmp_path: Path, runtime: dict, command: list[str], status: str
) -> None:
    record, out = _command(tmp_path, {"command": command}, runtime)
    assert record["status"] == status and (out / "agent.json").is_file(), record
    assert read_fault(out, "reproduce") is None


def test_an_image_the_backend_cannot_run_is_a_fault(tmp_path: Path) -> None:
    """bwrap and local run this host's system: an agent's image would be silently ignored."""
    agent = {"command": ["python", "-m", "my_agent"], "image": "my-registry/agent:1.0"}
    record, out = _command(tmp_path, agent, {"backend": "local"})
    assert (record["status"], record["fault"]) == ("fault", "agent_setup"), record
    message = read_fault(out, "reproduce")["message"]
    assert "my-registry/agent:1.0" in message and "runtime.backend" in message, message
    assert not (out / "agent-command.log").exists(), "nothing was started"


@pytest.mark.bwrap
def test_the_documented_command_agent_runs(tmp_path: Path, runtime: dict) -> None:
    """docs/agents.md's example, as a user runs it: its code is a folder of the repository."""
    from sabench.grid import load_agents

    agents = load_agents(REPO / "config" / "examples" / "command-agent.yaml")
    view = tmp_path / "agent_view"
    view.mkdir()
    shutil.copy(REPO / "resources" / "papers" / "ridge-gd" / "paper.md", view / "paper.md")
    out = tmp_path / "run"
    record = run_agent(
        "hello",
        agents["hello"],
        "ridge-gd",
        "0",
        out / "submission",
        out / "agent.json",
        REPO,
        view,
        runtime,
    )
    assert record["status"] == "submitted", record
    assert sorted(p.name for p in (out / "submission").iterdir()) == ["README.md", "reproduce.sh"]
    assert "Ridge Regression" in (out / "submission" / "README.md").read_text()


def test_a_command_not_found_is_a_fault_under_every_shell_started_backend(tmp_path: Path) -> None:
    """The local backend's exec of a missing command would exit 1 (a Python traceback) and be
    scored as the agent's error; started by the sandbox's sh it exits 127, a fault."""
    record, out = _command(tmp_path, {"command": ["no-such-agent-command"]}, {"backend": "local"})
    assert (record["status"], record["fault"]) == ("fault", "agent_setup"), record
    assert "no-such-agent-command" in read_fault(out, "reproduce")["message"]
