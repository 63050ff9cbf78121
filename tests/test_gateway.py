"""The model gateway of a command agent (network: gateway), over real HTTP: a scripted
OpenAI-compatible server on loopback is the provider, the gateway serves its unix socket, and a
command agent (a small urllib client) runs in a real bwrap sandbox and a real docker container
with no network. What it reaches, what it spends, what is recorded, and where the key never is."""

from __future__ import annotations

import http.client
import json
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from openai_server import ScriptedServer

from sabench.agents import run_agent
from sabench.aggregate import agent_costs
from sabench.aggregate.read import run_row
from sabench.errors import UserError
from sabench.gateway.server import Gateway
from sabench.gateway.settings import GatewaySettings

REPO = Path(__file__).resolve().parents[1]
SECRET = "sk-gateway-secret-5d2e8b1c9a"
KEY_ENV = "SABENCH_GATEWAY_TEST_KEY"
PRICES = {"input_per_mtok": 1.0, "output_per_mtok": 2.0}
REPRODUCE = "echo reproduced > out.txt\n"
#: The agent: asks for reproduce.sh (whole and streamed), probes the network, then asks until
#: refused; reports what it saw into its submission and its environment into its log.
AGENT_PY = r"""
import json, os, socket, sys, urllib.error, urllib.request

base, token = os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"]


def ask(text, stream=False, key=token):
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": text}], "stream": stream}
    request = urllib.request.Request(
        base + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return answer.read().decode()


def reach(host, port):
    try:
        socket.create_connection((host, port), timeout=3).close()
        return "reached"
    except OSError as exc:
        return type(exc).__name__


open("reproduce.sh", "w").write(json.loads(ask("write reproduce.sh"))["choices"][0]["message"]["content"])
events = [l[6:] for l in ask("stream it", stream=True).splitlines() if l.startswith("data: ")]
streamed = "".join(
    json.loads(e)["choices"][0]["delta"].get("content") or "" for e in events if e != "[DONE]"
)
try:
    ask("sneak", key="sk-guessed")
    wrong = 200
except urllib.error.HTTPError as exc:
    wrong = exc.code
report = {
    "streamed": streamed,
    "done": events[-1],
    "wrong_token": wrong,
    "upstream": reach("127.0.0.1", int(os.environ["UPSTREAM_PORT"])),
    "host_address": reach(os.environ["HOST_IP"], int(os.environ["HOST_PORT"])),
    "external": reach("192.0.2.1", 80),
    "argv": sys.argv[1:],
}
calls = 2
while calls < 50:
    try:
        ask("more")
        calls += 1
    except urllib.error.HTTPError as exc:
        report.update(refused=exc.code, message=json.loads(exc.read())["error"]["message"])
        break
report["calls"] = calls
json.dump(report, open("agent_report.json", "w"))
print(json.dumps(dict(os.environ)))
"""


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as s:
        s.set_script(
            [
                {"match": "reproduce.sh", "replies": [{"content": REPRODUCE}]},
                {"match": "stream it", "replies": [{"content": "streamed words"}]},
                {"replies": [{"content": "more words"}]},
            ]
        )
        yield s


@pytest.fixture
def host_listener(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, int]]:
    """A TCP server on every address of the host, and the host's outward address (where its
    route to the world leaves): reachable from the host itself, so a sandbox that reaches it
    has the host's network. In HOST_IP and HOST_PORT for the agent."""
    with socket.socket() as listener, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        listener.bind(("0.0.0.0", 0))
        listener.listen(8)
        try:
            udp.connect(("192.0.2.1", 9))  # no packet is sent: the kernel picks the source
            address = udp.getsockname()[0]
        except OSError:
            pytest.skip("this host has no route beyond its loopback")
        port = listener.getsockname()[1]
        socket.create_connection((address, port), timeout=3).close()  # the host reaches it
        monkeypatch.setenv("HOST_IP", address)
        monkeypatch.setenv("HOST_PORT", str(port))
        yield address, port


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, SECRET)
    return SECRET


def _agent(server: ScriptedServer, **gateway: Any) -> dict[str, Any]:
    return {
        "model": "openai/scripted",
        "api_base": server.url,
        "api_key_env": KEY_ENV,
        "prices": PRICES,
        "max_retries": 0,
        "network": "gateway",
        "gateway": gateway,
    }


class _UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path: Path) -> None:
        super().__init__("gateway", timeout=30)
        self.socket_path = str(path)

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.socket_path)


