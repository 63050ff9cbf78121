"""The basic (ReAct) and pipeline agents, driven by the scripted OpenAI-compatible server over real
HTTP, with their tools in a real bwrap sandbox; and a basic agent end to end through snakemake."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import fake_gpu
import pandas as pd
import pytest
from openai_server import ScriptedServer

from sabench.agents import run_agent
from sabench.agents.tools import ToolError, Workspace, call_tool
from sabench.errors import UserError

REPO = Path(__file__).resolve().parents[1]
SECRET = "sk-test-secret-4f1c9a7e0b"
KEY_ENV = "SABENCH_AGENT_TEST_KEY"
MAIN_PY = """import json
import numpy as np
rng = np.random.default_rng(0)
x = rng.normal(size=100)
learning_rate = 0.05
json.dump({"mean": float(x.mean()), "learning_rate": learning_rate}, open("results.json", "w"))
"""
REPRODUCE = "#!/usr/bin/env bash\nset -euo pipefail\npython3 main.py\n"

pytestmark = pytest.mark.bwrap


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as s:
        yield s


@pytest.fixture
def view(tmp_path: Path) -> Path:
    folder = tmp_path / "agent_view"
    folder.mkdir()
    shutil.copy(REPO / "resources" / "papers" / "ridge-gd" / "paper.md", folder / "paper.md")
    return folder


@pytest.fixture
def runtime(sandbox_env: Path) -> dict:
    return {"backend": "bwrap", "python_env": str(sandbox_env), "time_limit_s": 60}


def _agent(server: ScriptedServer, tmp_path: Path, **extra: object) -> dict:
    return {
        "kind": "basic",
        "model": "openai/scripted",
        "api_base": server.url,
        "api_key_env": KEY_ENV,
        "cache_dir": str(tmp_path / "llm-cache"),
        "max_steps": 10,
        **extra,
    }


def _call(name: str, **arguments: object) -> dict:
    return {"name": name, "arguments": arguments}


def _run(agent: dict, view: Path, tmp_path: Path, runtime: dict) -> tuple[dict, Path]:
    run_dir = tmp_path / "run"
    record = run_agent(
        "a",
        agent,
        "ridge-gd",
        "0",
        run_dir / "submission",
        run_dir / "agent.json",
        REPO,
        view,
        runtime,
    )
    return record, run_dir


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)


def test_basic_agent_reads_writes_runs_and_submits(
    server: ScriptedServer, view: Path, tmp_path: Path, runtime: dict
) -> None:
    server.set_script(
        [
            {
                "replies": [
                    {"tool_calls": [_call("read_file", path="/paper/paper.md")]},
                    {
                        "tool_calls": [
                            _call("write_file", path="main.py", content=MAIN_PY),
                            _call("write_file", path="reproduce.sh", content=REPRODUCE),
                        ]
                    },
                    {
                        "tool_calls": [
                            _call("bash", command="bash reproduce.sh && cat results.json && env")
                        ]
                    },
                    {"tool_calls": [_call("submit")]},
                ]
            }
        ]
    )
    record, run_dir = _run(_agent(server, tmp_path), view, tmp_path, runtime)
    assert record["status"] == "submitted" and record["steps"] == 4
    assert record["prompt_tokens"] > 0 and record["completion_tokens"] >= 0
    assert (run_dir / "submission" / "main.py").read_text() == MAIN_PY
    events = [json.loads(line) for line in (run_dir / "transcript.jsonl").read_text().splitlines()]
    tool_outputs = [e["content"] for e in events if e.get("role") == "tool"]
    assert "Ridge" in tool_outputs[0] or "ridge" in tool_outputs[0].lower()
    assert '"learning_rate": 0.05' in tool_outputs[3] and tool_outputs[3].startswith("exit code 0")
    assert SECRET not in tool_outputs[3], "the API key must not enter the sandbox"
    auth = [
        next((v for k, v in r["headers"].items() if k.lower() == "authorization"), "")
        for r in server.requests
    ]
    assert all(SECRET in a for a in auth), "the key does reach the model server"
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path
    # a rerun is answered from the cache: no request, the same submission
    before = server.count
    record2, _ = _run(_agent(server, tmp_path), view, tmp_path, runtime)
    assert server.count == before and record2["submission_hash"] == record["submission_hash"]
    assert record2["cached_calls"] == 4


def test_bad_tool_calls_are_observations(
    server: ScriptedServer, view: Path, tmp_path: Path, runtime: dict
) -> None:
    server.set_script(
        [
            {
                "replies": [
                    {"tool_calls": [{"name": "bash", "arguments": "{not json"}]},
                    {"tool_calls": [_call("delete_everything", path="/")]},
                    {"tool_calls": [_call("write_file", path="../escape.txt", content="x")]},
                    {"tool_calls": [_call("read_file", path="/etc/passwd")]},
                    {"tool_calls": [_call("write_file", path="ok.txt")]},
                    {"content": "thinking without tools"},
                    {"tool_calls": [_call("submit")]},
                ]
            }
        ]
    )
    record, run_dir = _run(_agent(server, tmp_path), view, tmp_path, runtime)
    assert record["status"] == "submitted"
    events = [json.loads(line) for line in (run_dir / "transcript.jsonl").read_text().splitlines()]
    errors = [e["content"] for e in events if e.get("role") == "tool"]
    assert errors[0].startswith("error: arguments are not valid JSON")
    assert "unknown tool 'delete_everything'" in errors[1]
    assert "'..' is not allowed" in errors[2]
    assert "outside /submission or /paper" in errors[3]
    assert "missing argument(s) content" in errors[4]
    assert not (tmp_path / "run" / "escape.txt").exists()
    nudges = [m for m in server.requests[-1]["body"]["messages"] if m["role"] == "user"]
    assert any("call submit()" in m["content"] for m in nudges)


def test_step_limit(server: ScriptedServer, view: Path, tmp_path: Path, runtime: dict) -> None:
    server.set_script([{"replies": [{"tool_calls": [_call("bash", command="echo again")]}]}])
    record, _ = _run(_agent(server, tmp_path, max_steps=3), view, tmp_path, runtime)
    assert record["status"] == "limit" and record["steps"] == 3
    assert "step limit" in record["limit"] and server.count == 3


def test_time_limit(server: ScriptedServer, view: Path, tmp_path: Path, runtime: dict) -> None:
    server.set_script([{"replies": [{"delay": 5, "content": "slow"}]}])
    agent = _agent(server, tmp_path, time_limit_s=1.5)
    record, _ = _run(agent, view, tmp_path, runtime)
    assert record["status"] == "limit" and "time limit" in record["limit"]
    assert record["wall_s"] < 4.5


def test_cost_limit(server: ScriptedServer, view: Path, tmp_path: Path, runtime: dict) -> None:
    step = {
        "tool_calls": [_call("bash", command="true")],
        "usage": {"prompt_tokens": 100_000, "completion_tokens": 10_000},
    }
    server.set_script([{"replies": [step]}])
    prices = {"input_per_mtok": 10.0, "output_per_mtok": 30.0}  # $1.30 a step
    agent = _agent(server, tmp_path, cost_limit_usd=2.0, prices=prices)
    record, _ = _run(agent, view, tmp_path, runtime)
    assert record["status"] == "limit" and "cost limit" in record["limit"]
    assert record["steps"] == 2 and record["cost_usd"] == pytest.approx(2.6)


def test_a_rejected_key_is_a_fault(
    server: ScriptedServer, view: Path, tmp_path: Path, runtime: dict
) -> None:
    server.set_script([{"replies": [{"status": 401, "error": "bad key"}]}])
    record, run_dir = _run(_agent(server, tmp_path), view, tmp_path, runtime)
    assert (record["status"], record["fault"]) == ("fault", "auth_rejected") and record["error"]
    assert not (run_dir / "agent.json").exists()
    assert SECRET not in (run_dir / "faults" / "reproduce.json").read_text()


def test_pipeline_agent(server: ScriptedServer, view: Path, tmp_path: Path, runtime: dict) -> None:
    plan = {"files": [{"path": "main.py", "purpose": "the experiment"}]}

    def by_stage(request: dict) -> dict | None:
        last = request["messages"][-1]["content"]
        if "planning stage" in last:
            return {"json": plan}
        if last.startswith("Analysis stage"):
            return {"content": "use learning rate 0.05"}
        if "`main.py`" in last:
            return {"content": f"```python\n{MAIN_PY}```"}
        if "`reproduce.sh`" in last:
            return {"content": f"```bash\n{REPRODUCE}```"}
        return None

    server.set_script([by_stage])
    agent = {**_agent(server, tmp_path), "kind": "pipeline"}
    record, run_dir = _run(agent, view, tmp_path, runtime)
    assert record["status"] == "submitted", record
    sub = run_dir / "submission"
    assert (sub / "main.py").read_text() == MAIN_PY
    assert (sub / "reproduce.sh").read_text() == REPRODUCE and os.access(
        sub / "reproduce.sh", os.X_OK
    )
    assert record["steps"] == 5  # plan + (analysis + code) for two files


def test_workspace_refuses_symlink_escape(tmp_path: Path, view: Path) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "link").symlink_to("/etc")
    ws = Workspace(sub, view, {})
    with pytest.raises(ToolError, match="resolves outside"):
        call_tool(ws, "read_file", {"path": "link/passwd"})


@pytest.mark.workflow
def test_basic_agent_through_snakemake(server: ScriptedServer, tmp_path: Path) -> None:
    server.set_script(
        [
            {
                "replies": [
                    {
                        "tool_calls": [
                            _call("write_file", path="main.py", content=MAIN_PY),
                            _call("write_file", path="reproduce.sh", content=REPRODUCE),
                        ]
                    },
                    {"tool_calls": [_call("submit")]},
                ]
            }
        ]
    )
    agents = tmp_path / "agents.yaml"
    agents.write_text(
        json.dumps(
            {
                "scripted-basic": {
                    "kind": "basic",
                    "model": "openai/scripted",
                    "api_base": server.url,
                    "api_key_env": KEY_ENV,
                    "max_steps": 5,
                }
            }
        )
    )
    results = tmp_path / "results"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SNAKEMAKE")}
    env.update({KEY_ENV: SECRET, "SABENCH_LLM_CACHE": str(tmp_path / "cache")})
    proc = subprocess.run(
        [
            str(Path(sys.executable).with_name("snakemake")),
            "--cores",
            "2",
            "--config",
            f"agents_file={agents}",
            f"results={results}",
            "papers=ridge-gd",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    runs = pd.read_parquet(results / "tables" / "runs.parquet")
    assert list(runs["agent_status"]) == ["submitted"]
    assert list(runs["execution_status"]) == ["ok"]
    judgments = pd.read_parquet(results / "tables" / "judgments.parquet")
    lr = judgments[judgments.sau_id == "ridge-gd-D1-001"]
    assert set(lr.verdict) == {"aligned"}, lr.reasoning.tolist()
    for path in results.rglob("*"):
        if path.is_file() and path.suffix in {".json", ".jsonl", ".log", ".parquet", ".md"}:
            assert SECRET.encode() not in path.read_bytes(), path


def test_command_agent_contract(view: Path, tmp_path: Path, runtime: dict, monkeypatch) -> None:
    monkeypatch.setenv("AGENT_TOKEN", "given-to-the-agent")
    monkeypatch.setenv("OTHER_SECRET", "never-given")
    (view / "blacklist.txt").write_text("https://github.com/authors/ridge-gd-code\n")
    script = (
        "cp /paper/paper.md notes.md && printf 'python3 -c \"print(1)\"\\n' > reproduce.sh && "
        "env | sort && echo fetched https://github.com/authors/ridge-gd-code && "
        "(echo x > /paper/x 2>/dev/null && echo paper-writable || echo paper-read-only)"
    )
    agent = {"kind": "command", "command": ["bash", "-c", script], "env": ["AGENT_TOKEN"]}
    record, run_dir = _run(agent, view, tmp_path, runtime)
    assert record["status"] == "submitted", record
    assert sorted(p.name for p in (run_dir / "submission").iterdir()) == [
        "notes.md",
        "reproduce.sh",
    ]
    log = (run_dir / "agent-command.log").read_text()
    assert "AGENT_TOKEN=given-to-the-agent" in log and "SABENCH_SEED=0" in log
    assert "never-given" not in log and SECRET not in log
    assert "paper-read-only" in log
    assert record["blacklist_hits"] == ["https://github.com/authors/ridge-gd-code"]


def test_command_agent_failure_and_missing_env(view: Path, tmp_path: Path, runtime: dict) -> None:
    record, _ = _run({"kind": "command", "command": "bash -c 'exit 3'"}, view, tmp_path, runtime)
    assert record["status"] == "error" and "exit code 3" in record["error"]
    with pytest.raises(UserError, match="env: environment variable NOT_SET_ANYWHERE"):
        _run(
            {"kind": "command", "command": "true", "env": ["NOT_SET_ANYWHERE"]},
            view,
            tmp_path,
            runtime,
        )


def test_agents_run_on_the_gpus_they_hold(
    view: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent's GPUs are locked like an execution's: with GPU 0 held elsewhere, an agent asking
    for one gets GPU 1, and its commands (the command kind's, the basic kind's tools) see only
    that; a host without GPUs is a fault, never a run without them."""
    from sabench.sandbox.gpu import allocate

    fake_gpu.install(tmp_path, monkeypatch)
    local = {"backend": "local", "time_limit_s": 60}
    write_visible = 'printf "[%s]" "$CUDA_VISIBLE_DEVICES" > visible.txt'
    with allocate(1) as held:
        assert held == ["0"]
        agent = {"kind": "command", "command": ["bash", "-c", write_visible], "gpus": 1}
        record, run_dir = _run(agent, view, tmp_path, local)
    assert record["status"] == "submitted" and record["gpu_ids"] == ["1"], record
    assert (run_dir / "submission" / "visible.txt").read_text() == "[1]"
    record, run_dir = _run({**agent, "gpus": 0}, view, tmp_path, local)
    assert (run_dir / "submission" / "visible.txt").read_text() == "[]" and "gpu_ids" not in record

    workspace = Workspace(tmp_path / "ws", view, local, gpus=["1"])
    workspace.submission.mkdir()
    assert "[1]" in workspace.bash('printf "[%s]" "$CUDA_VISIBLE_DEVICES"')

    monkeypatch.setenv("SABENCH_NVIDIA_SMI", str(tmp_path / "absent-nvidia-smi"))
    record, run_dir = _run(agent, view, tmp_path, local)
    assert record["status"] == "fault" and record["fault"] == "sandbox_error", record
    assert "asks for GPUs but this host has none" in record["error"]
    assert not (run_dir / "agent.json").exists()


