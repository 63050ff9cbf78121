"""The ``basic`` scaffold: a ReAct loop on the host whose tools run inside the agent's sandbox.

The model sees OpenAI-style function tools ``bash(command)``, ``read_file(path)``,
``write_file(path, content)`` and ``submit()``. Step, wall-time and dollar limits end the loop with
status ``limit``; an LLM failure ends it with ``error``; a bad tool call is an observation the model
can correct. Every message goes to ``transcript.jsonl`` with the key redacted.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sabench.agents.tools import TOOL_SPECS, ToolError, Workspace, call_tool, parse_arguments
from sabench.io import atomic_path

DEFAULT_MAX_STEPS = 50
DEFAULT_TIME_LIMIT_S = 3600.0
NUDGE = "Use the tools to work on the submission, and call submit() when it is complete."


@dataclass
class AgentOutcome:
    """What a model-driven agent reports into agent.json."""

    status: str = "submitted"
    steps: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    error: str | None = None
    limit: str | None = None
    #: status ``fault``: its cause (sabench.faults.FAULT_CAUSES); the run is redone, never scored
    fault: str | None = None
    cached_calls: int = 0
    model: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def end_with_llm_error(out: AgentOutcome, exc: BaseException, redact: Any) -> None:
    """The model call failed for good: a fault when the provider (or sabench) is to blame, a limit
    when the conversation outgrew the model's context, else the agent's own ``error``."""
    from sabench.faults import llm_fault_cause

    message = redact(f"{type(exc).__name__}: {exc}")[:500]
    if getattr(exc, "kind", None) == "context_window":
        out.status, out.limit = "limit", f"context window: {message}"
        return
    out.error = message
    out.fault = llm_fault_cause(exc)
    out.status = "fault" if out.fault else "error"


def llm_client(agent: dict[str, Any], seed: str) -> Any:
    """The agent's client: its model settings, and the run's seed when none is fixed."""
    from sabench.llm import LLMClient, LLMSettings

    settings = {k: v for k, v in agent.items() if k not in ("kind", "seeds", "time_limit_s")}
    settings.setdefault("seed", int(seed))
    settings.setdefault("max_tokens", 4096)
    return LLMClient(LLMSettings.from_dict(settings))


def paper_context(view: Path) -> dict[str, Any]:
    text = (view / "paper.md").read_text(encoding="utf-8") if (view / "paper.md").is_file() else ""
    title = next((ln.lstrip("# ").strip() for ln in text.splitlines() if ln.strip()), "")
    blacklist_file = view / "blacklist.txt"
    blacklist = (
        [ln.strip() for ln in blacklist_file.read_text().splitlines() if ln.strip()]
        if blacklist_file.is_file()
        else []
    )
    return {
        "title": title,
        "has_addendum": (view / "addendum.md").is_file(),
        "blacklist": blacklist,
    }


class Transcript:
    """Append-only JSONL of the conversation; every line passes through the client's redaction."""

    def __init__(self, path: Path, redact: Any) -> None:
        self.path = path
        self.redact = redact
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(path, "w", encoding="utf-8")  # noqa: SIM115 (closed in close())

    def write(self, **event: Any) -> None:
        event["t"] = round(time.time(), 3)
        self._fh.write(self.redact(json.dumps(event, default=str)) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()


def _assistant_message(content: str | None, calls: list[dict[str, Any]]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content or ""}
    if calls:
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"] or "{}"},
            }
            for c in calls
        ]
    return message


async def react_loop(
    client: Any,
    workspace: Workspace,
    messages: list[dict[str, Any]],
    transcript: Transcript,
    *,
    max_steps: int,
    time_limit_s: float,
    cost_limit_usd: float | None,
) -> AgentOutcome:
    out = AgentOutcome(model=client.settings.model)
    t0 = time.monotonic()
    while True:
        if out.steps >= max_steps:
            out.status, out.limit = "limit", f"step limit ({max_steps})"
            return out
        remaining = time_limit_s - (time.monotonic() - t0)
        if remaining <= 0:
            out.status, out.limit = "limit", f"time limit ({time_limit_s:.0f}s)"
            return out
        if cost_limit_usd is not None and out.cost_usd >= cost_limit_usd:
            out.status, out.limit = "limit", f"cost limit (${cost_limit_usd:g})"
            return out
        out.steps += 1
        try:
            reply = await asyncio.wait_for(client.chat(messages, tools=TOOL_SPECS), remaining)
        except TimeoutError:
            out.status, out.limit = "limit", f"time limit ({time_limit_s:.0f}s)"
            transcript.write(step=out.steps, event="limit", reason=out.limit)
            return out
        except Exception as exc:  # LLMError and anything the provider throws: a recorded status
            from sabench.llm.client import stop_for_budget  # an exception only: import late

            stop_for_budget(exc)
            end_with_llm_error(out, exc, client.redact)
            transcript.write(step=out.steps, event=out.status, error=out.error or out.limit)
            return out
        out.prompt_tokens += reply.prompt_tokens
        out.completion_tokens += reply.completion_tokens
        out.cost_usd += reply.cost_usd
        out.cached_calls += int(reply.cached)
        messages.append(_assistant_message(reply.content, reply.tool_calls))
        transcript.write(
            step=out.steps,
            role="assistant",
            content=reply.content,
            tool_calls=reply.tool_calls,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            cost_usd=reply.cost_usd,
            cached=reply.cached,
        )
        if not reply.tool_calls:
            messages.append({"role": "user", "content": NUDGE})
            continue
        for call in reply.tool_calls:
            if call["name"] == "submit":
                transcript.write(step=out.steps, event="submit")
                return out
            try:
                observation = await asyncio.to_thread(
                    call_tool, workspace, call["name"], parse_arguments(call["arguments"])
                )
            except ToolError as exc:
                observation = f"error: {exc}"
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": observation})
            transcript.write(step=out.steps, role="tool", name=call["name"], content=observation)


def run_basic(
    agent: dict[str, Any],
    paper: str,
    seed: str,
    view: Path,
    submission: Path,
    transcript_path: Path,
    runtime: dict[str, Any],
    gpu_ids: list[str] | None = None,
) -> AgentOutcome:
    """Run the loop into ``submission`` (written atomically: a killed agent leaves nothing half)."""
    from sabench.llm.templates import render

    client = llm_client(agent, seed)
    context = paper_context(view)
    messages = [
        {"role": "system", "content": render("agent_system.j2", **context)},
        {
            "role": "user",
            "content": render(
                "agent_task.j2",
                paper=paper,
                title=context["title"],
                max_steps=agent.get("max_steps", DEFAULT_MAX_STEPS),
            ),
        },
    ]
    with atomic_path(submission, directory=True) as tmp:
        workspace = Workspace(
            tmp, view, runtime, float(agent.get("command_timeout_s", 120)), gpu_ids or []
        )
        transcript = Transcript(transcript_path, client.redact)
        try:
            for message in messages:
                transcript.write(step=0, **message)
            outcome = client.run(
                react_loop(
                    client,
                    workspace,
                    messages,
                    transcript,
                    max_steps=int(agent.get("max_steps", DEFAULT_MAX_STEPS)),
                    time_limit_s=float(agent.get("time_limit_s", DEFAULT_TIME_LIMIT_S)),
                    cost_limit_usd=agent.get("cost_limit_usd"),
                )
            )
        finally:
            transcript.close()
    return outcome