def _post(gateway: Gateway, path: str, body: dict, token: str | None = None) -> tuple[int, str]:
    conn = _UnixHTTP(gateway.socket_path)
    headers = {"Authorization": f"Bearer {token or gateway.token}"}
    conn.request("POST", path, json.dumps(body), headers)
    answer = conn.getresponse()
    return answer.status, answer.read().decode()


def test_gateway_forwards_with_the_key_meters_and_refuses(
    server: ScriptedServer, key: str, tmp_path: Path
) -> None:
    """The key goes upstream and nowhere else; a wrong token is a 401 on the record; streamed
    requests get server-sent events; Anthropic messages are answered; the third call is refused."""
    settings = GatewaySettings.from_agent(_agent(server, calls=2))
    chat = {"model": "gpt-4o", "messages": [{"role": "user", "content": "write reproduce.sh"}]}
    with Gateway(settings) as gateway:
        status, text = _post(gateway, "/v1/chat/completions", chat, token="sk-wrong")
        assert status == 401 and "wrong token" in text
        status, text = _post(gateway, "/v1/chat/completions", chat)
        assert status == 200, text
        reply = json.loads(text)
        assert reply["choices"][0]["message"]["content"] == REPRODUCE
        assert reply["model"] == "gpt-4o"  # the name it asked for
        anthropic = {
            "model": "claude",
            "max_tokens": 50,
            "stream": True,
            "messages": chat["messages"],
        }
        status, text = _post(gateway, "/v1/messages", anthropic)
        assert status == 200, text
        events = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
        assert events[0]["type"] == "message_start"
        assert events[-1]["type"] == "message_stop"
        deltas = [e["delta"]["text"] for e in events if e["type"] == "content_block_delta"]
        assert deltas == [REPRODUCE]
        status, text = _post(gateway, "/v1/messages/count_tokens", anthropic)
        assert status == 200 and json.loads(text)["input_tokens"] > 0  # no call, no budget
        status, text = _post(gateway, "/v1/chat/completions", chat)
        assert status == 429 and "budget is spent (2 of 2 calls)" in text
    assert server.count == 2
    assert {r["headers"]["authorization"] for r in server.requests} == {f"Bearer {key}"}
    assert server.bodies()[0]["model"] == "scripted"  # routed to the agent's model
    path = gateway.write_record(tmp_path)
    calls = pd.read_parquet(path)
    assert list(calls["outcome"]) == ["unauthorized", "ok", "ok", "budget"]
    assert list(calls["status"]) == [401, 200, 200, 429]
    assert list(calls["api"]) == [
        "chat.completions",
        "chat.completions",
        "anthropic.messages",
        "chat.completions",
    ]
    ok = calls[calls["outcome"] == "ok"]
    assert (ok["prompt_tokens"] > 0).all() and (ok["cost_usd"] > 0).all()
    summary = gateway.summary()
    assert summary["calls"] == 2 and summary["unauthorized"] == 1
    assert summary["limit"] == "gateway budget spent (2 of 2 calls)"
    assert key not in path.read_bytes().decode(errors="replace")


def test_a_token_budget_counts_what_the_provider_reports(server: ScriptedServer, key: str) -> None:
    server.set_script(
        [{"replies": [{"content": "x", "usage": {"prompt_tokens": 30, "completion_tokens": 20}}]}]
    )
    settings = GatewaySettings.from_agent(_agent(server, tokens=60))
    chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with Gateway(settings) as gateway:
        assert _post(gateway, "/v1/chat/completions", chat)[0] == 200
        assert _post(gateway, "/v1/chat/completions", chat)[0] == 200  # 50 < 60 before it
        status, text = _post(gateway, "/v1/chat/completions", chat)
    assert status == 429 and "100 of 60 tokens" in text
    assert server.count == 2