def _generic_model(request: dict) -> dict:
    """Any paper, any model: a basic agent writes a tiny reproduction and submits; a pipeline
    agent gets a one-file plan, an analysis and the code."""
    messages = request["messages"]
    last = messages[-1].get("content") or ""
    if "planning stage" in last:
        return {"json": {"files": [{"path": "main.py", "purpose": "the experiment"}]}}
    if last.startswith("Analysis stage"):
        return {"content": "follow the paper"}
    if "`main.py`" in last:
        return {"content": f"```python\n{MAIN_PY}```"}
    if "`reproduce.sh`" in last:
        return {"content": f"```bash\n{REPRODUCE}```"}
    if any(m["role"] == "tool" for m in messages):
        return {"tool_calls": [_call("submit")]}
    return {
        "tool_calls": [
            _call("write_file", path="main.py", content=MAIN_PY),
            _call("write_file", path="reproduce.sh", content=REPRODUCE),
        ]
    }


@pytest.mark.workflow
def test_grid_of_models_and_scaffolds(server: ScriptedServer, tmp_path: Path) -> None:
    server.set_script([_generic_model])
    command = f"printf '{MAIN_PY}' > main.py && printf '{REPRODUCE}' > reproduce.sh"
    agents = {}
    for model in ("openai/model-a", "openai/model-b"):
        name = model.split("/")[1]
        common = {"model": model, "api_base": server.url, "api_key_env": KEY_ENV}
        agents[f"{name}_basic"] = {"kind": "basic", "max_steps": 4, **common}
        agents[f"{name}_pipeline"] = {"kind": "pipeline", **common}
        agents[f"{name}_command"] = {
            "kind": "command",
            "model": model,
            "command": ["bash", "-c", command.replace("%", "%%")],
        }
    (tmp_path / "agents.yaml").write_text(json.dumps(agents))
    results = tmp_path / "results"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SNAKEMAKE")}
    env.update({KEY_ENV: SECRET, "SABENCH_LLM_CACHE": str(tmp_path / "cache")})
    proc = subprocess.run(
        [
            str(Path(sys.executable).with_name("snakemake")),
            "--cores",
            "2",
            "--config",
            f"agents_file={tmp_path / 'agents.yaml'}",
            f"results={results}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    runs = pd.read_parquet(results / "tables" / "runs.parquet")
    papers = sorted(p.name for p in (REPO / "resources" / "papers").iterdir() if p.is_dir())
    assert len(runs) == 6 * len(papers)
    assert set(runs["agent_status"]) == {"submitted"}, runs[["agent", "agent_status"]]
    assert set(runs["execution_status"]) == {"ok"}
    scores = pd.read_parquet(results / "tables" / "scores_by_agent.parquet")
    assert set(scores["agent"]) == set(agents)
    models = {
        json.loads(r["body"])["model"] if isinstance(r["body"], str) else r["body"]["model"]
        for r in server.requests
    }
    assert models == {"model-a", "model-b"}


@pytest.mark.docker
def test_command_agent_from_its_image(
    docker_engine, view: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An external agent's own image (here the project's locally built one) and command line."""
    for key, value in docker_engine.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AGENT_TOKEN", "given-to-the-agent")
    script = (
        "id -u > uid.txt && printf 'python -c \"print(1)\"\\n' > reproduce.sh && "
        'python -c \'import os; print(sorted(k for k in os.environ if "TOKEN" in k or "KEY" in k))\''
    )
    agent = {
        "kind": "command",
        "image": docker_engine.image.ref,
        "command": ["sh", "-c", script],
        "env": ["AGENT_TOKEN"],
    }
    record, run_dir = _run(agent, view, tmp_path, {"backend": "docker", "time_limit_s": 60})
    assert record["status"] == "submitted" and record["backend"] == "docker", record["error"]
    assert (run_dir / "submission" / "uid.txt").read_text().strip() != "0"
    log = (run_dir / "agent-command.log").read_text()
    assert "['AGENT_TOKEN']" in log, log
