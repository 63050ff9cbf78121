"""Judges turn (submission, SAUs, execution record) into one :class:`~sabench.contracts.Judgment`
per SAU they can judge.

``static`` needs nothing but the code (see :mod:`sabench.judges.static`). Its module is imported on
first use, so importing this package stays cheap at Snakefile parse time.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sabench.contracts import Judgment

__all__ = ["STATIC", "judge_static", "static_fingerprint"]

#: The offline judge's name in configs and judgment rows.
STATIC = "static"


def judge_static(
    submission: Path | str, saus: list[dict[str, Any]], execution: dict[str, Any] | None = None
) -> list[Judgment]:
    """See :func:`sabench.judges.static.judge_static`."""
    from sabench.judges.static import judge_static as _judge

    return _judge(submission, saus, execution)


def static_fingerprint() -> str:
    """See :func:`sabench.judges.static.static_fingerprint`."""
    from sabench.judges.static import static_fingerprint as _fingerprint

    return _fingerprint()