def test_an_unreachable_provider_is_a_fault_not_a_score(key: str, tmp_path: Path) -> None:
    """The provider's failure is not the agent's: the run is redone, never scored."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    agent = {
        "kind": "command",
        "model": "openai/scripted",
        "api_base": f"http://127.0.0.1:{port}/v1",
        "max_retries": 0,
        "network": "gateway",
        "command": [
            "python3",
            "-c",
            "import os, urllib.request as u\n"
            "r = u.Request(os.environ['OPENAI_BASE_URL'] + '/chat/completions', data=b'"
            '{"model": "m", "messages": []}'
            "', headers={'Authorization': 'Bearer ' + os.environ['OPENAI_API_KEY']})\n"
            "try: u.urlopen(r)\nexcept Exception as e: print(e)\nopen('x', 'w').write('x')",
        ],
    }
    record, _ = _run(tmp_path, agent, {"backend": "local"})
    assert record["status"] == "fault" and record["fault"] == "provider_unreachable", record
    assert "failed at the provider through the gateway" in record["error"]


def _run(tmp_path: Path, agent: dict, runtime: dict) -> tuple[dict, Path]:
    view = tmp_path / "agent_view"
    view.mkdir(exist_ok=True)
    shutil.copy(REPO / "resources" / "papers" / "ridge-gd" / "paper.md", view / "paper.md")
    out = tmp_path / "results" / "runs" / "mine" / "ridge-gd" / "0"  # the workflow's layout
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


def _gateway_agent(
    server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, calls: int
) -> dict[str, Any]:
    code = tmp_path / "agent-code"
    code.mkdir()
    (code / "agent.py").write_text(AGENT_PY)
    port = server.url.split(":")[2].split("/")[0]
    monkeypatch.setenv("UPSTREAM_PORT", port)
    return {
        **_agent(server, calls=calls, grace_s=20),
        "command": ["python3", "/agent/agent.py"],
        "mounts": [{"source": str(code), "target": "/agent"}],
        "env": ["UPSTREAM_PORT", "HOST_IP", "HOST_PORT"],
        "time_limit_s": 120,
    }


def _check_run(record: dict, out: Path, server: ScriptedServer, key: str, calls: int) -> None:
    """What every backend must give: the submission from the model's reply, no other address
    reached, the budget's limit, the record, and the key nowhere but upstream."""
    assert record["status"] == "limit", record
    assert record["limit"] == f"gateway budget spent ({calls} of {calls} calls)"
    submission = out / "submission"
    assert (submission / "reproduce.sh").read_text() == REPRODUCE
    report = json.loads((submission / "agent_report.json").read_text())
    assert report["streamed"] == "streamed words" and report["done"] == "[DONE]"
    assert report["wrong_token"] == 401
    assert report["upstream"] == "ConnectionRefusedError", report  # its own loopback: nothing
    assert report["host_address"] != "reached" and report["external"] != "reached", report
    assert report["refused"] == 429 and "budget is spent" in report["message"]
    assert report["calls"] == calls
    assert server.count == calls
    gateway = record["gateway"]
    assert gateway["calls"] == calls and gateway["refused_budget"] == 1
    assert gateway["unauthorized"] == 1
    assert record["prompt_tokens"] > 0 and record["cost_usd"] > 0
    table = pd.read_parquet(out / "gateway_calls.parquet")
    assert (table["outcome"] == "ok").sum() == calls
    assert table["stream"].sum() == 1
    log = (out / "agent-command.log").read_text()
    assert "SABENCH_GATEWAY_TOKEN" in log  # the agent's environment was printed
    for text in (
        log,
        (out / "agent.json").read_text(),
        (submission / "agent_report.json").read_text(),
        (out / "gateway_calls.parquet").read_bytes().decode(errors="replace"),
    ):
        assert key not in text
    printed = next(line for line in log.splitlines() if line.startswith("{"))
    assert KEY_ENV not in json.loads(printed)
    # the tables say so: the run's row and the agent's cost for the paper
    row = run_row(out.parents[3], ("mine", "ridge-gd", "0"))
    assert row["agent_status"] == "limit" and row["model_calls"] == calls
    assert row["agent_limit"] == record["limit"]
    costs = agent_costs(pd.DataFrame([row])).iloc[0]
    assert costs["n_runs_limit"] == 1 and costs["model_calls"] == calls
    assert costs["cost_usd"] == pytest.approx(record["cost_usd"]) and costs["cost_usd"] > 0


@pytest.mark.bwrap
def test_command_agent_through_the_gateway_under_bwrap(
    host_listener: tuple[str, int],
    server: ScriptedServer,
    key: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    sandbox_env: Path,
) -> None:
    from sabench.sandbox import get_backend

    ok, why = get_backend("bwrap").available()
    if not ok:
        pytest.skip(f"bwrap unavailable: {why}")
    agent = _gateway_agent(server, tmp_path, monkeypatch, calls=3)
    runtime = {"backend": "bwrap", "python_env": str(sandbox_env)}
    record, out = _run(tmp_path, agent, runtime)
    _check_run(record, out, server, key, calls=3)


