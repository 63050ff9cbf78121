"""The LLM layer against a real HTTP server (tests/openai_server.py): replies, retries, timeouts,
structured output with repair, the cache, cost, concurrency, secrets. No external API."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai_server import ScriptedServer, scripted_server
from pydantic import BaseModel

from sabench.llm import (
    LLMCache,
    LLMClient,
    LLMError,
    LLMSettings,
    call_cost,
    extract_json,
    parse_reply,
    redact,
)

REPO = Path(__file__).resolve().parents[1]


class Answer(BaseModel):
    verdict: str
    score: float


def msgs(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    yield from scripted_server()


def client(server: ScriptedServer, tmp_path: Path, **kw: object) -> LLMClient:
    settings = {
        "model": "openai/scripted",
        "api_base": server.url,
        "cache_dir": str(tmp_path / "cache"),
        "backoff_s": 0.01,
        "max_retries": 2,
        "timeout_s": 5,
        **kw,
    }
    return LLMClient(LLMSettings.from_dict(settings))


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_chat_reply_tokens_and_configured_price(server: ScriptedServer, tmp_path: Path) -> None:
    server.set_script(
        [
            {
                "replies": [
                    {"content": "hello", "usage": {"prompt_tokens": 1000, "completion_tokens": 10}}
                ]
            }
        ]
    )
    c = client(server, tmp_path, prices={"input_per_mtok": 2.0, "output_per_mtok": 8.0})
    out = run(c.chat(msgs("hi")))
    assert out.content == "hello" and not out.cached and out.attempts == 1
    assert (out.prompt_tokens, out.completion_tokens) == (1000, 10)
    assert out.cost_usd == pytest.approx((1000 * 2.0 + 10 * 8.0) / 1e6)
    body = server.bodies()[0]
    assert body["model"] == "scripted" and body["messages"] == msgs("hi")
    assert body["temperature"] == 0.0


def test_price_from_litellm_map(server: ScriptedServer, tmp_path: Path) -> None:
    """A mapped model (gpt-4o-mini) served by our server is priced from litellm's bundled map."""
    server.set_script(
        [
            {
                "replies": [
                    {"content": "x", "usage": {"prompt_tokens": 1000, "completion_tokens": 100}}
                ]
            }
        ]
    )
    out = run(client(server, tmp_path, model="gpt-4o-mini").chat(msgs("hi")))
    expected, known = call_cost("gpt-4o-mini", 1000, 100)
    assert known and expected > 0
    assert out.cost_usd == pytest.approx(expected) and out.cost_known
    # an unmapped model without prices costs 0 and says so
    cost, known = call_cost("openai/scripted", 1000, 100)
    assert (cost, known) == (0.0, False)


def test_429_then_success(server: ScriptedServer, tmp_path: Path) -> None:
    server.set_script(
        [
            {
                "replies": [
                    {"status": 429, "error": "slow down", "headers": {"Retry-After": "0"}},
                    {"content": "ok"},
                ]
            }
        ]
    )
    c = client(server, tmp_path)
    out = run(c.chat(msgs("hi")))
    assert out.content == "ok" and out.attempts == 2
    assert server.count == 2
    assert c.usage.requests == 2 and c.usage.failures == 0


def test_500s_exhaust_the_retries(server: ScriptedServer, tmp_path: Path) -> None:
    server.set_script([{"replies": [{"status": 500, "error": "boom"}]}])
    c = client(server, tmp_path, max_retries=2)
    with pytest.raises(LLMError) as info:
        run(c.chat(msgs("hi")))
    assert info.value.kind == "server" and info.value.attempts == 3
    assert not info.value.fatal
    assert server.count == 3  # 1 + 2 retries, none hidden inside litellm or the SDK
    assert len(LLMCache(tmp_path / "cache")) == 0  # failures are not cached


def test_malformed_response_body_is_retried(server: ScriptedServer, tmp_path: Path) -> None:
    server.set_script([{"replies": [{"body": "{not json"}, {"content": "fine"}]}])
    out = run(client(server, tmp_path).chat(msgs("hi")))
    assert out.content == "fine" and server.count == 2


def test_slow_reply_past_the_timeout(server: ScriptedServer, tmp_path: Path) -> None:
    server.set_script([{"replies": [{"delay": 3.0, "content": "late"}]}])
    c = client(server, tmp_path, timeout_s=0.4, max_retries=1)
    t0 = time.monotonic()
    with pytest.raises(LLMError) as info:
        run(c.chat(msgs("hi")))
    assert info.value.kind == "timeout" and info.value.attempts == 2
    assert time.monotonic() - t0 < 2.5  # gave up at the timeout, did not wait for the reply
    assert server.count == 2


