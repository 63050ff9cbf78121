"""A scripted OpenAI-compatible chat-completions server for tests: real HTTP on 127.0.0.1.

Clients (litellm, the openai SDK, curl) talk to it through ``api_base = server.url``. It answers
``POST /v1/chat/completions`` (and ``/chat/completions``) from a *script* and records every request,
so a test can assert what a client sent and how many requests it made (``server.count``).

Script: a list of rules, tried in order for each request. A rule is a dict

    {"match": "ridge-gd-D1-001",      # substring of the request's message texts; "re:<regex>" for a
                                      # regex; absent or None: every request
     "replies": [step, step, ...]}    # consumed one per matching request; the last one repeats

or a callable ``(request: dict) -> step | None`` (None: try the next rule). A request that no rule
answers gets a 400 error naming it. A reply step is a dict:

    {"content": "text"}                                   200, an assistant message
    {"json": {...}}                                       200, the content is json.dumps(value)
    {"tool_calls": [{"name": "bash", "arguments": {...}}]} 200, finish_reason "tool_calls"
    {"status": 429, "error": "slow down", "headers": {"Retry-After": "0"}}   an API error
    {"body": "{not json", "status": 200}                  a raw (e.g. malformed) response body
    {"delay": 2.5, ...}                                   sleep first (slow replies, timeouts)
    {"usage": {"prompt_tokens": 10, "completion_tokens": 5}}   default: word counts

Use it as a context manager (``with ScriptedServer(script) as server: ...``), through the
:func:`openai_server` fixture (register it with ``pytest_plugins = ["openai_server"]`` in a
conftest.py or a test module that does not import this module itself), with
:func:`scripted_server` in a fixture of your own, or standalone for manual checks::

    python tests/openai_server.py script.yaml     # prints the URL; Ctrl-C stops it
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Step = dict[str, Any]
Rule = dict[str, Any] | Callable[[dict[str, Any]], Step | None]


def request_text(request: dict[str, Any]) -> str:
    """All message texts of a chat request, joined (what ``match`` searches)."""
    parts: list[str] = []
    for message in request.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "\n".join(parts)


def _usage(request: dict[str, Any], content: str) -> dict[str, int]:
    prompt = len(request_text(request).split())
    completion = len(content.split())
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


class ScriptedServer:
    """An OpenAI-compatible HTTP server on 127.0.0.1 (a free port) that answers from a script."""

    def __init__(self, script: list[Rule] | None = None, *, model: str = "scripted") -> None:
        self.model = model
        self._lock = threading.Lock()
        self._rules: list[Rule] = []
        self._positions: dict[int, int] = {}
        #: every request received: {"path", "headers", "body" (parsed JSON or None), "time"}
        self.requests: list[dict[str, Any]] = []
        #: most chat requests being answered at the same time (a client's concurrency bound)
        self.max_in_flight = 0
        self._in_flight = 0
        self.set_script(script or [])
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- script ---------------------------------------------------------------------------
    def set_script(self, script: list[Rule]) -> None:
        """Replace the script (reply positions start over; recorded requests are kept)."""
        with self._lock:
            self._rules = list(script)
            self._positions = {}

    def reset(self) -> None:
        """Forget recorded requests (the script keeps its positions)."""
        with self._lock:
            self.requests.clear()
            self.max_in_flight = 0

    @property
    def count(self) -> int:
        """Chat-completion requests received so far."""
        with self._lock:
            return sum(1 for r in self.requests if r["path"].endswith("/chat/completions"))

    def bodies(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r["body"] for r in self.requests if isinstance(r["body"], dict)]

    def _next_step(self, request: dict[str, Any]) -> Step | None:
        text = request_text(request)
        with self._lock:
            rules = list(enumerate(self._rules))
        for i, rule in rules:
            if callable(rule):
                step = rule(request)
                if step is not None:
                    return step
                continue
            match = rule.get("match")
            if match is not None:
                if match.startswith("re:"):
                    if not re.search(match[3:], text):
                        continue
                elif match not in text:
                    continue
            replies = rule.get("replies") or [rule.get("reply", {"content": ""})]
            with self._lock:
                pos = self._positions.get(i, 0)
                self._positions[i] = pos + 1
            return replies[min(pos, len(replies) - 1)]
        return None

    # --- HTTP ------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """The ``api_base`` for clients: ``http://127.0.0.1:<port>/v1``."""
        if self._httpd is None:
            raise RuntimeError("server not started")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> ScriptedServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out at once, no 40 ms stalls

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _send(
                self, status: int, body: bytes, headers: dict[str, str] | None = None
            ) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, str(v))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    data = {"object": "list", "data": [{"id": server.model, "object": "model"}]}
                    self._send(200, json.dumps(data).encode())
                else:
                    self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                record = {
                    "path": self.path,
                    "headers": dict(self.headers.items()),
                    "body": body,
                    "time": time.time(),
                }
                with server._lock:
                    server.requests.append(record)
                    server._in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server._in_flight)
                try:
                    self._answer(body)
                finally:
                    with server._lock:
                        server._in_flight -= 1

            def _answer(self, body: Any) -> None:
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, b'{"error": {"message": "only chat completions"}}')
                    return
                if not isinstance(body, dict):
                    self._send(400, b'{"error": {"message": "request body is not JSON"}}')
                    return
                step = server._next_step(body)
                if step is None:
                    msg = f"no script rule answers: {request_text(body)[:200]!r}"
                    err = {"error": {"message": msg, "type": "invalid_request_error"}}
                    self._send(400, json.dumps(err).encode())
                    return
                status, payload, headers = server.render(step, body)
                if step.get("delay"):
                    time.sleep(float(step["delay"]))
                self._send(status, payload, headers)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- responses -------------------------------------------------------------------------
    def render(self, step: Step, request: dict[str, Any]) -> tuple[int, bytes, dict[str, str]]:
        """(status, body, headers) of one reply step."""
        headers = {str(k): str(v) for k, v in (step.get("headers") or {}).items()}
        if "body" in step:
            return int(step.get("status", 200)), str(step["body"]).encode(), headers
        status = int(step.get("status", 200))
        if status >= 400:
            err = {
                "error": {
                    "message": step.get("error", f"scripted error {status}"),
                    "type": "rate_limit_error" if status == 429 else "server_error",
                    "code": str(status),
                }
            }
            return status, json.dumps(err).encode(), headers
        message: dict[str, Any] = {"role": "assistant", "content": None}
        finish = "stop"
        if step.get("tool_calls"):
            calls = []
            for i, call in enumerate(step["tool_calls"]):
                args = call.get("arguments", {})
                calls.append(
                    {
                        "id": call.get("id", f"call_{i}"),
                        "type": "function",
                        "function": {
                            "name": call["name"],
                            "arguments": args if isinstance(args, str) else json.dumps(args),
                        },
                    }
                )
            message["tool_calls"] = calls
            message["content"] = step.get("content")
            finish = "tool_calls"
        elif "json" in step:
            message["content"] = json.dumps(step["json"])
        else:
            message["content"] = str(step.get("content", ""))
        usage = step.get("usage") or _usage(request, message["content"] or "")
        usage = {**usage, "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"]}
        data = {
            "id": f"chatcmpl-{self.count}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", self.model),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }
        return status, json.dumps(data).encode(), headers


