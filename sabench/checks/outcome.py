"""How one check or one expected result came out: the outcome kinds and :class:`Outcome`."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

#: ``unused``: a check that passed on functions nothing in the submission runs (the exec judge
#: decides it after the run: never cached); ``unreached``: a pass on functions a run that did not
#: complete never reached (likewise); ``crash``: the code under test ended or hung the check;
#: ``inconsistent``: it returned under the check what it did not return in its own run;
#: ``unconfirmed``: a pass, but a function the check uses answered its run's recorded inputs twice
#: differently (random state restored), so replay could not confirm it is the code the run ran
OUTCOMES = (
    "pass",
    "fail",
    "placeholder",
    "missing",
    "error",
    "unused",
    "unreached",
    "crash",
    "inconsistent",
    "unconfirmed",
)


@dataclass
class Outcome:
    """How one check or one expected result came out."""

    kind: str
    detail: str
    tail: str = ""
    where: tuple[str, int] | None = None
    exit_code: int | None = None
    status: str | None = None
    wall_s: float = 0.0
    cached: bool = False
    #: a passed check's lines of the submission that ran in the child (relative path -> lines)
    lines: dict[str, list[int]] | None = None

    def __post_init__(self) -> None:
        if self.kind not in OUTCOMES:
            raise ValueError(f"unknown outcome {self.kind!r}")
        if self.where is not None:
            self.where = (str(self.where[0]), int(self.where[1]))

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("cached")
        return data
