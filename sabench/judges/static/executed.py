"""What ran, and what reaches: the execution record's lines (``execution["lines_run"]``: path ->
line numbers) read onto the index, and the liveness of the whole submission. A statement of a
Python code file that did not run implements nothing: its lines are text, as dead code is
(:meth:`sabench.index.CodeIndex.is_text`). The dataflow (:mod:`sabench.index.liveness`) is run
again over every module at once, so that a function of one module that another imports is
summarised (``from helpers import same_shape``: a formula whose value reaches only a helper that
drops it is text), with the statements that did not run left out (a helper's never-run
``return value`` branch passes nothing on). Without a record, credit comes from code that is live
by dataflow only, and the judge says so."""

from __future__ import annotations

import ast
import contextlib
import dataclasses
from typing import Any

from sabench.index import CODE, CodeIndex
from sabench.index.liveness import child_statements, inert_in_submission, statement_span
from sabench.index.python_facts import parse_recovering, statement_lines
from sabench.judges.static.outcome import Outcome

#: said in the reasoning of every credited claim when the run has no record of the lines that ran
NO_RECORD = "(No execution record: credited from code that is live by dataflow only.)"


def lines_run(execution: dict[str, Any] | None) -> dict[str, set[int]] | None:
    """The record's lines per file, or None when the run recorded none or did not complete (it
    left code unrun that a complete run runs: that is no evidence against the code)."""
    if not execution or execution.get("status", "ok") != "ok":
        return None
    return _recorded(execution)


def lines_of_incomplete_run(execution: dict[str, Any] | None) -> dict[str, set[int]] | None:
    """The lines of a run that did not complete (failed, timed out): evidence only of the
    branches it went past (:func:`passed_by`), never of code it did not reach."""
    if not execution or execution.get("status", "ok") == "ok":
        return None
    return _recorded(execution)


def lines_raised(execution: dict[str, Any] | None) -> dict[str, set[int]]:
    """The lines an uncaught exception that ended a process of a run that did not complete was
    raised through: statements that never completed, so what only they take reaches nothing."""
    if not execution or execution.get("status", "ok") == "ok":
        return {}
    return _recorded(execution, "lines_raised") or {}


def _recorded(execution: dict[str, Any], key: str = "lines_run") -> dict[str, set[int]] | None:
    ran = execution.get(key)
    if not isinstance(ran, dict):
        return None
    out: dict[str, set[int]] = {}
    for path, lines in ran.items():
        if isinstance(lines, list | tuple | set):
            out[str(path).removeprefix("./")] = {int(x) for x in lines if isinstance(x, int)}
    return out


def _statements(tree: ast.Module) -> list[tuple[ast.stmt, list[ast.stmt]]]:
    """Every statement with the block that holds it."""
    out: list[tuple[ast.stmt, list[ast.stmt]]] = []
    todo: list[tuple[ast.stmt, list[ast.stmt]]] = [(c, tree.body) for c in tree.body]
    while todo:
        n, block = todo.pop()
        out.append((n, block))
        for f in ("body", "orelse", "finalbody"):
            sub = getattr(n, f, None)
            if isinstance(sub, list):
                todo.extend((c, sub) for c in sub if isinstance(c, ast.stmt))
        for h in getattr(n, "handlers", ()) or getattr(n, "cases", ()):
            todo.extend((c, h.body) for c in h.body)
    return out


def _is_string(n: ast.stmt) -> bool:
    return isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)


def unexecuted_lines(tree: ast.Module, ran: set[int]) -> set[int]:
    """The lines of the statements that did not run by an execution record's ``ran`` lines: a
    simple statement ran when any of its lines did, a compound one when its header did (its body
    is judged statement by statement); a decorated definition ran when its decorators did. A bare
    string (a docstring) never runs: it is read with the block that holds it, which ran when any
    of its other statements did."""
    out: set[int] = set()
    strings: list[tuple[ast.stmt, list[ast.stmt]]] = []
    for n, block in _statements(tree):
        if _is_string(n):
            strings.append((n, block))
        elif not any(ln in ran for ln in statement_span(n)):
            out.update(statement_span(n))
    for n, block in strings:
        others = [c for c in block if c is not n]
        if block is not tree.body and all(c.lineno in out for c in others):
            out.update(range(n.lineno, (n.end_lineno or n.lineno) + 1))
    return out


def passed_by(tree: ast.Module, ran: set[int]) -> set[int]:
    """The ids of the statements of branches a run went past: a block of a compound statement
    whose header ran, of which nothing ran, while a later statement of the same block did (so
    control passed there, in every call the run made), and an exception handler that never ran
    beside a body that ran to its end. What a run never reached, or stopped in, keeps its unrun
    lines; a definition's body is a branch of its calls, not of the definition."""
    out: set[int] = set()

    def ran_any(n: ast.stmt) -> bool:
        return any(ln in ran for ln in statement_span(n)) or any(map(ran_any, child_statements(n)))

    def skip(stmts: list[ast.stmt], past: bool) -> None:
        if past and stmts and not any(map(ran_any, stmts)):
            out.update(id(x) for c in stmts for x in ast.walk(c) if isinstance(x, ast.stmt))
        else:
            visit(stmts)

    def visit(block: list[ast.stmt]) -> None:
        for i, n in enumerate(block):
            later = any(map(ran_any, block[i + 1 :]))
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                visit(n.body)
            elif isinstance(n, ast.Try | getattr(ast, "TryStar", ast.Try)):
                # a handler is gone past when the body ran to its end, or on to what follows
                done = ran_any(n.body[-1]) or (any(map(ran_any, n.body)) and later)
                for sub in (n.body, n.orelse, n.finalbody):
                    visit(sub)
                for h in n.handlers:
                    skip(h.body, done)
            else:
                past = any(ln in ran for ln in statement_span(n)) and later
                for sub in [getattr(n, f, None) for f in ("body", "orelse")]:
                    skip([c for c in sub or () if isinstance(c, ast.stmt)], past)
                for case in getattr(n, "cases", ()):
                    skip(case.body, past)

    visit(tree.body)
    return out


