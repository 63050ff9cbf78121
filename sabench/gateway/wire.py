"""What the gateway's clients send and get: OpenAI chat completions (whole or as server-sent events)
and Anthropic messages, each turned into a chat completion request and back."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

#: Request keys that are the gateway's own business, never passed upstream.
NOT_FORWARDED = ("model", "messages", "stream", "stream_options", "user")
#: OpenAI's finish reasons as Anthropic's stop reasons.
STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}


def dumps(data: Any) -> bytes:
    return json.dumps(data, default=str, separators=(",", ":")).encode()


def error_body(message: str, kind: str, anthropic: bool = False) -> bytes:
    """An error as the client's API says it (OpenAI's ``error`` object, or Anthropic's)."""
    if anthropic:
        return dumps({"type": "error", "error": {"type": kind, "message": message}})
    return dumps({"error": {"message": message, "type": kind, "code": kind}})


def completion_dict(response: Any, model: str) -> dict[str, Any]:
    """litellm's response as the JSON OpenAI's API answers, under the model name the agent asked."""
    data = response.model_dump() if hasattr(response, "model_dump") else dict(response)
    data["model"] = model
    data.setdefault("object", "chat.completion")
    return data


def completion_events(data: dict[str, Any]) -> Iterator[bytes]:
    """A whole completion as the server-sent events of a streamed one: one chunk with the message,
    one with the finish reason and the usage, then ``[DONE]``."""
    choice = (data.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
    calls = message.get("tool_calls") or []
    if calls:
        delta["tool_calls"] = [
            {
                "index": i,
                "id": call.get("id"),
                "type": "function",
                "function": {
                    "name": (call.get("function") or {}).get("name"),
                    "arguments": (call.get("function") or {}).get("arguments") or "",
                },
            }
            for i, call in enumerate(calls)
        ]
    head = {
        "id": data.get("id"),
        "object": "chat.completion.chunk",
        "created": data.get("created") or int(time.time()),
        "model": data.get("model"),
    }
    first = {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    finish = choice.get("finish_reason") or "stop"
    last = {
        **head,
        "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
        "usage": data.get("usage"),
    }
    yield b"data: " + dumps(first) + b"\n\n"
    yield b"data: " + dumps(last) + b"\n\n"
    yield b"data: [DONE]\n\n"


# --------------------------------------------------------------------------- Anthropic messages


def text_of(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of content blocks (Anthropic's
    ``text``, the Responses API's ``input_text`` and ``output_text``)."""
    if isinstance(content, str):
        return content
    return "".join(
        str(b.get("text", ""))
        for b in content or []
        if isinstance(b, dict) and b.get("type") in ("text", "input_text", "output_text")
    )


def anthropic_request(body: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """An Anthropic messages request as chat messages and chat parameters."""
    messages: list[dict[str, Any]] = []
    if body.get("system"):
        messages.append({"role": "system", "content": text_of(body["system"])})
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            messages.append({"role": message.get("role"), "content": content})
            continue
        blocks = [b for b in content or [] if isinstance(b, dict)]
        for block in blocks:
            if block.get("type") == "tool_result":
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": block.get("tool_use_id"),
                        "content": text_of(block.get("content")),
                    }
                )
        calls = [
            {
                "id": b.get("id"),
                "type": "function",
                "function": {"name": b.get("name"), "arguments": json.dumps(b.get("input", {}))},
            }
            for b in blocks
            if b.get("type") == "tool_use"
        ]
        text = text_of(blocks)
        if text or calls:
            entry: dict[str, Any] = {"role": message.get("role"), "content": text or None}
            if calls:
                entry["tool_calls"] = calls
            messages.append(entry)
    params: dict[str, Any] = {}
    for key in ("max_tokens", "temperature", "top_p"):
        if body.get(key) is not None:
            params[key] = body[key]
    if body.get("stop_sequences"):
        params["stop"] = body["stop_sequences"]
    if body.get("tools"):
        params["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.get("name"),
                    "description": t.get("description", ""),
                    "parameters": t.get("input_schema") or {"type": "object"},
                },
            }
            for t in body["tools"]
        ]
    return messages, params


def anthropic_message(data: dict[str, Any]) -> dict[str, Any]:
    """A chat completion as an Anthropic message."""
    choice = (data.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    content: list[dict[str, Any]] = []
    if message.get("content"):
        content.append({"type": "text", "text": message["content"]})
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except ValueError:
            arguments = {}
        content.append(
            {
                "type": "tool_use",
                "id": call.get("id"),
                "name": function.get("name"),
                "input": arguments,
            }
        )
    usage = data.get("usage") or {}
    return {
        "id": data.get("id"),
        "type": "message",
        "role": "assistant",
        "model": data.get("model"),
        "content": content,
        "stop_reason": STOP_REASONS.get(choice.get("finish_reason") or "stop", "end_turn"),
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage.get("prompt_tokens") or 0,
            "output_tokens": usage.get("completion_tokens") or 0,
        },
    }


def anthropic_events(message: dict[str, Any]) -> Iterator[bytes]:
    """A whole Anthropic message as the events of a streamed one."""

    def event(name: str, data: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: ".encode() + dumps({"type": name, **data}) + b"\n\n"

    head = {**message, "content": [], "stop_reason": None}
    head["usage"] = {"input_tokens": message["usage"]["input_tokens"], "output_tokens": 0}
    yield event("message_start", {"message": head})
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            start, delta = (
                {"type": "text", "text": ""},
                {"type": "text_delta", "text": block["text"]},
            )
        else:
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield event("content_block_start", {"index": i, "content_block": start})
        yield event("content_block_delta", {"index": i, "delta": delta})
        yield event("content_block_stop", {"index": i})
    yield event(
        "message_delta",
        {
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": message["usage"]["output_tokens"]},
        },
    )
    yield event("message_stop", {})
