"""Whether a model's API key is there before any request: the one up-front check of every model.

A model without ``api_key_env`` reads its provider's own variable (``OPENAI_API_KEY`` for
``openai/...``), which litellm names; without it every request fails with "Missing credentials"
after the retries. A model with ``api_base`` (an OpenAI-compatible server: vLLM, Ollama, the tests'
scripted server) needs no key, as the client treats it (:data:`sabench.llm.client.NO_KEY`).
"""

from __future__ import annotations

import os
from typing import Any


def provider_key_variables(model: str) -> list[str]:
    """The environment variables litellm says ``model``'s provider needs and the host lacks
    (empty when none, or when litellm does not know the provider)."""
    from sabench.llm.litellm_setup import get_litellm

    try:
        answer = get_litellm().validate_environment(model=model)
    except Exception:  # a provider litellm cannot place: let the request say what is wrong
        return []
    if not isinstance(answer, dict) or answer.get("keys_in_environment", True):
        return []
    return [str(v) for v in answer.get("missing_keys") or []]


def missing_key(
    model: str | None,
    settings: dict[str, Any] | None,
    owner: str,
    field: str,
    config_key: str | None = None,
) -> str | None:
    """One line naming the variable ``model`` lacks, or None when it has its key.

    ``settings``: the endpoint's mapping (``api_key_env``, ``api_base``); ``owner``: who needs the
    key (``judge llm:openai/gpt-4o-mini``); ``field``: the config key that names another variable
    (``api_key_env``); ``config_key``: where to set it, spelled in full (default ``field``)."""
    settings = settings or {}
    named = settings.get("api_key_env")
    if named:
        if os.environ.get(named):
            return None
        return f"{owner}: {field}: environment variable {named} is not set (export it first)"
    if settings.get("api_base") or not model:
        return None  # a local server: no key (the client sends a placeholder)
    variables = provider_key_variables(model)
    if not variables:
        return None
    which = " or ".join(variables) if _alternatives(variables) else ", ".join(variables)
    return (
        f"{owner}: environment variable {which} is not set ({model} reads its key from it): "
        f"export it, or name the variable that holds the key in {config_key or field}"
    )


def _alternatives(variables: list[str]) -> bool:
    """Whether the names are one key under several names (GOOGLE_API_KEY / GEMINI_API_KEY)."""
    return all(v.endswith("_API_KEY") for v in variables) and len(variables) > 1
