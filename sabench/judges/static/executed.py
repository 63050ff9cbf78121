"""What ran, and what reaches: the execution record's lines (``execution["lines_run"]``: path ->
line numbers) read onto the index, and the liveness of the whole submission. A statement of a
Python code file that did not run implements nothing: its lines are text, as dead code is
(:meth:`sabench.index.CodeIndex.is_text`). The index runs the dataflow
(:mod:`sabench.index.liveness`) over every module at once, so that a function of one module that
another imports is summarised (``from helpers import same_shape``: a formula whose value reaches
only a helper that drops it is text); with a record it is run again on the index's trees with the
statements that did not run left out (a helper's never-run ``return value`` branch passes nothing
on). Without a record, credit comes from code that is live by dataflow only, and the judge says
so."""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from sabench.contracts import UNREACHED_CAP
from sabench.index import CODE, CodeIndex
from sabench.index.dataflow import children, walk
from sabench.index.liveness import child_statements, inert_in_submission, statement_span
from sabench.index.model import Fact
from sabench.index.python_facts import statement_lines
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
    """The lines an uncaught exception that ended a process of the run was raised through:
    statements that never completed, so what only they take reaches nothing. Whatever the run's
    status: a process can end by an exception and still exit 0 (an ``atexit`` handler calling
    ``os._exit(0)``)."""
    if not execution:
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
    is judged statement by statement); a decorated definition ran when its decorators did, and a
    function's header only when some of its body ran (a ``def`` runs at import: a function the
    run never called implements nothing). A bare
    string (a docstring) never runs: it is read with the block that holds it, which ran when any
    of its other statements did."""
    out: set[int] = set()
    strings: list[tuple[ast.stmt, list[ast.stmt]]] = []
    for n, block in _statements(tree):
        if _is_string(n):
            strings.append((n, block))
        elif not any(ln in ran for ln in statement_span(n)):
            out.update(statement_span(n))
        elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and not _body_ran(n, ran):
            out.update(statement_span(n))  # defined at import, never called
    for n, block in strings:
        others = [c for c in block if c is not n]
        if block is not tree.body and all(c.lineno in out for c in others):
            out.update(range(n.lineno, (n.end_lineno or n.lineno) + 1))
    return out


def _body_ran(fn: ast.FunctionDef | ast.AsyncFunctionDef, ran: set[int]) -> bool:
    first = fn.body[0].lineno
    return first == fn.lineno or not ran.isdisjoint(range(first, (fn.end_lineno or first) + 1))


def passed_by(tree: ast.Module, ran: set[int]) -> set[int]:
    """The ids of the statements of branches a run went past: a block of a compound statement
    whose header ran, of which nothing ran, while a later statement of the same block did (so
    control passed there, in every call the run made) or another branch of the same ``if`` or
    ``match`` did (so the test chose it, in every call the run made), and an exception handler that never ran
    beside a body that ran to its end. What a run never reached, or stopped in, keeps its unrun
    lines; a definition's body is a branch of its calls, not of the definition."""
    out: set[int] = set()

    def ran_any(n: ast.stmt) -> bool:
        return any(ln in ran for ln in statement_span(n)) or any(map(ran_any, child_statements(n)))

    def skip(stmts: list[ast.stmt], past: bool) -> None:
        if past and stmts and not any(map(ran_any, stmts)):
            out.update(id(x) for c in stmts for x in walk(c) if isinstance(x, ast.stmt))
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
            elif isinstance(n, ast.If):  # a branch is gone past too where its sibling ran
                past = any(ln in ran for ln in statement_span(n)) and later
                body_ran, else_ran = any(map(ran_any, n.body)), any(map(ran_any, n.orelse))
                skip(n.body, past or else_ran)
                skip(n.orelse, past or body_ran)
            else:
                past = any(ln in ran for ln in statement_span(n)) and later
                for sub in [getattr(n, f, None) for f in ("body", "orelse")]:
                    skip([c for c in sub or () if isinstance(c, ast.stmt)], past)
                for case in getattr(n, "cases", ()):
                    skip(case.body, past or any(ran_any(s) for c in n.cases for s in c.body))

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


