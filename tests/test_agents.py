"""Replay and null agents: what they copy, what they record, and a missing source as a status."""

from __future__ import annotations

import json
from pathlib import Path

from sabench.agents import run_agent, submission_hash


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
