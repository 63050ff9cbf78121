"""Any dimension: the body of the function that implements the claim replaced by a TODO stub."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from sabench.drift.mutants import (
    Mutant,
    PyFile,
    Submission,
    apply_edits,
    is_docstring,
    name_matches,
    parses,
)
from sabench.drift.operators import PROSE_TIE_SHARE, locate_statement

STUB_BODY = "# TODO: implement\nraise NotImplementedError"


def locate_function(
    sub: Submission, claim: Any, cited: Sequence[tuple[str, int, int]] = ()
) -> tuple[PyFile, ast.FunctionDef | ast.AsyncFunctionDef] | None:
    """The function that implements the claim. With lines another judge cited for it, only a
    function holding cited lines: the one named after the claim, else the one whose name and cited
    lines hold most of the claim's terms (stubbing code the judge did not credit breaks nothing
    the claim is about). Without: one named after a name of the claim, else the one that holds the
    claim's statement."""
    if cited:
        return _cited_function(sub, claim, cited)
    for name in [*claim.names, *claim.entities]:
        keys = _name_keys(name)
        for path in sub.code_files:
            pf = sub.py[path]
            for fn in pf.functions:
                if keys and name_matches(fn.name, keys) and not sub.stubbed(fn):
                    return pf, fn
    found = locate_statement(sub, claim, cited)
    if found is not None:
        pf, stmt = found
        fn = pf.function_at(stmt.lineno)
        if fn is not None and not sub.stubbed(fn):
            return pf, fn
    return None


def _name_keys(name: str) -> list[str]:
    from sabench.judges.static import entity_keys

    return [k for k in entity_keys(name) if len(k) >= 3]


def _cited_function(
    sub: Submission, claim: Any, cited: Sequence[tuple[str, int, int]]
) -> tuple[PyFile, ast.FunctionDef | ast.AsyncFunctionDef] | None:
    from sabench.index import text_terms

    weights = claim.terms
    total = sum(weights.values()) or 1.0
    keys = [k for name in [*claim.names, *claim.entities] for k in _name_keys(name)]
    best: tuple[tuple[int, float, int], PyFile, ast.FunctionDef | ast.AsyncFunctionDef] | None
    best = None
    for path in sub.code_files:
        pf = sub.py[path]
        spans = [(a, b) for f, a, b in cited if f == path]
        if not spans:
            continue
        for fn in pf.functions:
            start, end = fn.lineno, fn.end_lineno or fn.lineno
            inside = [(max(a, start), min(b, end)) for a, b in spans if a <= end and b >= start]
            if not inside or sub.stubbed(fn) or pf.function_at(inside[0][0]) is not fn:
                continue  # the innermost function of the cited lines, not an enclosing class's
            lines = [pf.lines[ln - 1] for a, b in inside for ln in range(a, b + 1)]
            text = fn.name + " " + "".join(lines)
            terms = set(text_terms(text))
            hit = [t for t in weights if t in terms]
            share = sum(weights[t] for t in hit) / total
            named = int(bool(keys) and name_matches(fn.name, keys))
            if not named and (len(hit) < 2 or share < PROSE_TIE_SHARE):
                continue
            key = (named, share, -(end - start))
            if best is None or key > best[0]:
                best = (key, pf, fn)
    return (best[1], best[2]) if best else None


def stub_mutant(
    sub: Submission, sau: dict[str, Any], claim: Any, cited: Sequence = ()
) -> Mutant | None:
    """Placeholder: the implementing function's body (docstring kept) replaced by a TODO stub."""
    found = locate_function(sub, claim, cited)
    if found is None:
        return None
    pf, fn = found
    body = [s for s in fn.body if not is_docstring(s)]
    first, last = body[0], body[-1]
    if first.lineno == fn.lineno:
        return None  # a one-line def
    new = stub_lines(pf, first.lineno, last.end_lineno or last.lineno, first.col_offset)
    if new is None:
        return None
    return Mutant(
        str(sau["sau_id"]),
        str(sau["dimension"]),
        "stub",
        pf.path,
        fn.lineno,
        f"body of `{fn.name}` ({pf.path}:{fn.lineno}-{fn.end_lineno}) replaced by a TODO stub",
        {pf.path: new},
    )


def stub_lines(pf: PyFile, first: int, last: int, col: int | None = None) -> str | None:
    """The file with lines ``first..last`` (1-based, inclusive) replaced by the TODO stub, at the
    indentation of line ``first`` (its first ``col`` characters, else its leading blanks); None
    where that is not blank or the file no longer parses."""
    line = pf.lines[first - 1]
    indent = line[: len(line) - len(line.lstrip())] if col is None else line[:col]
    if indent.strip():
        return None
    a, b = pf.line_span(first, last)
    stub = "".join(f"{indent}{row}\n" for row in STUB_BODY.splitlines())
    new = apply_edits(pf.text, [(a, b, stub)])
    if new is None or not parses(pf.path, new, pf.text):
        return None
    return new