def executed_index(
    index: CodeIndex, execution: dict[str, Any] | None, reached: bool = False
) -> CodeIndex:
    """The index with the statements that did not run read as dead code, and those whose results
    reach nothing in the whole submission (what did not run left out) as text. A Python code
    file the record does not name never ran. ``reached``: a run that did not complete read as if
    it had ended where it stopped (what it never reached did not run, and the statements its
    exception went through took effect nowhere)."""
    ran = lines_of_incomplete_run(execution) if reached else lines_run(execution)
    partial = {} if reached else lines_of_incomplete_run(execution) or {}
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
        tree = index.trees.get(sf.path)
        if tree is None:
            continue
        trees[sf.path], fids[sf.path] = tree, fid
        if lines:
            not_run.update((fid, ln) for ln in unexecuted_lines(tree, lines))
        elif partial.get(sf.path):
            skipped[sf.path] = passed_by(tree, partial[sf.path])
            lines_past = statement_lines(tree, skipped[sf.path])
            not_run.update((fid, ln) for ln in lines_past)
    inert: set[tuple[int, int]] = set()
    unread: set[str] = set()
    with contextlib.suppress(RecursionError):
        skips = None
        if ran is not None:
            skips = {
                p: unrun_statements(t, ran[p]) | unfinished(t, raised.get(p, set()))
                for p, t in trees.items()
            }
        if skips is None and skipped:
            skips = {p: skipped.get(p, set()) for p in trees}
        dropped: dict[str, list[ast.AST]] = {}
        if skips is None:  # the index's own, of the same modules
            found = {p: set(index.inert_ids.get(p, ())) for p in trees}
            dropped = {p: index.dropped.get(p, []) for p in trees}
        else:
            found = inert_in_submission(trees, skips, dropped)
        gone = {
            p: ids | (skips or {}).get(p, set()) | {id(x) for x in dropped[p]}
            for p, ids in found.items()
        }
        inside: list[str] = []  # what code that reaches nothing reads
        kept = _kept(trees, gone, inside)
        if ran is not None or skipped:  # called only where its result reaches nothing, or
            # (a run that did not complete) only in the branches it went past
            kept = _uncalled(trees, found, gone, kept, _called_unseen(trees, ran or partial))
            inside = [t for tree in trees.values() for t in _token_list(tree, set())]
        for path, ids in found.items() if skips is not None else ():  # else the index's
            inert.update((fids[path], ln) for ln in statement_lines(trees[path], ids))
        unread = set(inside) - set(kept)
    reads = index.reads - unread
    unopened = _unread_settings(index, execution, trees) if ran is not None else set()
    if (
        not (not_run - index.unread)
        and not (inert - index.unread)
        and reads == index.reads
        and not unopened - index.unread
    ):
        return index
    declared = unopened | {  # settings in files the run never opened; literal assignments
        # whose names only code that reaches nothing reads ...
        (fid, ln)
        for fid, start, end, names in index.declarations
        if reads != index.reads and not any(n in reads for n in names)
        for ln in range(start, end + 1)
    }
    for fact in index.facts:  # ... and config keys
        fid = index.file_id(fact.file) if fact.kind == "config" else None
        if fid is not None and fact.setting in unread and fact.setting in index.reads:
            declared.add((fid, fact.line))
    if ran is not None:  # ... and, by a run's record, module-level data (dicts too) nothing reads
        for path, tree in trees.items():
            for st in _module_data(tree.body):
                names = _assigned_names(st)
                if names is not None and not any(n in reads for n in names):
                    declared.update((fids[path], ln) for ln in range(st.lineno, st.end_lineno + 1))
    return dataclasses.replace(
        index,
        reads=reads,
        unread=index.unread | not_run | inert | declared,
        dead=index.dead | not_run,
        inert=index.inert | inert,
    )


def _unread_settings(
    index: CodeIndex,
    execution: dict[str, Any] | None,
    trees: dict[str, ast.Module],
) -> set[tuple[int, int]]:
    """The lines of settings no code that ran reads: those in config files the run's processes
    never opened (the record's ``files_read``), and the keys of a mapping that the code reads
    key by key (it names some of its keys) where this key is named by no line that ran (as a
    string, ``cfg["lr"]``, ``cfg.get("lr")``, or an attribute, ``cfg.lr``). Code that
    hands mappings on whole (``**cfg``, ``.update(cfg)``, ``setattr``, ``vars``) may read any
    key, so there only unopened files count. Empty without that record (a run from before it)."""
    read = (execution or {}).get("files_read")
    ran = lines_run(execution)
    if not isinstance(read, list) or ran is None:
        return set()
    named: set[str] = set()
    whole = False
    for path, tree in trees.items():
        for n in walk(tree):
            if getattr(n, "lineno", 0) not in ran.get(path, ()):
                continue  # what never ran reads nothing
            if isinstance(n, ast.Constant) and isinstance(n.value, str):
                named.add(n.value)
            elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load):
                named.add(n.attr)
            whole = whole or _hands_on_whole(n)
    config = [f for f in index.facts if f.kind == "config"]
    keys: dict[tuple[str, tuple[str, ...]], set[str]] = {}
    for fact in config:
        full = _config_path(fact)
        for i in range(len(full)):
            keys.setdefault((fact.file, full[:i]), set()).add(full[i])
    out = set()
    for fact in config:
        full = _config_path(fact)
        siblings = keys[(fact.file, full[:-1])]
        unnamed = not whole and fact.setting not in named and bool(siblings & named)
        fid = index.file_id(fact.file)
        if fid is not None and (fact.file not in read or unnamed):
            out.add((fid, fact.line))
    return out


