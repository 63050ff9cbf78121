"""Faults are never scores: a provider outage, a rejected or missing key, a sandbox that fails are
recorded, counted, left out of every score and redone by the next run of the same command; one
broken paper costs that paper only; a one-paper run updates the grid's tables, never replaces them.

Real parts: the scripted OpenAI-compatible server over HTTP, a closed port for an unreachable
provider, bwrap sandboxes, snakemake end to end on copies of the bundled demo papers.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from openai_server import ScriptedServer

from sabench.agents import run_agent
from sabench.faults import FAULT_EXIT, read_fault
from sabench.lifecycle import model_servers
from sabench.llm.endpoint import server_silence, silent_servers

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
KEY_ENV = "SABENCH_FAULT_TEST_KEY"
PAPER = "ridge-gd"
MAIN_PY = "import json\njson.dump({'rmse': 1.0}, open('results.json', 'w'))\n"
SUBMISSION = "resources/submissions/reference/{paper}"
REPRODUCE = "#!/usr/bin/env bash\nset -euo pipefail\npython3 main.py\n"


def _closed_port() -> int:
    """A local port nothing listens on (bound, then released): connections are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _view(tmp_path: Path) -> Path:
    view = tmp_path / "agent_view"
    view.mkdir()
    shutil.copy(REPO / "resources" / "papers" / PAPER / "paper.md", view / "paper.md")
    return view


def _basic(api_base: str, tmp_path: Path, **extra: object) -> dict:
    return {
        "kind": "basic",
        "model": "openai/scripted",
        "api_base": api_base,
        "api_key_env": KEY_ENV,
        "cache_dir": str(tmp_path / "llm-cache"),
        "max_steps": 4,
        "max_retries": 0,
        "timeout_s": 5,
        **extra,
    }


def _writes_and_submits(request: dict) -> dict:
    if any(m["role"] == "tool" for m in request["messages"]):
        return {"tool_calls": [{"name": "submit", "arguments": {}}]}
    return {
        "tool_calls": [
            {"name": "write_file", "arguments": {"path": "main.py", "content": MAIN_PY}},
            {"name": "write_file", "arguments": {"path": "reproduce.sh", "content": REPRODUCE}},
        ]
    }


def _run_basic(agent: dict, tmp_path: Path, runtime: dict) -> tuple[dict, Path]:
    run_dir = tmp_path / "run"
    data = run_agent(
        "a",
        agent,
        PAPER,
        "0",
        run_dir / "submission",
        run_dir / "agent.json",
        REPO,
        _view(tmp_path),
        runtime,
    )
    return data, run_dir


@pytest.fixture
def runtime(sandbox_env: Path) -> dict:
    return {"backend": "bwrap", "python_env": str(sandbox_env), "time_limit_s": 60}


