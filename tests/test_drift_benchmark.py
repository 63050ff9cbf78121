"""benchmarks/drift_injection.py as a user runs it: the summary line, the LLM cost line, --max-usd."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from openai_server import ScriptedServer, judge_settings

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "benchmarks" / "drift_injection.py"
R = r"(?:[01]\.\d{3}|nan)"
SUMMARY = re.compile(
    rf"^drift: judge=static source=demo mutants=[1-9]\d* value={R} operator={R} removal={R} "
    rf"swap={R} stub={R} normalisation={R} split={R} false_alarm={R}$"
)
COST = re.compile(r"^cost: judge=llm:openai/scripted calls=([1-9]\d*) est_usd=(\d+\.\d{4})$")


def drift(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, str(SCRIPT), "--papers", "ridge-gd", "--workers", "1"]
    cmd += ["--out", str(tmp_path / "drift.parquet"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=REPO)


def llm_settings(server: ScriptedServer, tmp_path: Path) -> str:
    return json.dumps({"llm:openai/scripted": judge_settings(server, tmp_path)})


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """Aligned, at a reported cost of $10 a call (10M prompt tokens at $1 per million)."""
    reply = {"reasoning": "ok", "evidence": [], "verdict": "aligned", "score": 1}
    return {"json": reply, "usage": {"prompt_tokens": 10_000_000, "completion_tokens": 1}}


def test_summary_line_for_the_demo_with_the_static_judge(tmp_path: Path) -> None:
    done = drift(tmp_path)
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert SUMMARY.match(last), last
    # ridge-gd has a normalisation (its standardise step) and a split (its test fraction) mutant
    rates = dict(kv.split("=", 1) for kv in last.split()[2:])
    assert rates["normalisation"] != "nan" and rates["split"] != "nan", last
    assert (tmp_path / "drift.parquet").is_file()


def test_cost_line_then_refusal_above_max_usd(tmp_path: Path) -> None:
    with ScriptedServer([answer]) as server:
        done = drift(
            tmp_path,
            "--judge",
            "static,llm:openai/scripted",
            "--settings",
            llm_settings(server, tmp_path),
            "--max-usd",
            "0.01",
        )
        assert server.count == 0  # refused before any request
    assert done.returncode == 2
    cost = [ln for ln in done.stdout.splitlines() if ln.startswith("cost:")]
    assert len(cost) == 1 and COST.match(cost[0]), done.stdout
    assert float(COST.match(cost[0]).group(2)) > 0.01  # type: ignore[union-attr]
    error = done.stderr.strip().splitlines()
    assert len(error) == 1 and "--max-usd" in error[0], done.stderr
    assert not (tmp_path / "drift.parquet").exists()


def test_max_usd_caps_what_the_run_spends(tmp_path: Path) -> None:
    """Under the estimate's cap the run starts; replies dearer than estimated hit the cap."""
    with ScriptedServer([answer]) as server:
        done = drift(
            tmp_path,
            "--judge",
            "llm:openai/scripted",
            "--settings",
            llm_settings(server, tmp_path),
            "--max-usd",
            "50",
        )
        sent = server.count
    calls = int(COST.match(done.stdout.splitlines()[0]).group(1))  # type: ignore[union-attr]
    assert done.returncode == 2, done.stdout + done.stderr
    assert "budget" in done.stderr and "spent" in done.stderr
    assert 0 < sent < calls  # stopped at the cap, not after every call
