"""What ran: the execution record's lines (``execution["lines_run"]``: path -> line numbers) read
onto the index. A statement of a Python code file that did not run implements nothing: its lines
are text, as dead code is (:meth:`sabench.index.CodeIndex.is_text`). Without a record, credit comes
from code that is live by dataflow only (:mod:`sabench.index.liveness`), and the judge says so."""

from __future__ import annotations

import dataclasses
from typing import Any

from sabench.index import CODE, CodeIndex
from sabench.index.liveness import unexecuted_lines
from sabench.index.python_facts import parse_recovering
from sabench.judges.static.outcome import Outcome

#: said in the reasoning of every credited claim when the run has no record of the lines that ran
NO_RECORD = "(No execution record: credited from code that is live by dataflow only.)"


def lines_run(execution: dict[str, Any] | None) -> dict[str, set[int]] | None:
    """The record's lines per file, or None when the run recorded none."""
    if not execution:
        return None
    ran = execution.get("lines_run")
    if not isinstance(ran, dict):
        return None
    out: dict[str, set[int]] = {}
    for path, lines in ran.items():
        if isinstance(lines, list | tuple | set):
            out[str(path).removeprefix("./")] = {int(x) for x in lines if isinstance(x, int)}
    return out


def executed_index(index: CodeIndex, execution: dict[str, Any] | None) -> CodeIndex:
    """The index with the statements that did not run read as dead code (the same index when
    there is no record). A Python code file the record does not name never ran."""
    ran = lines_run(execution)
    if ran is None:
        return index
    not_run: set[tuple[int, int]] = set()
    for fid, sf in enumerate(index.files):
        if sf.kind != CODE or sf.language != "python" or not sf.lines:
            continue
        lines = ran.get(sf.path)
        if not lines:
            not_run.update((fid, ln) for ln in range(1, len(sf.lines) + 1))
            continue
        parsed = parse_recovering("\n".join(sf.lines))
        if parsed is None:
            continue
        not_run.update((fid, ln) for ln in unexecuted_lines(parsed[0], lines))
    if not not_run:
        return index
    return dataclasses.replace(index, unread=index.unread | not_run, dead=index.dead | not_run)


#: an ``aligned`` outcome of a run without a record becomes ``partial`` (0.75) where the index
#: could not trace what runs from an entry point (every module taken to run). Off: measured on
#: SA-Bench it moves kappa 0.467 -> 0.468 and exact agreement 0.496 -> 0.494 (docs/calibration.md)
#: and would make every entry-less hand-made repository partial at best.
CAP_UNTRACED = False


def unconfirmed(outcome: Outcome, index: CodeIndex) -> Outcome:
    """A credited outcome of a run without a record of the lines that ran: said so (and capped
    when :data:`CAP_UNTRACED` is on)."""
    reasoning = f"{outcome.reasoning.strip()} {NO_RECORD}".strip()
    if CAP_UNTRACED and outcome.verdict == "aligned" and not index.entry_traced:
        reasoning += " (Nothing traces it from an entry point: at most partial.)"
        return dataclasses.replace(outcome, verdict="partial", score=0.75, reasoning=reasoning)
    return dataclasses.replace(outcome, reasoning=reasoning)
