"""Agent presets (sabench/agents/presets.yaml): one line of an agents file names an agent people run.
mini-swe-agent runs for real: installed from its pinned requirements into its own env (bwrap) or
image (docker), with no network but the model gateway, against a scripted OpenAI-compatible server
on loopback that plays a short session in which it writes a submission; through snakemake, the
submission is then executed and judged as any other. Claude Code (npm) runs the same way under
bwrap, speaking Anthropic's messages API to the gateway."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from openai_server import ScriptedServer
from system_packages import debian_binary

from sabench.agents import run_agent
from sabench.agents.presets import load_presets
from sabench.agents.setup import capture_transcript
from sabench.errors import UserError
from sabench.grid import load_agents, validate

REPO = Path(__file__).resolve().parents[1]
SECRET = "sk-preset-secret-7c41e0d2b9"
KEY_ENV = "SABENCH_PRESET_TEST_KEY"
MAIN_PY = """import json
import numpy as np
rng = np.random.default_rng(0)
x = rng.normal(size=100)
learning_rate = 0.05
json.dump({"mean": float(x.mean()), "learning_rate": learning_rate}, open("results.json", "w"))
"""
REPRODUCE = "#!/usr/bin/env bash\nset -euo pipefail\npython3 main.py\n"


def _bash(command: str) -> dict:
    return {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}


#: The model's side of the session: mini-swe-agent's bash tool, one command a turn, then its
#: submit command (mini-swe-agent ends when a command's output starts with that word).
SESSION = [
    _bash("cat /paper/paper.md | head -n 5"),
    _bash(f"cat > main.py <<'EOF'\n{MAIN_PY}EOF"),
    _bash(f"cat > reproduce.sh <<'EOF'\n{REPRODUCE}EOF\nchmod +x reproduce.sh"),
    _bash("bash reproduce.sh && cat results.json"),
    _bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
]


def _agents_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agents.yaml"
    path.write_text(text)
    return path


def test_a_preset_is_a_command_agent_in_one_line(tmp_path: Path) -> None:
    path = _agents_file(
        tmp_path,
        "mini:\n  preset: mini-swe-agent\n  model: openai/gpt-4o-mini\n"
        "  gateway: {calls: 40}\n  time_limit_s: 600\n  set_env: {MSWEA_SILENT_STARTUP: '0'}\n",
    )
    agent = load_agents(path)["mini"]
    assert agent["kind"] == "command" and agent["network"] == "gateway"
    assert agent["gateway"] == {"calls": 40} and agent["time_limit_s"] == 600  # its own keys win
    assert agent["set_env"]["MSWEA_SILENT_STARTUP"] == "0"
    assert agent["set_env"]["MSWEA_COST_TRACKING"] == "ignore_errors"  # the preset's others stay
    assert agent["set_env"]["SABENCH_TASK"].startswith("Reproduce the paper in /paper")
    assert agent["requirements"] == ["envs/agents/mini-swe-agent.txt"]
    assert "openai/$SABENCH_GATEWAY_MODEL" in agent["command"][-1]


def test_every_preset_is_a_valid_command_agent() -> None:
    """Each preset, with a model, passes the agents schema, and its files are in the repository."""
    for name, preset in load_presets()["presets"].items():
        validate({name: {**preset, "kind": "command", "model": "m"}}, "agents.schema.yaml", name)
        for requirements in preset.get("requirements", []):
            assert (REPO / requirements).is_file(), requirements


def test_an_unknown_preset_is_one_line(tmp_path: Path) -> None:
    def error(text: str) -> str:
        with pytest.raises(UserError) as caught:
            load_agents(_agents_file(tmp_path, text))
        return str(caught.value)

    line = error("a:\n  kind: replay\n  path: x/{paper}\nb:\n  preset: mini-swe-agnet\n")
    assert "agents.yaml: line 5: b.preset: unknown preset 'mini-swe-agnet'" in line, line
    assert "did you mean 'mini-swe-agent'" in line and "known: claude-code, mini-swe-agent" in line
    assert "sabench/agents/presets.yaml" in line and "\n" not in line
    line = error("b:\n  preset: mini-swe-agent\n  kind: basic\n  model: m\n")
    assert "b.kind" in line and "a preset is a command agent" in line
    line = error("b:\n  model: m\n")
    assert "'kind' is a required property" in line, line


def test_the_transcript_leaves_the_submission_and_no_link_is_followed(tmp_path: Path) -> None:
    spec = {"path": ".agent/trajectory.json", "messages": "messages"}
    work, run = tmp_path / "work", tmp_path / "run"
    (work / ".agent").mkdir(parents=True)
    host_file = tmp_path / "host-secret.json"
    host_file.write_text('{"messages": [{"role": "user", "content": "host"}]}')
    (work / ".agent" / "trajectory.json").symlink_to(host_file)
    assert capture_transcript(spec, work, run) is None  # a link out of the sandbox: left alone
    assert not (run / "transcript.jsonl").exists()
    (work / ".agent" / "trajectory.json").unlink()
    messages = [
        {"role": "system", "content": "be brief", "extra": {"response": "big"}},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1"}]},
    ]
    (work / ".agent" / "trajectory.json").write_text(json.dumps({"messages": messages}))
    (work / "main.py").write_text("print(1)\n")
    assert capture_transcript(spec, work, run) == "agent-transcript.json"
    assert sorted(p.name for p in work.iterdir()) == ["main.py"]  # its folder went with it
    events = [json.loads(line) for line in (run / "transcript.jsonl").read_text().splitlines()]
    assert events == [
        {"step": 0, "role": "system", "content": "be brief"},
        {"step": 1, "role": "assistant", "tool_calls": [{"id": "c1"}]},
    ]


@pytest.fixture(scope="module")
def mini_env() -> Path:
    """mini-swe-agent's own env, built once from its pins (skips without a package index)."""
    from sabench.agents.command import own_python_env

    try:
        return own_python_env({"requirements": ["envs/agents/mini-swe-agent.txt"]}, REPO)
    except Exception as exc:
        pytest.skip(f"cannot build mini-swe-agent's env: {exc}")


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer([{"replies": SESSION}]) as s:
        yield s


