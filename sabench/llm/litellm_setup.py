"""litellm, imported quietly and offline, once: the client and the price map both need it.

The import sets ``LITELLM_LOCAL_MODEL_COST_MAP`` (no network at import) and points tiktoken at
litellm's bundled encodings (no download on first use).
"""

from __future__ import annotations

import importlib.util
import logging
import os
from functools import cache
from pathlib import Path
from typing import Any


@cache
def get_litellm() -> Any:
    """Import litellm quietly and offline (see the module docstring)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    if "TIKTOKEN_CACHE_DIR" not in os.environ:
        spec = importlib.util.find_spec("litellm")
        if spec and spec.submodule_search_locations:
            bundled = Path(spec.submodule_search_locations[0]) / "litellm_core_utils" / "tokenizers"
            if bundled.is_dir():
                os.environ["TIKTOKEN_CACHE_DIR"] = str(bundled)
    import litellm

    litellm.suppress_debug_info = True
    litellm.drop_params = True  # a provider without e.g. seed or response_format: drop, not fail
    litellm.telemetry = False
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm", "httpx", "openai"):
        logging.getLogger(name).setLevel(logging.WARNING)
    return litellm
