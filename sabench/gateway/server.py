"""The model gateway, host side: one per agent run, served on a unix socket while the run lasts.

Why not litellm's own proxy: it needs the ``litellm[proxy]`` extras (FastAPI, uvicorn and more,
not in the project's pinned environment), a config file and a process of its own per run, and
keys and budgets live in its database; the gateway needs one endpoint, one token and one budget
per run, and a record in the run's folder. So it is a small threaded HTTP server that forwards
through :class:`sabench.llm.LLMClient` (litellm underneath: any provider, the key, retries, the
grid's ``llm_budget_usd``).

The agent sees the socket through a read-only folder mounted into its sandbox and a loopback port
in front of it (``forward.py``); it holds a per-run token, never the key. Each request is checked
against the token (401 otherwise), then against the run's budget (429 once spent), routed
(:meth:`GatewaySettings.routed`), sent, and recorded: one row per request in
``gateway_calls.parquet`` beside ``agent.json``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import secrets
import shutil
import socketserver
import tempfile
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from sabench.gateway import responses, wire
from sabench.gateway.settings import CONFIG_PARAMS, GatewaySettings, Route

log = logging.getLogger("sabench.gateway")

#: Where the gateway's folder (its socket and forward.py) appears inside a sandbox.
GATEWAY_TARGET = "/opt/sabench-gateway"
SOCKET_NAME = "gateway.sock"
FORWARDER = Path(__file__).with_name("forward.py")
#: The run's record of every request, beside agent.json.
CALLS_FILE = "gateway_calls.parquet"
CALL_COLUMNS = (
    "call",
    "time",
    "api",
    "requested_model",
    "model",
    "stream",
    "status",
    "outcome",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "cost_known",
    "latency_s",
    "attempts",
    "error",
)
#: The APIs answered, by the end of their path (``/v1`` before it, or nothing).
APIS = {
    "/chat/completions": "chat.completions",
    "/responses": "responses",
    "/messages": "anthropic.messages",
}
#: Largest request body read (a long conversation with files in it stays well under).
MAX_BODY_BYTES = 32 << 20


class GatewayError(Exception):
    """The gateway could not start (its socket, its thread)."""


async def _cancel_tasks() -> None:
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


class _UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    gateway: Gateway


class Gateway:
    """One run's gateway. Use as a context manager; :meth:`write_record` keeps the calls."""

    def __init__(self, settings: GatewaySettings) -> None:
        self.settings = settings
        self.token = "sabench-" + secrets.token_urlsafe(24)
        self.rows: list[dict[str, Any]] = []
        self.limit: str | None = None  # why a request was refused for the budget, once one was
        self.calls = self.prompt_tokens = self.completion_tokens = 0
        self.cost_usd = 0.0
        self._lock = threading.Condition()
        self._closing = False
        self._clients: dict[str, Any] = {}
        self.folder = Path()
        try:
            self.folder = Path(tempfile.mkdtemp(prefix="sabench-gateway-"))
            self.folder.chmod(0o755)
            shutil.copy(FORWARDER, self.folder / FORWARDER.name)
            (self.folder / FORWARDER.name).chmod(0o644)
            self.socket_path = self.folder / SOCKET_NAME
            self._server = _UnixServer(str(self.socket_path), _Handler)
            self.socket_path.chmod(0o777)  # the sandbox's user is not ours
        except OSError as exc:
            if self.folder.name:
                shutil.rmtree(self.folder, ignore_errors=True)
            raise GatewayError(f"the model gateway could not start: {exc}") from None
        self._server.gateway = self
        self._loop = asyncio.new_event_loop()
        self._threads = [
            threading.Thread(
                target=self._loop.run_forever, name="sabench-gateway-loop", daemon=True
            ),
            threading.Thread(
                target=self._server.serve_forever, name="sabench-gateway", daemon=True
            ),
        ]

    def __enter__(self) -> Gateway:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving (a request held open for the budget gets a 204); once."""
        with self._lock:
            if self._closing:
                return
            self._closing = True
            self._lock.notify_all()
        if self._threads[1].is_alive():
            self._server.shutdown()
        self._server.server_close()
        if self._threads[0].is_alive():  # litellm's own tasks end with the loop, not after it
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(_cancel_tasks(), self._loop).result(5)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._threads[0].join(10)
        if not self._loop.is_running():
            self._loop.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    # --- the budget ----------------------------------------------------------------------------
    def _spent(self) -> str | None:
        """Which measure of the budget is used up (a line), or None."""
        s = self.settings
        if s.calls is not None and self.calls >= s.calls:
            return f"{self.calls} of {s.calls} calls"
        tokens = self.prompt_tokens + self.completion_tokens
        if s.tokens is not None and tokens >= s.tokens:
            return f"{tokens} of {s.tokens} tokens"
        if s.cost_usd is not None and self.cost_usd >= s.cost_usd:
            return f"${self.cost_usd:.4f} of ${s.cost_usd:g}"
        return None

    def reserve(self) -> str | None:
        """Take a call of the budget; the line that says why not when it is spent."""
        with self._lock:
            spent = self._spent()
            if spent:
                self.limit = f"gateway budget spent ({spent})"
                self._lock.notify_all()
                return spent
            self.calls += 1
            return None

    def add(self, prompt_tokens: int, completion_tokens: int, cost_usd: float) -> None:
        with self._lock:
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens
            self.cost_usd += cost_usd

    def wait_spent(self) -> bool:
        """Block until a request was refused for the budget (True) or the gateway closes."""
        with self._lock:
            while self.limit is None and not self._closing:
                self._lock.wait()
            return self.limit is not None

    # --- forwarding ----------------------------------------------------------------------------
    def client(self, route: Route) -> Any:
        from sabench.llm import LLMClient, LLMSettings

        if route.model not in self._clients:
            settings = LLMSettings.from_dict(
                {**route.settings, "temperature": None, "max_tokens": None, "cache": False},
                model=route.model,
            )
            self._clients[route.model] = LLMClient(settings)
        return self._clients[route.model]

    def params(self, route: Route, asked: dict[str, Any]) -> dict[str, Any]:
        """The agent's parameters, with those its config fixes (a ``max_tokens`` is a cap)."""
        params = dict(asked)
        for key in CONFIG_PARAMS:
            value = route.settings.get(key)
            if value is None:
                continue
            if key == "max_tokens" and params.get(key):
                params[key] = min(int(params[key]), int(value))
            else:
                params[key] = value
        return params

    def complete(
        self, route: Route, messages: list[dict[str, Any]], params: dict[str, Any]
    ) -> tuple[Any, Any]:
        """Send one chat completion through the route's client (in the gateway's event loop)."""
        client = self.client(route)
        future = asyncio.run_coroutine_threadsafe(
            client.forward(messages, self.params(route, params)), self._loop
        )
        return future.result()

    def redact(self, text: str) -> str:
        for client in self._clients.values():  # each knows its key
            text = client.redact(text)
        return text.replace(self.token, "***")

    def record(self, **row: Any) -> None:
        with self._lock:
            row.setdefault("call", len(self.rows) + 1)
            row.setdefault("time", datetime.now(UTC).isoformat(timespec="milliseconds"))
            self.rows.append({c: row.get(c) for c in CALL_COLUMNS})

    # --- the record ----------------------------------------------------------------------------
    def write_record(self, run_dir: Path) -> Path:
        """The calls as ``gateway_calls.parquet`` in ``run_dir`` (atomically)."""
        import pyarrow as pa

        from sabench.io import write_table

        types = {
            "call": pa.int64(),
            "time": pa.string(),
            "api": pa.string(),
            "requested_model": pa.string(),
            "model": pa.string(),
            "stream": pa.bool_(),
            "status": pa.int64(),
            "outcome": pa.string(),
            "prompt_tokens": pa.int64(),
            "completion_tokens": pa.int64(),
            "cost_usd": pa.float64(),
            "cost_known": pa.bool_(),
            "latency_s": pa.float64(),
            "attempts": pa.int64(),
            "error": pa.string(),
        }
        schema = pa.schema([(c, types[c]) for c in CALL_COLUMNS])
        with self._lock:
            table = pa.Table.from_pylist(self.rows, schema=schema)
        path = Path(run_dir) / CALLS_FILE
        write_table(path, table)
        return path

    def summary(self) -> dict[str, Any]:
        """The run's totals for agent.json."""
        with self._lock:
            outcomes = [r["outcome"] for r in self.rows]
            return {
                "calls": self.calls,
                "requests": len(self.rows),
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "cost_usd": round(self.cost_usd, 6),
                "refused_budget": outcomes.count("budget"),
                "unauthorized": outcomes.count("unauthorized"),
                "upstream_errors": outcomes.count("upstream_error"),
                "limit": self.limit,
                "budget": self.settings.budget(),
                "model": self.settings.route.model,
            }

    def budget_message(self) -> str:
        """What the grid's spent budget (``llm_budget_usd``) said, first time it refused."""
        with self._lock:
            errors = [r["error"] for r in self.rows if (r["error"] or "").startswith("budget:")]
        return errors[0].split(":", 1)[1].strip() if errors else "the grid's LLM budget is spent"

    def upstream_failures(self) -> list[str]:
        """The kinds of the upstream failures recorded (an LLMError's kind each)."""
        with self._lock:
            return [
                r["error"].split(":", 1)[0] for r in self.rows if r["outcome"] == "upstream_error"
            ]