def test_bad_request_is_not_retried(server: ScriptedServer, tmp_path: Path) -> None:
    server.set_script([{"replies": [{"status": 400, "error": "bad"}]}])
    with pytest.raises(LLMError) as info:
        run(client(server, tmp_path).chat(msgs("hi")))
    assert info.value.kind == "bad_request" and server.count == 1


def test_rerun_is_served_from_the_cache(server: ScriptedServer, tmp_path: Path) -> None:
    server.set_script([{"replies": [{"content": "one"}, {"content": "two"}]}])
    first = run(client(server, tmp_path).chat(msgs("hi")))
    assert server.count == 1
    again = client(server, tmp_path)  # a new process would do the same: state is on disk
    second = run(again.chat(msgs("hi")))
    assert server.count == 1, "a rerun must make no request"
    assert second.cached and second.content == first.content == "one"
    assert (second.prompt_tokens, second.cost_usd) == (first.prompt_tokens, first.cost_usd)
    assert again.usage.cache_hits == 1 and again.usage.requests == 0
    # any change of model, messages or parameters is a miss
    run(client(server, tmp_path, temperature=0.5).chat(msgs("hi")))
    run(client(server, tmp_path).chat(msgs("hi!")))
    assert server.count == 3
    files = sorted((tmp_path / "cache").rglob("*"))
    entries = [f for f in files if f.is_file()]
    assert len(entries) == 3 and all(f.suffix == ".json" for f in entries)  # no temp files left
    entry = json.loads(entries[0].read_text())
    assert entry["key"] == entries[0].stem and "request" in entry


def test_cache_ignores_endpoint(tmp_path: Path) -> None:
    """Restarting a local server on another port keeps its cache."""
    with ScriptedServer([{"replies": [{"content": "a"}]}]) as s1:
        run(client(s1, tmp_path).chat(msgs("hi")))
    with ScriptedServer([{"replies": [{"content": "b"}]}]) as s2:
        out = run(client(s2, tmp_path).chat(msgs("hi")))
        assert out.content == "a" and s2.count == 0


def test_structured_output_with_one_repair(server: ScriptedServer, tmp_path: Path) -> None:
    good = {"verdict": "aligned", "score": 1}
    server.set_script(
        [
            {"match": "Your reply could not be used", "replies": [{"json": good}]},
            {"match": "first", "replies": [{"content": '{"verdict": "aligned", "score": '}]},
            {"match": "second", "replies": [{"content": "no json here"}]},
            {"match": "third", "replies": [{"content": f"```json\n{json.dumps(good)}\n```"}]},
        ]
    )
    c = client(server, tmp_path)
    out = run(c.structured(msgs("first"), Answer))
    assert out.value == Answer(verdict="aligned", score=1.0) and out.repaired
    assert len(out.calls) == 2 and out.error is None
    repair = server.bodies()[1]["messages"]
    assert repair[-2] == {"role": "assistant", "content": '{"verdict": "aligned", "score": '}
    assert "invalid JSON" in repair[-1]["content"]
    assert server.bodies()[0]["response_format"]["type"] == "json_schema"
    # a fenced block is fine at once
    out = run(c.structured(msgs("third"), Answer))
    assert out.value is not None and not out.repaired


