"""The LLM layer: one client over litellm for every provider, with a response cache on disk.

    from sabench.llm import LLMClient, LLMSettings
    client = LLMClient(LLMSettings(model="openai/gpt-4o-mini"))
    reply = client.run(client.structured(messages, MyPydanticModel))

* any provider by litellm's model string (``openai/gpt-4o-mini``, ``anthropic/claude-sonnet-4-5``,
  ``ollama/llama3``, ``hosted_vllm/...``) and ``api_base`` for local OpenAI-compatible servers;
* retries with exponential backoff (and the server's Retry-After) on 429, 5xx, timeouts and
  connection errors; at most ``concurrency`` requests in flight per model;
* prompt and completion tokens and dollars per call (litellm's price map, or ``prices``);
* structured output validated with pydantic, one repair request, then an error;
* a content-addressed cache (:mod:`sabench.llm.cache`), so a rerun makes no request;
* API keys only from the environment variable ``api_key_env`` names, never logged or stored.

litellm is imported on first use only; importing this package is cheap.
"""

from sabench.llm.cache import LLMCache, cache_key
from sabench.llm.client import (
    Completion,
    LLMClient,
    LLMError,
    Structured,
    Usage,
    redact,
)
from sabench.llm.litellm_setup import get_litellm
from sabench.llm.pricing import call_cost, price_per_mtok
from sabench.llm.settings import DEFAULT_CACHE_DIR, LLMSettings
from sabench.llm.structured import extract_json, parse_reply
from sabench.llm.templates import render, templates_hash

__all__ = [
    "DEFAULT_CACHE_DIR",
    "Completion",
    "LLMCache",
    "LLMClient",
    "LLMError",
    "LLMSettings",
    "Structured",
    "Usage",
    "cache_key",
    "call_cost",
    "extract_json",
    "get_litellm",
    "parse_reply",
    "price_per_mtok",
    "redact",
    "render",
    "templates_hash",
]