def judge_settings(server: ScriptedServer, cache_root: Any, **extra: Any) -> dict[str, Any]:
    """An LLM judge's settings against ``server``: its cache under ``cache_root``, quick retries
    (none unless ``extra`` says), short timeouts and a price, so that costs can be estimated."""
    return {
        "api_base": server.url,
        "cache_dir": str(cache_root / "cache"),
        "backoff_s": 0.01,
        "max_retries": 0,
        "timeout_s": 5,
        "prices": {"input_per_mtok": 1.0, "output_per_mtok": 4.0},
        **extra,
    }


def scripted_server(script: list[Rule] | None = None) -> Iterator[ScriptedServer]:
    """Generator behind the fixture: a started server, stopped afterwards."""
    with ScriptedServer(script) as server:
        yield server


try:
    import pytest

    @pytest.fixture
    def openai_server() -> Iterator[ScriptedServer]:
        """A started :class:`ScriptedServer` with an empty script (``set_script`` to fill it)."""
        yield from scripted_server()

except ImportError:  # standalone use without pytest
    pass


def main(argv: list[str] | None = None) -> int:
    import yaml

    args = sys.argv[1:] if argv is None else argv
    script = []
    if args:
        with open(args[0], encoding="utf-8") as fh:
            script = yaml.safe_load(fh)
    with ScriptedServer(script) as server:
        print(server.url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
