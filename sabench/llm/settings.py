"""Settings of one model endpoint (a judge's or the SAU extraction's), from the config's mapping."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

#: Where the response cache lives unless ``cache_dir`` or $SABENCH_LLM_CACHE says otherwise
#: (relative to the working directory: the repository root in a workflow run). Never under results/.
DEFAULT_CACHE_DIR = ".cache/sabench/llm"


@dataclass
class LLMSettings:
    """How to reach a model and what to ask it with. Unknown keys are the caller's (judge) own."""

    model: str
    api_base: str | None = None
    #: name of the environment variable that holds the API key (never the key itself)
    api_key_env: str | None = None
    concurrency: int = 4
    timeout_s: float = 120.0
    max_retries: int = 4
    backoff_s: float = 2.0
    backoff_max_s: float = 60.0
    temperature: float | None = 0.0
    max_tokens: int | None = 1024
    seed: int | None = None
    #: {input_per_mtok, output_per_mtok} in USD; overrides litellm's price map (unmapped models)
    prices: dict[str, float] | None = None
    #: json_schema (the provider enforces the schema), json_object, or none (the prompt only)
    response_format: str = "json_schema"
    cache: bool = True
    cache_dir: str | None = None
    #: further keyword arguments for litellm.completion (top_p, reasoning_effort, ...)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any], model: str | None = None) -> LLMSettings:
        names = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in names and v is not None}
        if model and not kwargs.get("model"):
            kwargs["model"] = model
        if not kwargs.get("model"):
            raise ValueError("no model: name it in the judge (llm:<model>) or as settings.model")
        return cls(**kwargs)

    @property
    def cache_path(self) -> Path:
        return Path(self.cache_dir or os.environ.get("SABENCH_LLM_CACHE") or DEFAULT_CACHE_DIR)

    def request_params(self) -> dict[str, Any]:
        """The parameters that shape an answer (part of the cache key)."""
        params: dict[str, Any] = {}
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if self.max_tokens is not None:
            params["max_tokens"] = self.max_tokens
        if self.seed is not None:
            params["seed"] = self.seed
        params.update(self.extra)
        return params