def count_tokens(body: dict[str, Any]) -> int:
    """An Anthropic request's input tokens, as litellm's tokenizer counts them (offline)."""
    from sabench.llm.litellm_setup import get_litellm

    messages, params = wire.anthropic_request(body)
    try:
        return int(get_litellm().token_counter(messages=messages, tools=params.get("tools")))
    except Exception:  # a shape the counter does not know: about four characters a token
        return len(wire.dumps(messages)) // 4


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _UnixServer

    def log_message(self, format: str, *args: Any) -> None:  # the record is the calls table
        pass

    def address_string(self) -> str:
        return "sandbox"

    @property
    def gateway(self) -> Gateway:
        return self.server.gateway

    # --- plumbing ----------------------------------------------------------------------------
    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass  # the agent hung up

    def _stream(self, events: Any) -> None:
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for event in events:
                self.wfile.write(event)
            self.wfile.flush()
        except OSError:
            pass
        self.close_connection = True

    def _authorized(self) -> bool:
        given = self.headers.get("x-api-key") or ""
        bearer = self.headers.get("Authorization") or ""
        if bearer.lower().startswith("bearer "):
            given = bearer[7:].strip()
        return hmac.compare_digest(given.encode(), self.gateway.token.encode())

    def _body(self) -> dict[str, Any] | None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            return None
        try:
            body = json.loads(self.rfile.read(length) or b"null")
        except ValueError:
            return None
        return body if isinstance(body, dict) else None

    # --- routes ------------------------------------------------------------------------------
    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if not self._authorized():
            self._send(401, wire.error_body("sabench gateway: wrong token", "authentication_error"))
            return
        if path == "/sabench/budget":  # the in-sandbox forwarder waits here
            spent = self.gateway.wait_spent()
            self._send(200 if spent else 204, b"spent" if spent else b"", "text/plain")
        elif path.endswith("/models"):
            names = [self.gateway.settings.route.model, *self.gateway.settings.models]
            data = [{"id": n, "object": "model", "owned_by": "sabench"} for n in names if n != "*"]
            self._send(200, wire.dumps({"object": "list", "data": data}))
        else:
            self._send(404, wire.error_body(f"sabench gateway: no GET {path}", "not_found"))

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        api = next((name for suffix, name in APIS.items() if path.endswith(suffix)), None)
        anthropic = api == "anthropic.messages"
        gateway = self.gateway
        body = self._body()
        asked = str((body or {}).get("model") or "")
        stream = bool((body or {}).get("stream"))
        row = {"api": api or path, "requested_model": asked, "stream": stream}
        if not self._authorized():
            message = "sabench gateway: wrong token (use the run's token, SABENCH_GATEWAY_TOKEN)"
            gateway.record(**row, status=401, outcome="unauthorized", error="wrong token")
            self._send(401, wire.error_body(message, "authentication_error", anthropic))
            return
        if path.endswith("/messages/count_tokens") and body is not None:
            # Claude Code asks before it sends: counted here, no call upstream, no budget
            self._send(200, wire.dumps({"input_tokens": count_tokens(body)}))
            return
        if api is None:
            gateway.record(**row, status=404, outcome="unsupported")
            message = f"sabench gateway: no POST {path}; it answers {', '.join(APIS)} under /v1"
            self._send(404, wire.error_body(message, "not_found"))
            return
        field = "input" if api == "responses" else "messages"
        given = (body or {}).get(field)
        if not (isinstance(given, list) or (field == "input" and isinstance(given, str))):
            gateway.record(**row, status=400, outcome="bad_request", error=f"no {field}")
            message = f"sabench gateway: the body must be JSON with {field}"
            self._send(400, wire.error_body(message, "invalid_request_error", anthropic))
            return
        route = gateway.settings.routed(asked)
        row["model"] = route.model
        spent = gateway.reserve()
        if spent:
            gateway.record(**row, status=429, outcome="budget", error=f"budget spent: {spent}")
            message = (
                f"sabench gateway: this run's budget is spent ({spent}); no further model calls "
                "are answered: write out what you have and stop"
            )
            self._send(429, wire.error_body(message, "budget_exceeded", anthropic))
            return
        if anthropic:
            messages, params = wire.anthropic_request(body)
        elif api == "responses":
            messages, params = responses.responses_request(body)
        else:
            messages = body["messages"]
            params = {k: v for k, v in body.items() if k not in wire.NOT_FORWARDED}
        self._forward(route, messages, params, row, asked or route.model)

    def _forward(
        self,
        route: Route,
        messages: list[dict[str, Any]],
        params: dict[str, Any],
        row: dict[str, Any],
        shown_model: str,
    ) -> None:
        from sabench.llm.client import LLMError

        gateway = self.gateway
        anthropic = row["api"] == "anthropic.messages"
        t0 = time.monotonic()
        try:
            response, done = gateway.complete(route, messages, params)
        except LLMError as exc:
            status = {"bad_request": 400, "context_window": 400, "rate_limit": 429}.get(
                exc.kind, 502
            )
            error = gateway.redact(f"{exc.kind}: {exc.message}")[:500]
            gateway.record(
                **row,
                status=status,
                outcome="upstream_error",
                latency_s=round(time.monotonic() - t0, 3),
                attempts=exc.attempts,
                error=error,
            )
            self._send(status, wire.error_body(f"sabench gateway: {error}", exc.kind, anthropic))
            return
        except Exception as exc:  # a reply litellm could not parse, a bug: the agent sees a 502
            error = gateway.redact(f"other: {type(exc).__name__}: {exc}")[:500]
            gateway.record(**row, status=502, outcome="upstream_error", error=error)
            self._send(502, wire.error_body(f"sabench gateway: {error}", "other", anthropic))
            return
        gateway.add(done.prompt_tokens, done.completion_tokens, done.cost_usd)
        gateway.record(
            **row,
            status=200,
            outcome="ok",
            prompt_tokens=done.prompt_tokens,
            completion_tokens=done.completion_tokens,
            cost_usd=round(done.cost_usd, 8),
            cost_known=done.cost_known,
            latency_s=round(done.latency_s, 3),
            attempts=done.attempts,
        )
        data = wire.completion_dict(response, shown_model)
        if row["api"] == "responses":
            answer = responses.response_object(data)
            if row["stream"]:
                self._stream(responses.response_events(answer))
            else:
                self._send(200, wire.dumps(answer))
        elif anthropic:
            message = wire.anthropic_message(data)
            if row["stream"]:
                self._stream(wire.anthropic_events(message))
            else:
                self._send(200, wire.dumps(message))
        elif row["stream"]:
            self._stream(wire.completion_events(data))
        else:
            self._send(200, wire.dumps(data))