def _config_path(fact: Fact) -> tuple[str, ...]:
    """A config key's full path of keys (its section, then its own dotted name)."""
    own = tuple(fact.name.split("."))
    return own if own[: len(fact.context)] == fact.context else (*fact.context, *own)


def _hands_on_whole(n: ast.AST) -> bool:
    """``f(**d)``, ``{**d}``, ``x.update(d)``, ``setattr(o, k, v)``, ``vars(o)``: any key may be read."""
    if isinstance(n, ast.keyword):
        return n.arg is None
    if isinstance(n, ast.Dict):
        return None in n.keys
    if isinstance(n, ast.Call):
        name = n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
        return name in ("update", "setattr", "vars")
    return isinstance(n, ast.Attribute) and n.attr == "__dict__"


def _module_data(body: list[ast.stmt]) -> Iterator[ast.Assign | ast.AnnAssign]:
    """The module's assignments (of its own names), in its ``if``/``try`` too."""
    for st in body:
        if isinstance(st, ast.Assign | ast.AnnAssign) and st.value is not None:
            yield st
        elif not isinstance(st, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield from _module_data(child_statements(st))


def _binds_only(st: ast.Assign | ast.AnnAssign, kept: Counter[str]) -> bool:
    """The assignment binds names, none of which the code still reads (but itself)."""
    names = _assigned_names(st)
    own = Counter(_token_list(st, set()))
    return names is not None and not any(kept[n] > own[n] for n in names)


def _assigned_names(st: ast.Assign | ast.AnnAssign) -> list[str] | None:
    """The names an assignment binds; None when it stores into an attribute or an item."""
    targets = st.targets if isinstance(st, ast.Assign) else [st.target]
    nodes = [n for t in targets for n in ast.walk(t)]
    if not all(isinstance(n, ast.Name | ast.Tuple | ast.List | ast.Store) for n in nodes):
        return None
    return [n.id for n in nodes if isinstance(n, ast.Name)]


def _kept(
    trees: dict[str, ast.Module], gone: dict[str, set[int]], inside: list[str] | None = None
) -> Counter[str]:
    return Counter(t for p, tree in trees.items() for t in _token_list(tree, gone[p], inside))


def _called_unseen(trees: dict[str, ast.Module], ran: dict[str, set[int]]) -> set[str]:
    """Module-level functions that ran although no code names them (an ``importlib`` or
    ``getattr`` lookup by a string, a registry read from a config): their callers are unseen, so
    where their results go cannot be told from the code, and they are not taken to reach nothing."""
    named = _kept(trees, {p: set() for p in trees})
    return {
        st.name
        for p, tree in trees.items()
        for st in tree.body
        if isinstance(st, ast.FunctionDef | ast.AsyncFunctionDef)
        and not named[st.name]
        and any(ln in ran.get(p, ()) for b in st.body for ln in range(b.lineno, b.end_lineno + 1))
    }


def _uncalled(
    trees: dict[str, ast.Module],
    found: dict[str, set[int]],
    gone: dict[str, set[int]],
    kept: Counter[str],
    unseen: set[str] = frozenset(),  # type: ignore[assignment]
) -> Counter[str]:
    """The module-level functions that only code reaching nothing calls, and the module's data
    (an assignment computing nothing: no call) that only such code reads, added to ``found``
    (their every statement: a function whose results reach nothing implements nothing, however
    often it ran), to a fixpoint; what the code still reads. ``unseen``: functions that ran
    with no caller in the code (:func:`_called_unseen`), left alone."""
    while True:
        dead = {
            p: [
                st
                for st in (*tree.body, *_module_data(tree.body))
                if (
                    isinstance(st, ast.FunctionDef | ast.AsyncFunctionDef)
                    and not st.decorator_list
                    and st.name not in kept
                    and st.name not in unseen
                )
                or (
                    isinstance(st, ast.Assign | ast.AnnAssign)
                    and not any(isinstance(n, ast.Call | ast.Lambda) for n in walk(st))
                    and _binds_only(st, kept)
                )
            ]
            for p, tree in trees.items()
        }
        dead = {p: [st for st in sts if id(st) not in gone[p]] for p, sts in dead.items()}
        if not any(dead.values()):
            return kept
        for p, fns in dead.items():
            for fn in fns:
                ids = {id(n) for n in walk(fn) if isinstance(n, ast.stmt)}
                found[p] |= ids
                gone[p] |= ids
        kept = _kept(trees, gone)


def _token_list(tree: ast.AST, skip: set[int], inside: list[str] | None = None) -> list[str]:
    """What the code reads (names, attributes, strings: keys) outside the nodes ``skip`` names,
    once per read; ``inside`` gets what they read. A store reads nothing, nor does a dict
    display's string key (it names)."""
    out: list[str] = []
    todo: list[tuple[ast.AST, list[str]]] = [(tree, out)]
    while todo:
        n, into = todo.pop()
        if id(n) in skip:
            if inside is None:
                continue
            into = inside
        kind = type(n)
        if kind is ast.Name or kind is ast.Constant:  # no node inside
            if kind is ast.Name and type(n.ctx) is ast.Load:
                into.append(n.id)
            elif kind is ast.Constant and type(n.value) is str:
                into.append(n.value)
            continue
        if kind is ast.Attribute and type(n.ctx) is ast.Load:
            into.append(n.attr)
        if kind is ast.Dict:
            keys = [k for k in n.keys if k is not None and not _is_str(k)]
            todo += [(c, into) for c in (*keys, *n.values)]
        else:
            todo += [(c, into) for c in children(n)]
    return out


def _is_str(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


#: an ``aligned`` outcome of a run without a record becomes ``partial`` (0.75) where the index
#: could not trace what runs from an entry point (every module taken to run). Off: measured on
#: SA-Bench it moves kappa 0.467 -> 0.468 and exact agreement 0.496 -> 0.494 (docs/calibration.md)
#: and would make every entry-less hand-made repository partial at best.
CAP_UNTRACED = False


def _credit(o: Outcome) -> float:
    return 1.0 if o.verdict == "aligned" else o.score if o.verdict == "partial" else 0.0


#: a run that did not complete and reported nothing, judged on the code it ran
SILENT_RUN = (
    "The run did not complete and reported nothing (no print, write, save or log call ran): "
    "no result of its code reached an output."
)
#: calls that report: print, write or save something, or log it
_REPORTING = re.compile(
    r"^(print|pprint|write|writelines|dump|save\w*|savefig|imwrite|to_(csv|json|parquet|pickle"
    r"|excel|markdown|latex)|add_scalars?)$"
)
_LOGGER_METHODS = frozenset({"info", "warning", "error", "debug", "critical", "exception"})


def reported_anything(index: CodeIndex, execution: dict[str, Any] | None) -> bool:
    """Whether a run that did not complete ran a call that reports (a print, a write, a save, a
    log line) in its own Python code before it stopped. A run that reported nothing left no
    result any of its code could reach: on what it ran, it implements no claim."""
    ran = lines_of_incomplete_run(execution)
    if ran is None:
        return True
    for sf in index.files:
        lines = ran.get(sf.path)
        if sf.kind != CODE or sf.language != "python" or not lines:
            continue
        tree = index.trees.get(sf.path)
        for node in walk(tree) if tree is not None else ():
            if isinstance(node, ast.Call) and node.lineno in lines and _reports(node.func):
                return True
    return False


def _reports(func: ast.expr) -> bool:
    if isinstance(func, ast.Name):
        return bool(_REPORTING.match(func.id))
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in _LOGGER_METHODS or func.attr.startswith(
        "log"
    ):  # ``logger.info``, ``wandb.log``
        return any(w in ast.unparse(func.value).lower() for w in _LOGGERS)
    return bool(_REPORTING.match(func.attr))


_LOGGERS = ("log", "wandb", "mlflow", "writer")


def settle(reached: Outcome, doubted: Outcome, index: CodeIndex) -> Outcome:
    """One claim of a run that did not complete: judged on the code it ran (``reached``: what it
    never reached is text), and on the benefit of the doubt for what it never reached
    (``doubted``), capped at :data:`UNREACHED_CAP`. The better of the two; credit from code the
    run never reached is said so."""
    if doubted.verdict not in ("aligned", "partial"):
        return doubted if _credit(reached) <= 0 else reached
    capped = min(_credit(doubted), UNREACHED_CAP)
    if _credit(reached) >= capped:
        return reached
    why = (
        f"{doubted.reasoning.strip()} The run did not complete and never reached this code: "
        "nothing shows that it runs (at most partial)."
    )
    return dataclasses.replace(doubted, verdict="partial", score=capped, reasoning=why)


def unconfirmed(outcome: Outcome, index: CodeIndex) -> Outcome:
    """A credited outcome of a run without a record of the lines that ran: said so (and capped
    when :data:`CAP_UNTRACED` is on)."""
    reasoning = f"{outcome.reasoning.strip()} {NO_RECORD}".strip()
    if CAP_UNTRACED and outcome.verdict == "aligned" and not index.entry_traced:
        reasoning += " (Nothing traces it from an entry point: at most partial.)"
        return dataclasses.replace(outcome, verdict="partial", score=0.75, reasoning=reasoning)
    return dataclasses.replace(outcome, reasoning=reasoning)