def unfinished(tree: ast.Module, raised: set[int]) -> set[int]:
    """The ids of the innermost statements holding the ``raised`` lines (a compound statement's
    header only): the run's uncaught exception went through them, so they never completed."""
    out: set[int] = set()
    for n, _ in _statements(tree) if raised else ():
        if set(statement_span(n)) & raised:
            out.add(id(n))
    return out


def unrun_statements(tree: ast.Module, ran: set[int]) -> set[int]:
    """The ids of the statements that did nothing in the recorded run: neither their own lines
    nor any statement they hold ran (bare strings are left to the index)."""
    out: set[int] = set()

    def visit(stmts: list[ast.stmt]) -> bool:
        any_ran = False
        for n in stmts:
            inner = visit(child_statements(n))
            if _is_string(n):
                continue
            if inner or any(ln in ran for ln in statement_span(n)):
                any_ran = True
            else:
                out.add(id(n))
        return any_ran

    visit(tree.body)
    return out


def executed_index(index: CodeIndex, execution: dict[str, Any] | None) -> CodeIndex:
    """The index with the statements that did not run read as dead code, and those whose results
    reach nothing in the whole submission (what did not run left out) as text. A Python code
    file the record does not name never ran."""
    ran = lines_run(execution)
    partial = lines_of_incomplete_run(execution) or {}
    raised = lines_raised(execution)
    not_run: set[tuple[int, int]] = set()
    trees: dict[str, ast.Module] = {}
    fids: dict[str, int] = {}
    skipped: dict[str, set[int]] = {}  # of a run that did not complete: branches it went past
    for fid, sf in enumerate(index.files):
        if sf.kind != CODE or sf.language != "python" or not sf.lines:
            continue
        lines = ran.get(sf.path) if ran is not None else None
        if ran is not None and not lines:
            not_run.update((fid, ln) for ln in range(1, len(sf.lines) + 1))
            continue
        parsed = parse_recovering("\n".join(sf.lines))
        if parsed is None:
            continue
        trees[sf.path], fids[sf.path] = parsed[0], fid
        if lines:
            not_run.update((fid, ln) for ln in unexecuted_lines(parsed[0], lines))
        elif partial.get(sf.path):
            skipped[sf.path] = passed_by(parsed[0], partial[sf.path])
            lines_past = statement_lines(parsed[0], skipped[sf.path])
            not_run.update((fid, ln) for ln in lines_past)
            # the statements an exception ended the run through: ran, but took effect nowhere
            skipped[sf.path] |= unfinished(parsed[0], raised.get(sf.path, set()))
    inert: set[tuple[int, int]] = set()
    unread: set[str] = set()
    with contextlib.suppress(RecursionError):
        skips = None if ran is None else {p: unrun_statements(t, ran[p]) for p, t in trees.items()}
        if skips is None and skipped:
            skips = {p: skipped.get(p, set()) for p in trees}
        dropped: dict[str, list[ast.AST]] = {}
        found = inert_in_submission(trees, skips, dropped)
        kept: set[str] = set()
        for path, ids in found.items():
            inert.update((fids[path], ln) for ln in statement_lines(trees[path], ids))
            unread |= _tokens(trees[path], set())
            kept |= _tokens(trees[path], ids | {id(x) for x in dropped[path]})
        unread -= kept
    reads = index.reads - unread
    if not (not_run - index.unread) and not (inert - index.unread) and reads == index.reads:
        return index
    declared = {  # literal assignments whose names only code that reaches nothing reads ...
        (fid, ln)
        for fid, start, end, names in index.declarations
        if reads != index.reads and not any(n in reads for n in names)
        for ln in range(start, end + 1)
    }
    for fact in index.facts:  # ... and config keys
        fid = index.file_id(fact.file) if fact.kind == "config" else None
        if fid is not None and fact.setting in unread and fact.setting in index.reads:
            declared.add((fid, fact.line))
    return dataclasses.replace(
        index,
        reads=reads,
        unread=index.unread | not_run | inert | declared,
        dead=index.dead | not_run,
        inert=index.inert | inert,
    )


def _tokens(tree: ast.Module, skip: set[int]) -> set[str]:
    """What the code reads (names, attributes, strings: keys) outside the nodes ``skip`` names."""
    out: set[str] = set()
    todo: list[ast.AST] = [tree]
    while todo:
        n = todo.pop()
        if id(n) in skip:
            continue
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):
            out.add(n.value)
        todo.extend(ast.iter_child_nodes(n))
    return out


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
