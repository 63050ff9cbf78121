"""Glue for the workflow's scripts and the ``python -m sabench.*`` commands: logging to the rule's
log file, and user errors as ``error: <file>: <field>: <message>`` lines with exit status 2."""

from __future__ import annotations

import argparse
import functools
import json
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, ParamSpec

from sabench.errors import UserError

log = logging.getLogger("sabench")
P = ParamSpec("P")

#: Exit status of a command stopped by a user error (argparse's own usage errors use it too).
USER_ERROR_EXIT = 2


def as_user_error(exc: BaseException) -> UserError | None:
    """A UserError, or a file or folder that is not there (named by the OS error), as one."""
    if isinstance(exc, UserError):
        return exc
    if isinstance(exc, FileNotFoundError | NotADirectoryError) and exc.filename:
        return UserError(exc.filename, None, "not found")
    if isinstance(exc, IsADirectoryError) and exc.filename:
        return UserError(exc.filename, None, "is a folder, not a file")
    return None


def report_user_error(exc: UserError) -> int:
    """Print the error (one line, or one per problem of a :class:`UserErrors`); the exit status."""
    for line in str(exc).splitlines():
        print(f"error: {line}", file=sys.stderr)
    return USER_ERROR_EXIT


def command(main: Callable[P, int]) -> Callable[P, int]:
    """A command's ``main``: a user error ends it as :func:`report_user_error`, no traceback."""

    @functools.wraps(main)
    def run(*args: P.args, **kwargs: P.kwargs) -> int:
        try:
            return main(*args, **kwargs)
        except (UserError, OSError) as exc:
            err = as_user_error(exc)
            if err is None:
                raise
            return report_user_error(err)

    return run


class ArgumentParser(argparse.ArgumentParser):
    """argparse, with its errors as one ``error:`` line (the usage is one ``--help`` away) and,
    run as ``python -m sabench.<module>``, that command as its name."""

    def __init__(self, **kwargs: Any) -> None:
        spec = getattr(sys.modules.get("__main__"), "__spec__", None)
        if "prog" not in kwargs and spec is not None and spec.name.startswith("sabench."):
            kwargs["prog"] = f"python -m {spec.name.removesuffix('.__main__')}"
        super().__init__(**kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(USER_ERROR_EXIT, f"error: {self.prog}: {message} (see --help)\n")


def json_object(text: str) -> dict[str, Any]:
    """An argument that is a JSON object; what is wrong with it, with the column, otherwise."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(
            f"not JSON ({exc.msg} at column {exc.colno}): {text!r}"
        ) from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"not a JSON object: {text!r}")
    return value


@contextmanager
def step(log_path: str | Path | None, name: str) -> Iterator[logging.Logger]:
    """Log to the rule's log file and stderr; a user error ends the job with exit status 2 and
    its ``error:`` line printed once (the log file gets it too), no traceback."""
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
    except (UserError, OSError) as exc:
        err = as_user_error(exc)
        if err is None:
            raise
        if log_path:  # the log file gets it too; stderr only the error line
            logging.getLogger().removeHandler(handlers[0])
            log.error("%s", err)
        sys.exit(report_user_error(err))
