"""OpenAI's Responses API (``POST /v1/responses``, what Codex CLI speaks) over chat completions: a
request's ``instructions`` and ``input`` items as chat messages, and the completion as a response
object or as the events of a streamed one. Stateless: a request that names a
``previous_response_id`` must carry its whole conversation in ``input`` (``store`` is not kept)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from sabench.gateway.wire import dumps, text_of

#: Responses parameters with a chat completions counterpart (the others are dropped).
PARAMS = {
    "max_output_tokens": "max_tokens",
    "temperature": "temperature",
    "top_p": "top_p",
    "tool_choice": "tool_choice",
    "parallel_tool_calls": "parallel_tool_calls",
}


def _messages(items: Any) -> list[dict[str, Any]]:
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    messages: list[dict[str, Any]] = []
    for item in items or []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message":
            role = "system" if item.get("role") == "developer" else item.get("role", "user")
            messages.append({"role": role, "content": text_of(item.get("content"))})
        elif kind == "function_call":
            call = {
                "id": item.get("call_id"),
                "type": "function",
                "function": {"name": item.get("name"), "arguments": item.get("arguments") or ""},
            }
            last = messages[-1] if messages else None
            if last and last["role"] == "assistant" and "tool_calls" in last:
                last["tool_calls"].append(call)  # parallel calls: one assistant message
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            text = output if isinstance(output, str) else json.dumps(output)
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": text})
    return messages


def responses_request(body: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A Responses request as chat messages and chat parameters."""
    messages = _messages(body.get("input"))
    if body.get("instructions"):
        messages.insert(0, {"role": "system", "content": str(body["instructions"])})
    params = {PARAMS[k]: v for k, v in body.items() if k in PARAMS and v is not None}
    tools = [
        {
            "type": "function",
            "function": {
                "name": t.get("name"),
                "description": t.get("description", ""),
                "parameters": t.get("parameters") or {"type": "object", "properties": {}},
            },
        }
        for t in body.get("tools") or []
        if isinstance(t, dict) and t.get("type") == "function"
    ]
    if tools:
        params["tools"] = tools
    else:
        params.pop("tool_choice", None)
        params.pop("parallel_tool_calls", None)
    return messages, params


def response_object(data: dict[str, Any]) -> dict[str, Any]:
    """A chat completion as a Responses API response."""
    choice = (data.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    base = str(data.get("id") or f"{time.time_ns()}")
    output: list[dict[str, Any]] = []
    if message.get("content"):
        output.append(
            {
                "type": "message",
                "id": f"msg_{base}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": message["content"], "annotations": []}],
            }
        )
    for i, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{base}_{i}",
                "call_id": call.get("id"),
                "name": function.get("name"),
                "arguments": function.get("arguments") or "",
                "status": "completed",
            }
        )
    usage = data.get("usage") or {}
    p_tok, c_tok = usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0
    return {
        "id": f"resp_{base}",
        "object": "response",
        "created_at": data.get("created") or int(time.time()),
        "status": "completed" if choice.get("finish_reason") != "length" else "incomplete",
        "model": data.get("model"),
        "output": output,
        "usage": {
            "input_tokens": p_tok,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": c_tok,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": p_tok + c_tok,
        },
    }


def response_events(response: dict[str, Any]) -> Iterator[bytes]:
    """A whole response as the events of a streamed one (each item added, its text or arguments
    in one delta, done; then ``response.completed``)."""
    number = iter(range(1 << 30))

    def event(name: str, **data: Any) -> bytes:
        payload = {"type": name, "sequence_number": next(number), **data}
        return f"event: {name}\ndata: ".encode() + dumps(payload) + b"\n\n"

    yield event("response.created", response={**response, "status": "in_progress", "output": []})
    yield event(
        "response.in_progress", response={**response, "status": "in_progress", "output": []}
    )
    for index, item in enumerate(response["output"]):
        where = {"item_id": item["id"], "output_index": index}
        if item["type"] == "message":
            text = item["content"][0]["text"]
            part = {"type": "output_text", "text": "", "annotations": []}
            yield event(
                "response.output_item.added", output_index=index, item={**item, "content": []}
            )
            yield event("response.content_part.added", **where, content_index=0, part=part)
            yield event("response.output_text.delta", **where, content_index=0, delta=text)
            yield event("response.output_text.done", **where, content_index=0, text=text)
            yield event(
                "response.content_part.done", **where, content_index=0, part={**part, "text": text}
            )
        else:
            yield event(
                "response.output_item.added", output_index=index, item={**item, "arguments": ""}
            )
            yield event("response.function_call_arguments.delta", **where, delta=item["arguments"])
            yield event(
                "response.function_call_arguments.done", **where, arguments=item["arguments"]
            )
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=response)
