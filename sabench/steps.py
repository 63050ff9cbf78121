"""Glue for the workflow's scripts: logging to the rule's log file and one-line user errors."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sabench.errors import UserError

log = logging.getLogger("sabench")


@contextmanager
def step(log_path: str | Path | None, name: str) -> Iterator[logging.Logger]:
    """Log to the rule's log file and stderr; a UserError ends the job with one line, no traceback."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_path:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_path, mode="w", encoding="utf-8"))
    logging.basicConfig(
        level=logging.INFO,
        format=f"%(asctime)s {name} %(levelname)s %(message)s",
        handlers=handlers,
        force=True,
    )
    try:
        yield log
    except UserError as exc:
        log.error("%s", exc)
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
