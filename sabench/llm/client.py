"""One client over litellm: any provider by model string, retries with backoff, bounded concurrency,
tokens and dollars per call, the on-disk cache, and structured output with one repair attempt.

litellm is imported on first use only (:func:`sabench.llm.litellm_setup.get_litellm`), so nothing
at Snakefile parse time pays for it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import re
import time
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from sabench.errors import UserError
from sabench.llm.budget import BudgetSpent, SpendLedger
from sabench.llm.cache import LLMCache, cache_key
from sabench.llm.endpoint import shown_base
from sabench.llm.litellm_setup import get_litellm
from sabench.llm.pricing import call_cost
from sabench.llm.settings import LLMSettings
from sabench.llm.structured import parse_reply, response_format
from sabench.llm.templates import render

log = logging.getLogger("sabench.llm")
T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")

#: Placeholder key for local OpenAI-compatible servers that need none (the SDK insists on one).
NO_KEY = "sk-no-key-required"
_SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.I)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` without any secret: the given ones and every *KEY*/*TOKEN*/*SECRET* variable's value."""
    values = [s for s in secrets if s and len(s) >= 6]
    values += [v for k, v in os.environ.items() if _SECRET_ENV.search(k) and v and len(v) >= 6]
    for value in sorted(set(values), key=len, reverse=True):
        text = text.replace(value, "***")
    return re.sub(r"\b(sk-[A-Za-z0-9_\-]{6})[A-Za-z0-9_\-]{6,}", r"\1***", text)


class LLMError(Exception):
    """A call that failed for good. ``kind``: rate_limit, server, timeout, connection, auth,
    bad_request, context_window (the conversation outgrew the model), config, budget (the grid's
    spending cap, :mod:`sabench.llm.budget`) or other; :mod:`sabench.faults` says which are faults.
    ``fatal`` errors (auth, config, budget) end the job: every other call would fail the same way."""

    def __init__(self, kind: str, message: str, attempts: int = 1) -> None:
        self.kind = kind
        self.attempts = attempts
        self.message = message
        super().__init__(f"{kind} after {attempts} attempt(s): {message}")

    @property
    def fatal(self) -> bool:
        return self.kind in ("auth", "config", "budget")


def stop_for_budget(exc: BaseException) -> None:
    """Re-raise the grid's spent budget as a job-ending error: a run cut short by it must not be
    recorded as finished, so that a rerun with a higher cap continues it (from the cache)."""
    if isinstance(exc, LLMError) and exc.kind == "budget":
        raise UserError(None, "llm_budget_usd", exc.message) from None


@dataclass
class Completion:
    """One chat completion (from the API or the cache)."""

    content: str | None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True
    cached: bool = False
    latency_s: float = 0.0
    attempts: int = 0
    key: str = ""


@dataclass
class Structured:
    """A validated reply (``value``) or why there is none (``error``), with every call it took."""

    value: BaseModel | None
    error: str | None
    calls: list[Completion]

    @property
    def repaired(self) -> bool:
        return len(self.calls) > 1

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for c in self.calls)

    @property
    def completion_tokens(self) -> int:
        return sum(c.completion_tokens for c in self.calls)

    @property
    def cost_usd(self) -> float:
        return sum(c.cost_usd for c in self.calls)

    @property
    def cached(self) -> bool:
        return bool(self.calls) and all(c.cached for c in self.calls)

    @property
    def latency_s(self) -> float:
        return sum(c.latency_s for c in self.calls)


@dataclass
class Usage:
    """What a client did: requests sent, cache hits, failures, tokens and dollars (API calls only)."""

    requests: int = 0
    calls: int = 0
    cache_hits: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    unpriced: int = 0

    def line(self) -> str:
        return (
            f"{self.calls} calls ({self.cache_hits} cached, {self.requests} requests, "
            f"{self.failures} failed), {self.prompt_tokens}+{self.completion_tokens} tokens, "
            f"${self.cost_usd:.4f}" + (f" ({self.unpriced} unpriced)" if self.unpriced else "")
        )


_SEMAPHORES: dict[tuple[int, str], asyncio.Semaphore] = {}


def _semaphore(model: str, limit: int) -> asyncio.Semaphore:
    """One bound per model and event loop: every client of a model in a job shares it."""
    key = (id(asyncio.get_running_loop()), model)
    sem = _SEMAPHORES.get(key)
    if sem is None:
        sem = _SEMAPHORES[key] = asyncio.Semaphore(max(1, int(limit)))
    return sem