def _mini(server: ScriptedServer, **gateway: int) -> dict:
    return {
        "preset": "mini-swe-agent",
        "model": "openai/scripted",
        "api_base": server.url,
        "api_key_env": KEY_ENV,
        "max_retries": 0,
        "gateway": {"grace_s": 20, **gateway},
        "time_limit_s": 300,
    }


def _bwrap_runtime(sandbox_env: Path) -> dict:
    from sabench.sandbox import get_backend

    ok, why = get_backend("bwrap").available()
    if not ok:
        pytest.skip(f"bwrap unavailable: {why}")
    return {"backend": "bwrap", "python_env": str(sandbox_env)}


@pytest.mark.bwrap
def test_mini_swe_agent_spends_its_budget_and_keeps_what_it_wrote(
    mini_env: Path,
    sandbox_env: Path,
    server: ScriptedServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two calls allowed: the third is refused, the run is ``limit``, the file it wrote stays."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    path = _agents_file(tmp_path, json.dumps({"mini": _mini(server, calls=2)}))
    view = tmp_path / "agent_view"
    view.mkdir()
    shutil.copy(REPO / "resources" / "papers" / "ridge-gd" / "paper.md", view / "paper.md")
    out = tmp_path / "results" / "runs" / "mini" / "ridge-gd" / "0"
    record = run_agent(
        "mini",
        load_agents(path)["mini"],
        "ridge-gd",
        "0",
        out / "submission",
        out / "agent.json",
        REPO,
        view,
        _bwrap_runtime(sandbox_env),
    )
    assert record["status"] == "limit", record
    assert record["limit"] == "gateway budget spent (2 of 2 calls)"
    assert (out / "submission" / "main.py").read_text() == MAIN_PY
    assert not (out / "submission" / ".sabench-agent").exists()
    assert server.count == 2 and record["gateway"]["refused_budget"] >= 1
    assert record["transcript"] == "agent-transcript.json"
    roles = [
        json.loads(line).get("role") for line in (out / "transcript.jsonl").read_text().splitlines()
    ]
    assert roles[:3] == ["system", "user", "assistant"]
    task = server.bodies()[0]["messages"][1]["content"]
    assert "Reproduce the paper in /paper" in str(task)  # the preset's task reached the model
    for file in out.rglob("*"):
        if file.is_file():
            assert SECRET.encode() not in file.read_bytes(), file


@pytest.mark.workflow
@pytest.mark.bwrap
def test_mini_swe_agent_through_the_gateway_is_executed_and_judged(
    mini_env: Path, sandbox_env: Path, server: ScriptedServer, tmp_path: Path
) -> None:
    """One line of an agents file, the whole workflow: the agent's session writes main.py and
    reproduce.sh; the run is executed and judged as any other; its transcript is on record."""
    _bwrap_runtime(sandbox_env)
    agents = _agents_file(tmp_path, json.dumps({"mini": _mini(server, calls=20)}))
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
            "runtime={backend: bwrap}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert server.count == len(SESSION)
    runs = pd.read_parquet(results / "tables" / "runs.parquet")
    assert list(runs["agent_status"]) == ["submitted"]
    assert list(runs["execution_status"]) == ["ok"]
    assert list(runs["model_calls"]) == [len(SESSION)]
    judgments = pd.read_parquet(results / "tables" / "judgments.parquet")
    lr = judgments[judgments.sau_id == "ridge-gd-D1-001"]
    assert set(lr.verdict) == {"aligned"}, lr.reasoning.tolist()
    run = results / "runs" / "mini" / "ridge-gd" / "0"
    files = {p.name for p in (run / "submission").iterdir()}
    assert {"main.py", "reproduce.sh", "results.json"} <= files  # what its session wrote and ran
    assert ".sabench-agent" not in files  # its trajectory is in the run folder, not its code
    events = [json.loads(line) for line in (run / "transcript.jsonl").read_text().splitlines()]
    assert events[-1]["role"] == "exit" and "COMPLETE_TASK" in json.dumps(events[-2])
    for path in results.rglob("*"):
        if path.is_file() and path.suffix in {".json", ".jsonl", ".log", ".parquet", ".md"}:
            assert SECRET.encode() not in path.read_bytes(), path


@pytest.mark.docker
def test_mini_swe_agent_from_its_image_under_docker(
    docker_engine, server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same preset under docker: its image (recipe:mini-swe-agent, built offline from the same
    pins), no network but the gateway; the session's files are its submission."""
    from sabench.sandbox.images import ensure_image

    for name, value in docker_engine.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv(KEY_ENV, SECRET)
    try:
        ensure_image(docker_engine.client, "mini-swe-agent")
    except Exception as exc:  # no wheels for the image's Python, no base image
        pytest.skip(f"cannot build mini-swe-agent's image: {exc}")
    agent = load_agents(_agents_file(tmp_path, json.dumps({"mini": _mini(server, calls=20)})))
    view = tmp_path / "agent_view"
    view.mkdir()
    shutil.copy(REPO / "resources" / "papers" / "ridge-gd" / "paper.md", view / "paper.md")
    out = tmp_path / "results" / "runs" / "mini" / "ridge-gd" / "0"
    record = run_agent(
        "mini",
        agent["mini"],
        "ridge-gd",
        "0",
        out / "submission",
        out / "agent.json",
        REPO,
        view,
        {"backend": "docker"},
    )
    assert record["status"] == "submitted" and record["backend"] == "docker", record
    assert server.count == len(SESSION) and record["gateway"]["calls"] == len(SESSION)
    assert (out / "submission" / "main.py").read_text() == MAIN_PY
    assert json.loads((out / "submission" / "results.json").read_text())["learning_rate"] == 0.05
    assert not (out / "submission" / ".sabench-agent").exists()
    events = [json.loads(line) for line in (out / "transcript.jsonl").read_text().splitlines()]
    assert events[-1]["role"] == "exit"
    for file in out.rglob("*"):
        if file.is_file():
            assert SECRET.encode() not in file.read_bytes(), file


def _tool(name: str, call_id: str, **arguments: str) -> dict:
    """A tool call with an id of its own (Claude Code keys its tool results by id)."""
    return {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}


@pytest.mark.bwrap
def test_claude_code_through_the_gateway_under_bwrap(
    sandbox_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The npm preset: Claude Code's native binary, installed once from npm, shown read-only;
    it speaks Anthropic's messages API to the gateway, which asks the scripted server; its
    Bash tool writes the submission and its stream-json output is the transcript."""
    from sabench.agents.setup import agent_npm_folder

    runtime = _bwrap_runtime(sandbox_env)
    agent = load_agents(_agents_file(tmp_path, "cc:\n  preset: claude-code\n  model: m\n"))["cc"]
    debian_binary(("npm",), "npm")  # installs it on a fresh machine, as make test runs as root
    try:
        agent_npm_folder(agent, REPO)
    except Exception as exc:  # no npm, no registry
        pytest.skip(f"cannot install Claude Code: {exc}")
    monkeypatch.setenv(KEY_ENV, SECRET)
    session = [
        _tool("Bash", "toolu_1", command=f"cat > main.py <<'EOF'\n{MAIN_PY}EOF", description="w"),
        _tool(
            "Bash", "toolu_2", command="printf 'python3 main.py\\n' > reproduce.sh", description="w"
        ),
        {"content": "Done: main.py and reproduce.sh are written."},
    ]

    def turn(request: dict) -> dict:
        if not request.get("tools"):  # a side request (a title, a summary)
            return {"content": "reproduction"}
        results = sum(1 for m in request.get("messages") or [] if m.get("role") == "tool")
        return session[min(results, len(session) - 1)]

    with ScriptedServer([turn]) as server:
        agent.update(
            model="openai/scripted", api_base=server.url, api_key_env=KEY_ENV, max_retries=0
        )
        agent.update(time_limit_s=240)
        view = tmp_path / "agent_view"
        view.mkdir()
        shutil.copy(REPO / "resources" / "papers" / "ridge-gd" / "paper.md", view / "paper.md")
        out = tmp_path / "results" / "runs" / "cc" / "ridge-gd" / "0"
        record = run_agent(
            "cc",
            agent,
            "ridge-gd",
            "0",
            out / "submission",
            out / "agent.json",
            REPO,
            view,
            runtime,
        )
        bodies = server.bodies()
    assert record["status"] == "submitted", record
    assert (out / "submission" / "main.py").read_text() == MAIN_PY
    assert (out / "submission" / "reproduce.sh").read_text() == "python3 main.py\n"
    assert not (out / "submission" / ".sabench-agent").exists()
    assert "Reproduce the paper in /paper" in json.dumps(bodies[0]["messages"])
    calls = pd.read_parquet(out / "gateway_calls.parquet")
    assert set(calls["api"]) == {"anthropic.messages"} and (calls["outcome"] == "ok").all()
    assert record["gateway"]["calls"] == len(calls) >= len(session)
    events = (out / "transcript.jsonl").read_text()
    assert "toolu_2" in events and "Done: main.py" in events
    for file in out.rglob("*"):
        if file.is_file():
            assert SECRET.encode() not in file.read_bytes(), file
