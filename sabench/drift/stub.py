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
from sabench.drift.operators import locate_statement

STUB_BODY = "# TODO: implement\nraise NotImplementedError"


def locate_function(
    sub: Submission, claim: Any, cited: Sequence[tuple[str, int, int]] = ()
) -> tuple[PyFile, ast.FunctionDef | ast.AsyncFunctionDef] | None:
    """The function that implements the claim: one named after a name of the claim, else the one
    that holds the claim's statement."""
    from sabench.judges.static import entity_keys

    for name in [*claim.names, *claim.entities]:
        keys = [k for k in entity_keys(name) if len(k) >= 3]
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
    a, b = pf.line_span(first.lineno, last.end_lineno or last.lineno)
    indent = pf.lines[first.lineno - 1][: first.col_offset]
    if indent.strip():
        return None
    stub = "".join(f"{indent}{line}\n" for line in STUB_BODY.splitlines())
    new = apply_edits(pf.text, [(a, b, stub)])
    if new is None or not parses(pf.path, new):
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