def test_structured_output_invalid_twice_is_an_error(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.set_script([{"replies": [{"json": {"verdict": "aligned"}}]}])  # score missing
    out = run(client(server, tmp_path).structured(msgs("x"), Answer))
    assert out.value is None and server.count == 2
    assert out.error is not None and "after one repair" in out.error and "score" in out.error


def test_tool_calls_round_trip(server: ScriptedServer, tmp_path: Path) -> None:
    server.set_script(
        [{"replies": [{"tool_calls": [{"name": "bash", "arguments": {"cmd": "ls"}}]}]}]
    )
    tools = [
        {
            "type": "function",
            "function": {
                "name": "bash",
                "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
            },
        }
    ]
    out = run(client(server, tmp_path).chat(msgs("list files"), tools=tools))
    assert out.tool_calls == [{"id": "call_0", "name": "bash", "arguments": '{"cmd": "ls"}'}]
    assert server.bodies()[0]["tools"][0]["function"]["name"] == "bash"


def test_concurrency_is_bounded(server: ScriptedServer, tmp_path: Path) -> None:
    server.set_script([{"replies": [{"delay": 0.3, "content": "ok"}]}])
    c = client(server, tmp_path, concurrency=2)

    async def many() -> list[object]:
        return await asyncio.gather(*(c.chat(msgs(f"q{i}")) for i in range(6)))

    t0 = time.monotonic()
    assert len(run(many())) == 6
    assert server.max_in_flight == 2
    assert time.monotonic() - t0 >= 0.85  # three rounds of two


def test_api_key_from_env_never_stored(
    server: ScriptedServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret = "sk-test-SECRETVALUE-0123456789"
    monkeypatch.setenv("SABENCH_TEST_KEY", secret)
    server.set_script(
        [{"replies": [{"status": 500, "error": f"echo {secret}"}, {"content": "ok"}]}]
    )
    c = client(server, tmp_path, api_key_env="SABENCH_TEST_KEY")
    run(c.chat(msgs("hi")))
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {secret}"
    for f in (tmp_path / "cache").rglob("*.json"):
        assert secret not in f.read_text()
    assert secret not in redact(f"oops {secret} and sk-abcdefghijklmnop")
    assert redact("sk-abcdefghijklmnop") == "sk-abcdef***"
    assert "retrying" in caplog.text and secret not in caplog.text  # the 500 echoed the key


def test_missing_key_variable_is_fatal(
    server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SABENCH_NO_SUCH_KEY", raising=False)
    with pytest.raises(LLMError) as info:
        run(client(server, tmp_path, api_key_env="SABENCH_NO_SUCH_KEY").chat(msgs("hi")))
    assert info.value.fatal and "SABENCH_NO_SUCH_KEY" in str(info.value)
    assert server.count == 0


def test_the_providers_own_key_is_checked_before_any_request(
    server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No api_key_env and no api_base: the variable litellm names for the provider is checked at
    the first request, fatal at once (no retries, no 'Missing credentials' per SAU)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    c = client(server, tmp_path, model="openai/gpt-4o-mini", api_base=None, max_retries=4)
    with pytest.raises(LLMError) as info:
        run(c.chat(msgs("hi")))
    assert info.value.fatal and info.value.attempts == 1
    assert "environment variable OPENAI_API_KEY is not set" in str(info.value)
    assert server.count == 0
    # a local server (api_base) needs no key: the scripted server answers without one
    server.set_script([{"replies": [{"content": "ok"}]}])
    assert run(client(server, tmp_path).chat(msgs("hi"))).content == "ok"
    assert server.requests[-1]["headers"]["authorization"] == "Bearer sk-no-key-required"


def test_missing_key_names_the_variable_and_where_to_set_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from types import SimpleNamespace

    from sabench.lifecycle import missing_api_keys
    from sabench.llm.keys import missing_key

    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "SABENCH_K"):
        monkeypatch.delenv(name, raising=False)
    line = missing_key("anthropic/claude-3-5-sonnet", {}, "judge x", "api_key_env", "cfg.key")
    assert line is not None
    assert line.startswith("judge x: environment variable ANTHROPIC_API_KEY is not set")
    assert line.endswith("name the variable that holds the key in cfg.key")
    assert missing_key("openai/gpt-4o-mini", {"api_base": "http://h:1/v1"}, "j", "f") is None
    assert missing_key("hosted_vllm/qwen", {}, "j", "f") is None  # litellm: no key needed
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-x")
    assert missing_key("anthropic/claude-3-5-sonnet", {}, "j", "f") is None

    settings = SimpleNamespace(
        agents={
            "replay": {"kind": "replay", "path": "x/{paper}"},
            "local": {"kind": "basic", "model": "openai/q", "api_base": "http://h:1/v1"},
            "cloud": {"kind": "pipeline", "model": "openai/gpt-4o"},
        },
        judges=["static", "llm:openai/gpt-4o-mini", "llm:openai/local"],
        drift_runs=[],
        config={
            "judge_settings": {
                "llm:openai/local": {"api_base": "http://h:1/v1"},
                "llm:anthropic/claude-3-5-sonnet": {"api_key_env": "SABENCH_K"},
            },
            "saus_extraction": {"extractor": "llm:anthropic/claude-3-5-sonnet"},
        },
    )
    problems = missing_api_keys(settings)
    assert [p.split(":")[0] for p in problems] == [
        "agent cloud",
        "judge llm",  # judge llm:openai/gpt-4o-mini
        "saus_extraction llm",
    ]
    assert (
        "OPENAI_API_KEY" in problems[0] and "config/agents.yaml: cloud.api_key_env" in problems[0]
    )
    assert 'judge_settings["llm:openai/gpt-4o-mini"].api_key_env' in problems[1]
    assert "environment variable SABENCH_K is not set" in problems[2]


def test_the_grid_budget_stops_requests_not_cached_answers(
    server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every client of every process adds to one ledger; once the cap is reached, requests are
    refused before they are sent (fatal: the job ends), while the cache still answers."""
    ledger = tmp_path / "logs" / "llm_spend.jsonl"
    monkeypatch.setenv("SABENCH_LLM_BUDGET_USD", "0.0025")
    monkeypatch.setenv("SABENCH_LLM_LEDGER", str(ledger))
    usage = {"prompt_tokens": 1000, "completion_tokens": 0}
    server.set_script([{"replies": [{"content": f"r{i}", "usage": usage} for i in range(5)]}])
    price = {"prices": {"input_per_mtok": 1.0, "output_per_mtok": 0.0}}  # $0.001 a call
    for text in ("a", "b", "c"):  # separate clients, as separate jobs would be
        run(client(server, tmp_path, **price).chat(msgs(text)))
    lines = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert [line["cost_usd"] for line in lines] == pytest.approx([0.001] * 3)
    assert all(line["model"] == "openai/scripted" for line in lines)
    blocked = client(server, tmp_path, **price)
    with pytest.raises(LLMError) as info:
        run(blocked.chat(msgs("d")))
    assert info.value.kind == "budget" and info.value.fatal and server.count == 3
    assert "$0.0025 (llm_budget_usd) is spent: $0.0030" in str(info.value)
    assert run(blocked.chat(msgs("a"))).cached  # answered before: free, never refused
    monkeypatch.setenv("SABENCH_LLM_BUDGET_USD", "1")  # raised: the grid goes on
    assert run(client(server, tmp_path, **price).chat(msgs("d"))).content == "r3"
    monkeypatch.setenv("SABENCH_LLM_BUDGET_USD", "lots")
    with pytest.raises(LLMError, match="SABENCH_LLM_BUDGET_USD='lots' is not a number"):
        client(server, tmp_path)


def test_the_ledger_counts_every_process(tmp_path: Path) -> None:
    """Appends from concurrent processes stay whole lines; a torn last line waits for its end."""
    from sabench.llm.budget import SpendLedger

    ledger = tmp_path / "spend.jsonl"
    code = (
        "import sys\n"
        "from sabench.llm.budget import SpendLedger\n"
        "ledger = SpendLedger(sys.argv[1], 1e9)\n"
        "for _ in range(200):\n"
        "    ledger.add(0.5, 'm', 1, 1)\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(ledger)], cwd=REPO) for _ in range(4)
    ]
    assert all(p.wait(60) == 0 for p in procs)
    reader = SpendLedger(ledger, 500.0)
    assert reader.spent() == pytest.approx(400.0)
    with ledger.open("a") as fh:
        fh.write('{"cost_usd": 7')  # a writer mid-line
    assert reader.spent() == pytest.approx(400.0)
    with pytest.raises(Exception, match="is spent"):
        SpendLedger(ledger, 400.0).check()
    with ledger.open("a") as fh:
        fh.write("}\n")
    assert reader.spent() == pytest.approx(407.0)


def test_json_extraction() -> None:
    assert extract_json('noise {"a": 1} noise') == {"a": 1}
    assert extract_json('```json\n{"a": [1, 2]}\n```') == {"a": [1, 2]}
    with pytest.raises(ValueError):
        extract_json("")
    value, error = parse_reply('{"verdict": "x", "score": "high"}', Answer)
    assert value is None and error is not None and error.startswith("score")


def test_importing_the_llm_layer_does_not_import_litellm() -> None:
    code = (
        "import sys, sabench.llm, sabench.judges.llm_judge, sabench.extract, sabench.grid;"
        "assert 'litellm' not in sys.modules, 'litellm imported'"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr


LIVE_MODEL = os.environ.get("SABENCH_LIVE_MODEL", "openai/gpt-4o-mini")


@pytest.mark.live
@pytest.mark.skipif(
    not os.environ.get("SABENCH_LIVE_KEY_ENV") and not os.environ.get("OPENAI_API_KEY"),
    reason="live tests need a key: OPENAI_API_KEY, or SABENCH_LIVE_MODEL + SABENCH_LIVE_KEY_ENV",
)
def test_live_structured_reply(tmp_path: Path) -> None:
    settings = LLMSettings.from_dict(
        {
            "model": LIVE_MODEL,
            "api_key_env": os.environ.get("SABENCH_LIVE_KEY_ENV", "OPENAI_API_KEY"),
            "cache_dir": str(tmp_path),
            "max_tokens": 200,
        }
    )
    c = LLMClient(settings)
    prompt = 'Answer with JSON {"verdict": "aligned", "score": 1} exactly.'
    out = run(c.structured(msgs(prompt), Answer))
    assert out.value is not None and out.prompt_tokens > 0