@pytest.mark.bwrap
@pytest.mark.parametrize(
    ("reply", "cause"),
    [
        (None, "provider_unreachable"),
        ({"status": 401, "error": "invalid api key"}, "auth_rejected"),
        ({"status": 503, "error": "overloaded"}, "provider_error"),
        ({"status": 429, "error": "slow down", "headers": {"Retry-After": "0"}}, "rate_limited"),
    ],
)
def test_a_provider_fault_is_a_fault_not_a_run(
    reply: dict | None, cause: str, tmp_path: Path, runtime: dict, monkeypatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-fault-test-0123456789")
    with ScriptedServer([{"replies": [reply or {}]}]) as server:
        url = server.url if reply else f"http://127.0.0.1:{_closed_port()}/v1"
        data, run_dir = _run_basic(_basic(url, tmp_path), tmp_path, runtime)
    assert data["status"] == "fault" and data["fault"] == cause, data
    assert not (run_dir / "agent.json").exists(), "a fault leaves no record of a finished run"
    fault = read_fault(run_dir, "reproduce")
    assert fault is not None and fault["cause"] == cause
    assert "sk-fault-test" not in (run_dir / "faults" / "reproduce.json").read_text()


@pytest.mark.bwrap
def test_a_missing_key_is_a_fault(tmp_path: Path, runtime: dict, monkeypatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with ScriptedServer([_writes_and_submits]) as server:
        data, _ = _run_basic(_basic(server.url, tmp_path), tmp_path, runtime)
        assert server.count == 0
    assert (data["status"], data["fault"]) == ("fault", "key_missing")


@pytest.mark.bwrap
def test_the_agents_own_failure_is_still_scored(tmp_path: Path, runtime: dict, monkeypatch):
    """A model that answers nonsense is the agent's doing: a record, scored as what it left."""
    monkeypatch.setenv(KEY_ENV, "sk-fault-test-0123456789")
    with ScriptedServer([{"replies": [{"content": "I will not use tools."}]}]) as server:
        data, run_dir = _run_basic(_basic(server.url, tmp_path), tmp_path, runtime)
    assert data["status"] == "limit" and (run_dir / "agent.json").is_file()
    assert read_fault(run_dir, "reproduce") is None


def test_a_sandbox_fault_in_execution_is_not_a_failed_reproduction(tmp_path: Path) -> None:
    """Asking for GPUs this host cannot give: the execute step ends with a fault, no record."""
    submission = tmp_path / "run" / "submission"
    submission.mkdir(parents=True)
    (submission / "reproduce.sh").write_text("echo hi\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sabench.execute",
            str(submission),
            "--out",
            str(tmp_path / "run"),
            "--settings",
            json.dumps({"gpus": [7, 8], "backend": "local"}),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
    )
    assert proc.returncode == FAULT_EXIT, proc.stdout + proc.stderr
    assert proc.stderr.startswith("fault: execute: sandbox_error")
    assert not (tmp_path / "run" / "execution.json").exists()
    assert read_fault(tmp_path / "run", "execute")["cause"] == "sandbox_error"


# --------------------------------------------------------------------------- through snakemake


def snakemake(*args: str, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SNAKEMAKE")}
    return subprocess.run(
        [SNAKEMAKE, "--cores", "2", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**base, **(env or {})},
    )


def _grid(tmp_path: Path, api_base: str) -> list[str]:
    """One demo paper, the reference replay agent and a basic agent at ``api_base``."""
    agents = {
        "reference": {
            "kind": "replay",
            "path": str(REPO / "resources/submissions/reference/{paper}"),
        },
        "model": {k: v for k, v in _basic(api_base, tmp_path).items() if k != "cache_dir"},
    }
    (tmp_path / "agents.yaml").write_text(json.dumps(agents))
    papers = tmp_path / "papers"
    if not papers.is_dir():
        shutil.copytree(REPO / "resources" / "papers" / PAPER, papers / PAPER)
    return [
        "--config",
        f"agents_file={tmp_path / 'agents.yaml'}",
        f"results={tmp_path / 'results'}",
        f"papers_dir={papers}",
        "judges=[static]",
    ]


@pytest.mark.workflow
@pytest.mark.bwrap
def test_an_outage_is_never_drift_and_the_next_run_redoes_it(tmp_path: Path) -> None:
    env = {KEY_ENV: "sk-fault-test-0123456789", "SABENCH_LLM_CACHE": str(tmp_path / "cache")}
    with ScriptedServer([{"replies": [{"status": 503, "error": "down for maintenance"}]}]) as srv:
        args = _grid(tmp_path, srv.url)
        down = snakemake(*args, env=env)
        assert down.returncode != 0, "a grid with a fault is not complete"
        results = tmp_path / "results"
        summary = (results / "tables" / "summary.md").read_text()
        assert "Not complete" in summary and "provider_error" in summary, summary
        scores = pd.read_parquet(results / "tables" / "scores_by_agent.parquet")
        assert set(scores["agent"]) == {"reference"}, "the outage must not be scored as 0"
        cov = pd.read_parquet(results / "tables" / "coverage.parquet").set_index("agent")
        assert cov.loc["model", "n_runs_incomplete"] == 1
        assert cov.loc["model", "incomplete_causes"] == "provider_error=1"
        assert cov.loc["reference", "n_runs_complete"] == 1
        incomplete = pd.read_parquet(results / "tables" / "incomplete_runs.parquet")
        assert incomplete[["agent", "stage", "cause"]].values.tolist() == [
            ["model", "reproduce", "provider_error"]
        ]
        assert "Not complete" in (results / "report" / "index.html").read_text()

        # the provider is back: the same command redoes the faulted run, and only that run
        srv.set_script([_writes_and_submits])
        up = snakemake(*args, env=env)
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        assert "rule reproduce:" in up.stdout + up.stderr
    scores = pd.read_parquet(results / "tables" / "scores_by_agent.parquet")
    assert set(scores["agent"]) == {"reference", "model"}
    assert pd.read_parquet(results / "tables" / "incomplete_runs.parquet").empty
    assert read_fault(results / "runs" / "model" / PAPER / "0", "reproduce") is None


@pytest.mark.workflow
def test_a_missing_key_stops_the_grid_before_any_job(tmp_path: Path) -> None:
    args = _grid(tmp_path, f"http://127.0.0.1:{_closed_port()}/v1")
    env = {k: v for k, v in os.environ.items() if k != KEY_ENV}
    proc = subprocess.run(
        [SNAKEMAKE, "--cores", "1", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={k: v for k, v in env.items() if not k.startswith("SNAKEMAKE")},
    )
    assert proc.returncode != 0
    errors = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith("error:")]
    assert errors == [
        f"error: agent model: api_key_env: environment variable {KEY_ENV} is not set "
        "(export it first)"
    ]
    assert not (tmp_path / "results" / "runs").exists(), "no job may have started"
    assert "Traceback" not in proc.stderr


def test_a_server_that_does_not_answer_is_named() -> None:
    """Any HTTP reply is an answer (the scripted server, even a 404 for /models); a closed
    port is not, and the line names the server without the password in its URL."""
    with ScriptedServer([]) as server:
        assert server_silence(server.url) is None
    port = _closed_port()
    lines = silent_servers([("agent model", f"http://user:pw@127.0.0.1:{port}/v1")])
    assert lines == [
        f"agent model: api_base http://127.0.0.1:{port}/v1 does not answer (connection "
        "refused): start the model server, or correct api_base"
    ]


@pytest.mark.bwrap
def test_an_unreachable_provider_fault_names_the_server(
    tmp_path: Path, runtime: dict, monkeypatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-fault-test-0123456789")
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    _, run_dir = _run_basic(_basic(url, tmp_path), tmp_path, runtime)
    fault = read_fault(run_dir, "reproduce")
    assert fault is not None and fault["cause"] == "provider_unreachable"
    assert f"(api_base {url})" in fault["message"], fault["message"]


@pytest.mark.workflow
def test_a_silent_model_server_stops_the_grid_before_any_job(tmp_path: Path) -> None:
    """The basic agent's server is down: one line naming it, in seconds, not a fault per run
    after its retries; the replay agent's runs are not started either (nothing is)."""
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    args = _grid(tmp_path, url)
    proc = snakemake(*args, env={KEY_ENV: "sk-fault-test-0123456789"})
    assert proc.returncode != 0
    errors = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith("error:")]
    assert errors == [
        f"error: agent model: api_base {url} does not answer (connection refused): "
        "start the model server, or correct api_base"
    ]
    assert not (tmp_path / "results" / "runs").exists(), "no job may have started"


def test_only_the_servers_of_the_jobs_to_run_are_asked() -> None:
    """A server is asked only when a job about to run calls it: the model agent's when its run
    is redone, the LLM judge's when it judges; re-making the tables asks none."""
    settings = SimpleNamespace(
        config={"judge_settings": {"llm:openai/m": {"api_base": "http://judge/v1"}}},
        judges=["static", "llm:openai/m"],
        agents={"model": {"kind": "basic", "api_base": "http://agent/v1"}, "ref": {}},
    )
    assert model_servers(settings, [("reproduce", {"agent": "model"})]) == [
        ("agent model", "http://agent/v1")
    ]
    assert model_servers(settings, [("judge", {"judge": "llm-openai_m"})]) == [
        ("judge llm:openai/m", "http://judge/v1")
    ]
    jobs = [("reproduce", {"agent": "ref"}), ("judge", {"judge": "static"}), ("aggregate", {})]
    assert model_servers(settings, jobs) == []


@pytest.mark.workflow
def test_a_provider_key_no_setting_names_stops_the_grid_before_any_job(tmp_path: Path) -> None:
    """An LLM judge and LLM extraction with no api_key_env: the provider's own variable
    (OPENAI_API_KEY, which litellm names) is checked up front, one line each, no job starts."""
    args = _grid(tmp_path, f"http://127.0.0.1:{_closed_port()}/v1")
    args = [a for a in args if not a.startswith("judges=")]
    args += ["judges=[static, llm:openai/gpt-4o-mini]"]
    args += ["saus_extraction={extractor: llm:openai/gpt-4o-mini}"]
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", KEY_ENV)}
    env[KEY_ENV] = "sk-for-the-basic-agent"
    proc = subprocess.run(
        [SNAKEMAKE, "--cores", "1", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={k: v for k, v in env.items() if not k.startswith("SNAKEMAKE")},
    )
    assert proc.returncode != 0
    errors = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith("error:")]
    assert errors == [
        "error: judge llm:openai/gpt-4o-mini: environment variable OPENAI_API_KEY is not set "
        "(openai/gpt-4o-mini reads its key from it): export it, or name the variable that "
        'holds the key in judge_settings["llm:openai/gpt-4o-mini"].api_key_env',
        "error: saus_extraction llm:openai/gpt-4o-mini: environment variable OPENAI_API_KEY is "
        "not set (openai/gpt-4o-mini reads its key from it): export it, or name the variable "
        "that holds the key in saus_extraction.settings.api_key_env",
    ]
    assert not (tmp_path / "results" / "runs").exists(), "no job may have started"
    assert "Traceback" not in proc.stderr


@pytest.mark.workflow
@pytest.mark.bwrap
def test_an_agent_that_cannot_start_is_a_fault_and_the_same_command_redoes_it(
    tmp_path: Path,
) -> None:
    """Issue 46, item 2: a command agent whose script the sandbox does not show exits 127. It is
    no run scored 0 but a fault: the workflow exits non-zero naming the cause, summary.md and
    the run's page flag it, no score counts it; once its code is there, the same command redoes
    that run and nothing else."""
    code = tmp_path / "agent-code"  # mounted at /agent, but without its script yet
    code.mkdir()
    agents = {
        "reference": {
            "kind": "replay",
            "path": str(REPO / "resources/submissions/reference/{paper}"),
        },
        "mine": {
            "kind": "command",
            "command": ["bash", "/agent/run.sh"],
            "mounts": [{"source": str(code), "target": "/agent"}],
        },
    }
    (tmp_path / "agents.yaml").write_text(json.dumps(agents))
    papers = tmp_path / "papers"
    shutil.copytree(REPO / "resources" / "papers" / PAPER, papers / PAPER)
    args = [
        "--config",
        f"agents_file={tmp_path / 'agents.yaml'}",
        f"results={tmp_path / 'results'}",
        f"papers_dir={papers}",
        "judges=[static]",
    ]
    results = tmp_path / "results"
    page = results / "report" / "site" / "runs" / "mine" / PAPER / "0.html"

    broken = snakemake(*args)
    said = broken.stdout + broken.stderr
    assert broken.returncode != 0, "a run whose agent could not start is not complete"
    faults = [ln for ln in said.splitlines() if ln.startswith("fault: reproduce: agent_setup:")]
    assert faults and "exit 127" in faults[0] and "/agent/run.sh" in faults[0], said[-3000:]
    summary = (results / "tables" / "summary.md").read_text()
    assert f"`mine/{PAPER}/0` reproduce: agent_setup: " in summary, summary
    scores = pd.read_parquet(results / "tables" / "scores_by_agent.parquet")
    assert set(scores["agent"]) == {"reference"}, "an agent that never started is not scored 0"
    cov = pd.read_parquet(results / "tables" / "coverage.parquet").set_index("agent")
    assert cov.loc["mine", "incomplete_causes"] == "agent_setup=1"
    flagged = page.read_text(encoding="utf-8")
    assert 'class="incomplete-note"' in flagged and "agent_setup" in flagged
    assert (
        read_fault(results / "runs" / "mine" / PAPER / "0", "reproduce")["cause"] == "agent_setup"
    )

    # its code is there now: the same command redoes that run, and only that run
    (code / "run.sh").write_text(
        "cp /paper/paper.md notes.md\nprintf 'echo {}> results.json\\n' > reproduce.sh\n"
    )
    fixed = snakemake(*args)
    said = fixed.stdout + fixed.stderr
    assert fixed.returncode == 0, said[-3000:]
    ran = sorted(re.findall(r"^(?:local)?rule (\w+):$", said, re.M))
    # the run's own steps, the paper's merge and the tables: the reference's replay is not redone
    assert ran == ["aggregate", "all", "execute", "judge", "judgments", "report", "reproduce"], ran
    assert "agent=mine" in said and "agent=reference" not in said
    scores = pd.read_parquet(results / "tables" / "scores_by_agent.parquet")
    assert set(scores["agent"]) == {"reference", "mine"}
    assert pd.read_parquet(results / "tables" / "incomplete_runs.parquet").empty
    assert 'class="incomplete-note"' not in page.read_text(encoding="utf-8")
    assert read_fault(results / "runs" / "mine" / PAPER / "0", "reproduce") is None


def _job_counts(proc: subprocess.CompletedProcess[str]) -> dict[str, int]:
    """How many jobs of each rule a snakemake run started (its 'rule <name>:' lines)."""
    names = re.findall(r"^(?:local)?rule (\w+):$", proc.stdout + proc.stderr, re.M)
    return {name: names.count(name) for name in names}


@pytest.mark.workflow
@pytest.mark.bwrap
def test_a_fault_after_a_completed_run_is_redone_by_the_same_command_and_nothing_else(
    tmp_path: Path,
) -> None:
    """A completed run whose agent is rerun (its settings changed) while the provider is down:
    the fault leaves nothing of the old run behind it (its old execution and judgments would make
    snakemake skip it), the tables count it as incomplete, and once the provider is back the
    same command redoes that run's steps and no other run's; then nothing is left to do."""
    env = {KEY_ENV: "sk-fault-test-0123456789", "SABENCH_LLM_CACHE": str(tmp_path / "cache")}
    results = tmp_path / "results"
    model_run = results / "runs" / "model" / PAPER / "0"
    reference_run = results / "runs" / "reference" / PAPER / "0"
    with ScriptedServer([_writes_and_submits]) as srv:
        args = _grid(tmp_path, srv.url)
        first = snakemake(*args, env=env)
        assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
        kept = {
            p: p.stat().st_mtime_ns
            for p in (
                reference_run / "agent.json",
                reference_run / "execution.json",
                reference_run / "judge" / "static.parquet",
            )
        }

        agents = json.loads((tmp_path / "agents.yaml").read_text())
        agents["model"]["max_steps"] = 5  # a new setting reruns the agent
        (tmp_path / "agents.yaml").write_text(json.dumps(agents))
        srv.set_script([{"replies": [{"status": 503, "error": "down for maintenance"}]}])
        down = snakemake(*args, env=env)
        assert down.returncode != 0
        assert "fault: reproduce: provider_error" in down.stderr
        for stale in ("execution.json", "judgments.parquet", "judge/static.parquet"):
            assert not (model_run / stale).exists(), f"{stale} of the replaced run survived"
        incomplete = pd.read_parquet(results / "tables" / "incomplete_runs.parquet")
        assert incomplete[["agent", "stage", "cause"]].values.tolist() == [
            ["model", "reproduce", "provider_error"]
        ]
        scores = pd.read_parquet(results / "tables" / "scores_by_agent.parquet")
        assert set(scores["agent"]) == {"reference"}, "the old run must not be scored as current"
        assert "see 'Not complete' in summary.md" in down.stderr

        srv.set_script([_writes_and_submits])
        up = snakemake(*args, env=env)
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
    assert _job_counts(up) == {
        "reproduce": 1,
        "execute": 1,
        "judge": 1,
        "judgments": 1,
        "aggregate": 1,
        "report": 1,
        "all": 1,
    }
    assert {p: p.stat().st_mtime_ns for p in kept} == kept, "the reference run was redone"
    assert json.loads((model_run / "agent.json").read_text())["config"]["max_steps"] == 5
    assert pd.read_parquet(results / "tables" / "incomplete_runs.parquet").empty
    again = snakemake("-n", *args, env=env)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr, (
        again.stdout[-3000:]
    )


@pytest.mark.workflow
@pytest.mark.bwrap
def test_a_failed_rejudgment_leaves_the_run_incomplete_until_the_same_command_redoes_it(
    tmp_path: Path,
) -> None:
    """An LLM judge's setting changes while its provider is down: its job fails, and the tables
    no longer count the run's old judgments of that judge as current (they did, 1/1 complete
    with the old scores); the run is incomplete for that judge only. Provider back: the same
    command re-judges with that judge alone."""
    from test_llm_workflow import JUDGE, toy_judge

    results = tmp_path / "results"
    run = results / "runs" / "reference" / PAPER / "0"
    papers = tmp_path / "papers"
    shutil.copytree(REPO / "resources" / "papers" / PAPER, papers / PAPER)
    (tmp_path / "agents.yaml").write_text(
        json.dumps({"reference": {"kind": "replay", "path": str(REPO / SUBMISSION)}})
    )
    env = {KEY_ENV: "sk-fault-test-0123456789"}
    with ScriptedServer([toy_judge]) as srv:
        settings = {
            "api_base": srv.url,
            "api_key_env": KEY_ENV,
            "cache_dir": str(tmp_path / "llm-cache"),
            "max_retries": 0,
            "timeout_s": 5,
        }
        config = {
            "results": str(results),
            "papers_dir": str(papers),
            "agents_file": str(tmp_path / "agents.yaml"),
            "judges": ["static", JUDGE],
            "judge_settings": {JUDGE: settings},
        }
        config_file = tmp_path / "config.json"
        config_file.write_text(json.dumps(config))
        first = snakemake("--configfile", str(config_file), env=env)
        assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
        static_time = (run / "judge" / "static.parquet").stat().st_mtime_ns

        config["judge_settings"][JUDGE]["temperature"] = 0.5  # what it judges by: a rejudgment
        config_file.write_text(json.dumps(config))
        srv.set_script([{"replies": [{"status": 503, "error": "down for maintenance"}]}])
        down = snakemake("--configfile", str(config_file), env=env)
        assert down.returncode != 0
        assert not (run / "judgments.parquet").exists(), "the merge of the old judgments survived"
        incomplete = pd.read_parquet(results / "tables" / "incomplete_runs.parquet")
        assert incomplete[["agent", "judge", "cause"]].values.tolist() == [
            ["reference", JUDGE, "provider_error"]
        ]
        scores = pd.read_parquet(results / "tables" / "scores_by_agent.parquet")
        assert set(scores["judge"]) == {"static"}, "old judgments counted as current"
        cov = pd.read_parquet(results / "tables" / "coverage.parquet").set_index("judge")
        assert cov.loc[JUDGE, "n_runs_complete"] == 0 and cov.loc["static", "n_runs_complete"] == 1
        assert "Not complete" in (results / "tables" / "summary.md").read_text()

        srv.set_script([toy_judge])
        up = snakemake("--configfile", str(config_file), env=env)
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
    counts = _job_counts(up)
    assert counts.get("judge") == 1 and "reproduce" not in counts and "execute" not in counts
    assert (run / "judge" / "static.parquet").stat().st_mtime_ns == static_time
    assert pd.read_parquet(results / "tables" / "incomplete_runs.parquet").empty
    judged = pd.read_parquet(results / "tables" / "scores_by_agent.parquet")
    assert set(judged["judge"]) == {"static", JUDGE}
