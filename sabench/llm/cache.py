"""A content-addressed response cache on disk: one JSON file per key, written by atomic rename.

The key hashes everything that shapes an answer (model, messages, parameters, output schema), so a
rerun of the same prompts is free and returns the same answers, and any change is a miss. The
endpoint (``api_base``) and the API key are not part of the key: restarting a local server on
another port keeps its cache, and no secret is ever written. Files live outside ``results/``
(default ``.cache/sabench/llm/``) as ``<key[:2]>/<key>.json``.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from sabench.io import output_mode

CACHE_VERSION = 1


def cache_key(payload: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``payload`` (sorted keys, no whitespace)."""
    canon = json.dumps(
        {"v": CACHE_VERSION, **payload}, sort_keys=True, separators=(",", ":"), default=str
    )
    return hashlib.sha256(canon.encode()).hexdigest()


class LLMCache:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry, or None (absent, or unreadable: treated as a miss and overwritten)."""
        try:
            with open(self.path(key), encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and data.get("key") == key else None

    def put(self, key: str, entry: dict[str, Any]) -> None:
        """Write atomically: a temporary file in the same folder renamed onto the key's file, so
        concurrent writers and killed jobs never leave a half file."""
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:8]}.", suffix=".tmp", dir=path.parent)
        try:
            os.fchmod(fd, output_mode())  # a cache a cluster group shares: the umask's mode
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({**entry, "key": key}, fh, sort_keys=True, indent=1)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def __len__(self) -> int:
        return sum(1 for _ in self.root.glob("??/*.json")) if self.root.is_dir() else 0