def _entrypoint_agent(
    engine: Any,
    backend: str,
    server: ScriptedServer,
    key: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The agent is its image's ENTRYPOINT (command: its arguments), as most agents' images are:
    the forwarder starts first and runs the entrypoint with them."""
    import io

    for name, value in engine.env().items():
        monkeypatch.setenv(name, value)
    recipe = f'FROM {engine.image.ref}\nENTRYPOINT ["python3", "/agent/agent.py"]\n'
    engine.client.images.build(
        fileobj=io.BytesIO(recipe.encode()), tag="sabench-test/gateway-agent:1", network_mode="none"
    )
    agent = {
        **_gateway_agent(server, tmp_path, monkeypatch, calls=2),
        "image": "sabench-test/gateway-agent:1",
        "command": ["--from-config"],
    }
    record, out = _run(tmp_path, agent, {"backend": backend})
    assert record["backend"] == backend
    _check_run(record, out, server, key, calls=2)
    report = json.loads((out / "submission" / "agent_report.json").read_text())
    assert report["argv"] == ["--from-config"]


@pytest.mark.docker
def test_command_agent_through_the_gateway_under_docker(
    host_listener: tuple[str, int],
    docker_engine,
    server: ScriptedServer,
    key: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _entrypoint_agent(docker_engine, "docker", server, key, tmp_path, monkeypatch)


@pytest.mark.podman
def test_command_agent_through_the_gateway_under_podman(
    host_listener: tuple[str, int],
    podman_engine,
    server: ScriptedServer,
    key: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _entrypoint_agent(podman_engine, "podman", server, key, tmp_path, monkeypatch)


def test_the_docker_launcher_runs_the_image_entrypoint(tmp_path: Path) -> None:
    from sabench.sandbox import SandboxSpec
    from sabench.sandbox.docker import DockerSandbox

    spec = SandboxSpec(
        command=["--task", "x"], workdir=tmp_path, options={"launcher": ["python3", "fw", "--"]}
    )
    kwargs = DockerSandbox().create_kwargs(
        spec, "sha256:abc", tmp_path, uid=1000, gid=1000, labels={}, fsize=1,
        image_entrypoint=["agent-bin"],
    )  # fmt: skip
    assert kwargs["entrypoint"] == ["python3", "fw", "--"]
    assert kwargs["command"] == ["agent-bin", "--task", "x"]
    assert kwargs["network_mode"] == "none"


def test_gateway_settings_are_checked_before_any_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    from sabench.grid import load_agents
    from sabench.lifecycle import missing_api_keys

    def error(text: str) -> str:
        path = tmp_path / "agents.yaml"
        path.write_text(text)
        with pytest.raises(UserError) as caught:
            load_agents(path)
        return str(caught.value)

    head = "a:\n  kind: command\n  command: [x]\n  model: openai/m\n  network: gateway\n"
    line = error(head + "  gateway: {calls: 0}\n")
    assert "a.gateway.calls" in line and "a budget of 0 model calls lets no call through" in line
    assert "line 6" in line and "\n" not in line
    assert "needs kind: command and network: gateway" in error(
        "a:\n  kind: command\n  command: [x]\n  gateway: {calls: 3}\n"
    )
    assert "name one" in error("a:\n  kind: command\n  command: [x]\n  network: gateway\n")
    assert "is for command agents" in error("a:\n  kind: basic\n  model: m\n  network: gateway\n")
    line = error(head + "  api_key_env: MY_KEY\n  env: [MY_KEY]\n")
    assert "per-run token" in line and "a.env" in line

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    agent = {"kind": "command", "command": ["x"], "network": "gateway", "model": "openai/gpt-4o"}
    agent["gateway"] = {"models": {"claude": "anthropic/claude-3-5-sonnet"}}
    settings = SimpleNamespace(
        agents={"a": agent}, judges=[], drift_runs=[], config={"judge_settings": {}}
    )
    problems = missing_api_keys(settings)
    assert [p.split(":")[0] for p in problems] == [
        "agent a (gateway route anthropic/claude-3-5-sonnet)",
        "agent a (gateway route openai/gpt-4o)",
    ]
    assert "ANTHROPIC_API_KEY" in problems[0] and "OPENAI_API_KEY" in problems[1]


def test_a_gateway_that_cannot_start_is_a_fault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A temporary folder too deep for a unix socket's path (108 bytes): one line, a fault."""
    import tempfile

    deep = tmp_path / ("d" * 100)
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    agent = {
        "model": "openai/m",
        "api_base": "http://127.0.0.1:9/v1",
        "network": "gateway",
        "command": ["true"],
    }
    record, _ = _run(tmp_path, agent, {"backend": "local"})
    assert record["status"] == "fault" and record["fault"] == "sandbox_error"
    assert record["error"].startswith("the model gateway could not start: ")
    assert "\n" not in record["error"]


@pytest.mark.bwrap
def test_an_agent_that_goes_on_after_its_budget_is_ended_and_keeps_what_it_wrote(
    server: ScriptedServer, key: str, tmp_path: Path, sandbox_env: Path
) -> None:
    """It ignores the 429 and waits (as an agent retrying forever would): the gateway's forwarder
    ends it after grace_s, long before its time limit; the run is ``limit``, its files kept."""
    stubborn = (
        "import os, time, urllib.request, urllib.error\n"
        "request = urllib.request.Request(os.environ['OPENAI_BASE_URL'] + '/chat/completions',"
        ' data=b\'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}\','
        " headers={'Authorization': 'Bearer ' + os.environ['OPENAI_API_KEY']})\n"
        "for _ in range(3):\n"
        "    try: urllib.request.urlopen(request).read()\n"
        "    except urllib.error.HTTPError as exc: open('partial.txt', 'w').write(str(exc.code))\n"
        "time.sleep(300)\n"
    )
    agent = {
        **_agent(server, calls=1, grace_s=1),
        "command": ["python3", "-c", stubborn],
        "time_limit_s": 200,
    }
    record, out = _run(tmp_path, agent, {"backend": "bwrap", "python_env": str(sandbox_env)})
    assert record["status"] == "limit" and record["limit"].startswith("gateway budget spent")
    assert record["wall_s"] < 60, record["wall_s"]
    assert (out / "submission" / "partial.txt").read_text() == "429"
    assert record["gateway"]["refused_budget"] == 2 and server.count == 1
    assert "gateway budget spent: ending the agent" in (out / "agent-command.log").read_text()


def test_the_responses_api_with_tools_whole_and_streamed(server: ScriptedServer, key: str) -> None:
    """Codex CLI's API: instructions, input items (a function call and its output) and tools go
    upstream as chat messages; the tool call comes back as a function_call item, and streamed as
    the events of a stream."""
    server.set_script(
        [
            {"match": "a.py", "replies": [{"content": "done"}]},  # the tool's output came back
            {"match": "list files", "replies": [{"tool_calls": [{"name": "shell", "arguments": {"cmd": "ls"}}]}]},
        ]
    )  # fmt: skip
    tools = [{"type": "function", "name": "shell", "parameters": {"type": "object"}}]
    first = {"model": "codex", "instructions": "be brief", "input": "list files", "tools": tools}
    settings = GatewaySettings.from_agent(_agent(server))
    with Gateway(settings) as gateway:
        status, text = _post(gateway, "/v1/responses", first)
        assert status == 200, text
        answer = json.loads(text)
        call = answer["output"][0]
        assert answer["object"] == "response" and answer["model"] == "codex"
        assert call["type"] == "function_call" and json.loads(call["arguments"]) == {"cmd": "ls"}
        follow = {
            **first,
            "stream": True,
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "list files"}]},
                {k: call[k] for k in ("type", "call_id", "name", "arguments")},
                {"type": "function_call_output", "call_id": call["call_id"], "output": "a.py"},
            ],
        }
        status, text = _post(gateway, "/v1/responses", follow)
    assert status == 200, text
    events = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert [e["delta"] for e in events if e["type"] == "response.output_text.delta"] == ["done"]
    assert events[-1]["response"]["output"][0]["content"][0]["text"] == "done"
    sent = server.bodies()[1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool"]
    assert sent[2]["tool_calls"][0]["id"] == sent[3]["tool_call_id"] == call["call_id"]
    assert server.bodies()[0]["tools"][0]["function"]["name"] == "shell"


def test_the_grids_llm_budget_stops_a_gateway_run_unfinished(
    server: ScriptedServer, key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """llm_budget_usd covers the gateway's calls: once it is spent the run is not recorded as
    finished (a rerun with a higher cap redoes it), as for the basic agent."""
    from sabench.llm.budget import BUDGET_ENV, LEDGER_ENV

    monkeypatch.setenv(BUDGET_ENV, "0.000001")
    monkeypatch.setenv(LEDGER_ENV, str(tmp_path / "spend.jsonl"))
    ask = (
        "import os, urllib.request as u\n"
        "r = u.Request(os.environ['OPENAI_BASE_URL'] + '/chat/completions', data=b'"
        '{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'
        "', headers={'Authorization': 'Bearer ' + os.environ['OPENAI_API_KEY']})\n"
        "for _ in range(2):\n"
        "    try: u.urlopen(r).read()\n"
        "    except Exception as e: print(e)\n"
    )
    agent = {**_agent(server), "command": ["python3", "-c", ask]}
    with pytest.raises(UserError, match="llm_budget_usd"):
        _run(tmp_path, agent, {"backend": "local"})
    assert server.count == 1
    assert not list(tmp_path.rglob("agent.json"))
