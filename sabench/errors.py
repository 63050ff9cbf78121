"""User-facing errors: one line that names the file and the field, never a traceback."""

from __future__ import annotations

from pathlib import Path


class UserError(Exception):
    """A mistake in the user's input (config, paper folder, SAU file).

    The message is one line: ``<file>: <field>: <what is wrong>``.
    """

    def __init__(self, path: str | Path | None, field: str | None, message: str) -> None:
        self.path = str(path) if path is not None else None
        self.field = field
        self.message = message
        parts = [p for p in (self.path, field, message) if p]
        super().__init__(": ".join(parts))
