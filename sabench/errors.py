"""User-facing errors: one line that names the file and the field, never a traceback."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

#: The most problems of one file a :class:`UserErrors` lists.
MAX_PROBLEMS = 20


class UserError(Exception):
    """A mistake in the user's input (config, paper folder, SAU file).

    The message is one line: ``<file>: <field>: <what is wrong>``.
    """

    def __init__(
        self,
        path: str | Path | None,
        field: str | None,
        message: str,
        *,
        where: Sequence[str | int] = (),
    ) -> None:
        self.path = str(path) if path is not None else None
        self.field = field
        self.message = message
        #: the field as keys and indexes into the file's data, for finding its line
        self.where = tuple(where)
        parts = [p for p in (self.path, field, message) if p]
        super().__init__(": ".join(parts))


class UserErrors(UserError):
    """Several mistakes in one file, reported together: one line each, at most
    :data:`MAX_PROBLEMS`; the first line is the first problem's, as a single UserError's."""

    def __init__(self, path: str | Path, problems: Sequence[tuple[str | None, str]]) -> None:
        field, message = problems[0]
        super().__init__(path, field, message)
        self.problems = list(problems)
        lines = [str(UserError(path, f, m)) for f, m in self.problems[:MAX_PROBLEMS]]
        if len(self.problems) > MAX_PROBLEMS:
            lines.append(f"{path}: {len(self.problems) - MAX_PROBLEMS} more problems not shown")
        self.args = ("\n".join(lines),)


def parse_error(path: str | Path, exc: Exception) -> UserError:
    """A YAML or JSON syntax error as a UserError that keeps where it is (line and column)."""
    if isinstance(exc, json.JSONDecodeError):
        return UserError(path, f"line {exc.lineno}, column {exc.colno}", f"cannot parse: {exc.msg}")
    mark = getattr(exc, "problem_mark", None)
    context, context_mark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if context and context_mark is not None and mark is not None and context_mark.line != mark.line:
        context += f" (from line {context_mark.line + 1}, column {context_mark.column + 1})"
    mark = mark or context_mark
    what = [context, getattr(exc, "problem", None)]
    message = ", ".join(w for w in what if w) or (str(exc).splitlines() or ["?"])[0]
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else None
    return UserError(path, where, f"cannot parse: {message}")