def _classify(exc: BaseException) -> tuple[str, bool, float | None]:
    """(kind, retry?, server's Retry-After in seconds) of a litellm/openai exception."""
    litellm = get_litellm()
    retry_after = None
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is not None:
        try:
            value = headers.get("retry-after")
            retry_after = float(value) if value is not None else None
        except (TypeError, ValueError):
            retry_after = None
    if isinstance(exc, litellm.RateLimitError):
        return "rate_limit", True, retry_after
    if isinstance(exc, litellm.ContextWindowExceededError):
        return "context_window", False, None
    if isinstance(exc, litellm.Timeout | asyncio.TimeoutError):
        return "timeout", True, None
    if isinstance(exc, litellm.AuthenticationError | litellm.PermissionDeniedError):
        return "auth", False, None
    # litellm wraps the openai SDK's refused connection as an InternalServerError
    if isinstance(exc, litellm.APIConnectionError) or "Connection error" in str(exc):
        return "connection", True, None
    if isinstance(
        exc,
        litellm.InternalServerError | litellm.ServiceUnavailableError | litellm.BadGatewayError,
    ):
        return "server", True, retry_after
    if isinstance(exc, litellm.APIConnectionError):
        return "connection", True, None
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and status >= 500:
        return "server", True, retry_after
    if isinstance(status, int) and status == 429:
        return "rate_limit", True, retry_after
    if isinstance(exc, litellm.BadRequestError | litellm.NotFoundError) or status in (400, 404):
        return "bad_request", False, None
    return "other", False, None


class LLMClient:
    """Chat completions for one model. Use the coroutines inside one event loop (see :meth:`run`)."""

    def __init__(self, settings: LLMSettings, cache: LLMCache | None = None) -> None:
        self.settings = settings
        self.cache = cache if cache is not None else LLMCache(settings.cache_path)
        self.usage = Usage()
        try:
            self.ledger = SpendLedger.from_env()
        except BudgetSpent as exc:
            raise LLMError("config", str(exc)) from None
        self._api_key: str | None = None
        self._secrets: list[str] = []

    # --- plumbing ----------------------------------------------------------------------------
    def _key(self) -> str | None:
        s = self.settings
        if self._api_key is None:
            if s.api_key_env:
                value = os.environ.get(s.api_key_env)
                if not value:
                    raise LLMError(
                        "config", f"environment variable {s.api_key_env} (api_key_env) is not set"
                    )
                self._api_key = value
                self._secrets.append(value)
            elif s.api_base:
                self._api_key = NO_KEY
            else:  # the provider's own variable (OPENAI_API_KEY): litellm names it
                from sabench.llm.keys import missing_key

                line = missing_key(s.model, {}, f"model {s.model}", "api_key_env")
                if line:
                    raise LLMError("config", line)
        return self._api_key

    def redact(self, text: str) -> str:
        return redact(text, self._secrets)

    def _check_budget(self, attempt: int) -> None:
        if self.ledger is None:
            return
        try:
            self.ledger.check()
        except BudgetSpent as exc:
            raise LLMError("budget", str(exc), attempts=attempt - 1) from None

    def payload(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        fmt: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """What the cache key covers: model, messages, parameters, tools and output schema."""
        params = self.settings.request_params()
        if tools:
            params["tools"] = tools
        return {
            "model": self.settings.model,
            "messages": messages,
            "params": params,
            "schema": fmt,
        }

    async def _request(self, payload: dict[str, Any]) -> tuple[Any, int, float]:
        """Send with retries; (response, attempts, latency of the successful attempt)."""
        litellm = get_litellm()
        s = self.settings
        kwargs: dict[str, Any] = {
            "model": s.model,
            "messages": payload["messages"],
            "timeout": s.timeout_s,
            "max_retries": 0,  # retries are ours (the SDK's own would hide requests)
            "num_retries": 0,
            **payload["params"],
        }
        if payload["schema"] is not None:
            kwargs["response_format"] = payload["schema"]
        if s.api_base:
            kwargs["api_base"] = s.api_base
        key = self._key()
        if key is not None:
            kwargs["api_key"] = key
        sem = _semaphore(s.model, s.concurrency)
        attempts = 0
        while True:
            attempts += 1
            try:
                async with sem:
                    # checked when the request is sent, not when it is queued: only the requests
                    # in flight (at most `concurrency`) can pass the grid's cap
                    self._check_budget(attempts)
                    self.usage.requests += 1
                    t0 = time.monotonic()
                    response = await asyncio.wait_for(
                        litellm.acompletion(**kwargs), timeout=s.timeout_s + 5
                    )
                    return response, attempts, time.monotonic() - t0
            except LLMError:
                raise
            except Exception as exc:
                kind, retry, retry_after = _classify(exc)
                message = self.redact(f"{type(exc).__name__}: {exc}".splitlines()[0])[:300]
                if not retry or attempts > s.max_retries:
                    if s.api_base and kind in ("connection", "timeout"):
                        message += f" (api_base {shown_base(s.api_base)})"
                    raise LLMError(kind, message, attempts) from None
                delay = min(s.backoff_max_s, s.backoff_s * 2 ** (attempts - 1))
                delay *= 0.5 + random.random() / 2  # jitter: concurrent callers spread out
                if retry_after is not None:
                    delay = min(s.backoff_max_s, max(delay, retry_after))
                log.warning(
                    "%s: %s (attempt %d of %d), retrying in %.1fs",
                    s.model,
                    message,
                    attempts,
                    s.max_retries + 1,
                    delay,
                )
                await asyncio.sleep(delay)

    # --- API -----------------------------------------------------------------------------------
    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        fmt: dict[str, Any] | None = None,
    ) -> Completion:
        """One chat completion, from the cache when the same request was answered before.
        Raises :class:`LLMError` when retries are exhausted or the request is refused."""
        payload = self.payload(messages, tools, fmt)
        key = cache_key(payload)
        self.usage.calls += 1
        if self.settings.cache:
            hit = self.cache.get(key)
            if hit is not None:
                self.usage.cache_hits += 1
                return Completion(
                    content=hit.get("content"),
                    tool_calls=hit.get("tool_calls") or [],
                    prompt_tokens=int(hit.get("prompt_tokens", 0)),
                    completion_tokens=int(hit.get("completion_tokens", 0)),
                    cost_usd=float(hit.get("cost_usd", 0.0)),
                    cost_known=bool(hit.get("cost_known", True)),
                    cached=True,
                    latency_s=0.0,
                    attempts=0,
                    key=key,
                )
        try:
            response, attempts, latency = await self._request(payload)
        except LLMError:
            self.usage.failures += 1
            raise
        choice = response.choices[0]
        message = choice.message
        calls = [
            {
                "id": c.id,
                "name": c.function.name,
                "arguments": c.function.arguments,
            }
            for c in (getattr(message, "tool_calls", None) or [])
        ]
        usage = getattr(response, "usage", None)
        p_tok = int(getattr(usage, "prompt_tokens", 0) or 0)
        c_tok = int(getattr(usage, "completion_tokens", 0) or 0)
        cost, known = call_cost(self.settings.model, p_tok, c_tok, self.settings.prices)
        out = Completion(
            content=message.content,
            tool_calls=calls,
            prompt_tokens=p_tok,
            completion_tokens=c_tok,
            cost_usd=cost,
            cost_known=known,
            cached=False,
            latency_s=latency,
            attempts=attempts,
            key=key,
        )
        self._spent(p_tok, c_tok, cost, known)
        if self.settings.cache:
            self.cache.put(
                key,
                {
                    "request": payload,
                    "content": out.content,
                    "tool_calls": calls,
                    "finish_reason": getattr(choice, "finish_reason", None),
                    "prompt_tokens": p_tok,
                    "completion_tokens": c_tok,
                    "cost_usd": cost,
                    "cost_known": known,
                    "latency_s": round(latency, 3),
                    "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                },
            )
        return out

    def _spent(self, p_tok: int, c_tok: int, cost: float, known: bool) -> None:
        """A call's tokens and cost, on this client's usage and the grid's ledger."""
        self.usage.prompt_tokens += p_tok
        self.usage.completion_tokens += c_tok
        self.usage.cost_usd += cost
        self.usage.unpriced += 0 if known else 1
        if self.ledger is not None:
            self.ledger.add(cost, self.settings.model, p_tok, c_tok)

    async def forward(
        self, messages: list[dict[str, Any]], params: dict[str, Any]
    ) -> tuple[Any, Completion]:
        """One request as another program asked it (the model gateway, :mod:`sabench.gateway`):
        its own parameters, never from the cache (an agent's calls are its run), with this
        client's key, retries and the grid's budget. (litellm's response, its tokens and cost).
        Raises :class:`LLMError` as :meth:`chat` does."""
        self.usage.calls += 1
        try:
            response, attempts, latency = await self._request(
                {"messages": messages, "params": params, "schema": None}
            )
        except LLMError:
            self.usage.failures += 1
            raise
        usage = getattr(response, "usage", None)
        p_tok = int(getattr(usage, "prompt_tokens", 0) or 0)
        c_tok = int(getattr(usage, "completion_tokens", 0) or 0)
        cost, known = call_cost(self.settings.model, p_tok, c_tok, self.settings.prices)
        self._spent(p_tok, c_tok, cost, known)
        done = Completion(None, [], p_tok, c_tok, cost, known, False, latency, attempts)
        return response, done

    async def structured(self, messages: list[dict[str, Any]], output: type[T]) -> Structured:
        """A reply validated as ``output``; an invalid one gets one repair request (the model sees
        its reply and what was wrong), then ``error`` says why there is no value."""
        fmt = response_format(output, self.settings.response_format)
        first = await self.chat(messages, fmt=fmt)
        value, error = parse_reply(first.content, output)
        if value is not None:
            return Structured(value, None, [first])
        repair = [
            *messages,
            {"role": "assistant", "content": first.content or ""},
            {"role": "user", "content": render("repair.j2", error=error)},
        ]
        second = await self.chat(repair, fmt=fmt)
        value, error2 = parse_reply(second.content, output)
        if value is not None:
            return Structured(value, None, [first, second])
        return Structured(
            None, f"invalid structured output after one repair: {error2}", [first, second]
        )

    @staticmethod
    def run(coro: Awaitable[R]) -> R:
        """Run a coroutine from synchronous code (a fresh event loop)."""
        return asyncio.run(coro)  # type: ignore[arg-type]
