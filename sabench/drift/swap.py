"""D4, two steps swapped: the statements of two consecutive steps of the claim."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Any

from sabench.drift.mutants import (
    Mutant,
    PyFile,
    Submission,
    apply_edits,
    body_lists,
    is_docstring,
    node_name,
    parses,
)

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _walk_code(node: ast.AST) -> Iterable[ast.AST]:
    """The nodes a statement runs: nested definitions are not entered (defining is not running)."""
    if isinstance(node, _DEFS):
        return
    stack = [node]
    while stack:
        cur = stack.pop()
        yield cur
        stack.extend(c for c in ast.iter_child_nodes(cur) if not isinstance(c, _DEFS))


def _call_names(node: ast.AST) -> list[str]:
    out = []
    for n in _walk_code(node):
        if isinstance(n, ast.Call):
            name = node_name(n.func)
            if name:
                out.append(name)
    return out


def _step_matches(pf: PyFile, stmt: ast.stmt, step: Any) -> bool:
    from sabench.index import chunk_info, squash, text_terms
    from sabench.judges.static import entity_keys

    if step.keys:
        keys = [k for key in step.keys for k in entity_keys(key)]
        for name in _call_names(stmt):
            ckeys = set(chunk_info(name)[1]) | {squash(name)}
            if any(k in ckeys for k in keys):
                return True
        return False
    total = sum(step.terms.values())
    if not total or isinstance(stmt, _DEFS):
        return False
    terms = set(text_terms(pf.segment(stmt)))
    return sum(w for t, w in step.terms.items() if t in terms) / total >= 0.5


def swap_mutant(sub: Submission, sau: dict[str, Any], claim: Any) -> Mutant | None:
    """D4: in the block that runs the most of the claim's steps, the statements of two consecutive
    steps swapped (the first such pair, in claim order)."""
    steps = claim.steps
    if len(steps) < 2:
        return None
    best: tuple[int, PyFile, list[ast.stmt], list[int | None]] | None = None
    for path in sub.code_files:
        pf = sub.py[path]
        for node in ast.walk(pf.tree):
            for body in body_lists(node):
                stmts = [s for s in body if not is_docstring(s)]
                pos: list[int | None] = []
                for step in steps:
                    pos.append(
                        next((i for i, s in enumerate(stmts) if _step_matches(pf, s, step)), None)
                    )
                n = len({p for p in pos if p is not None})
                if n >= 2 and (best is None or n > best[0]):
                    best = (n, pf, stmts, pos)
    if best is None:
        return None
    _, pf, stmts, pos = best
    for i in range(len(steps) - 1):
        a, b = pos[i], pos[i + 1]
        if a is None or b is None or a >= b:
            continue
        sa, sb = stmts[a], stmts[b]
        if sa.lineno == sb.lineno or (sa.end_lineno or sa.lineno) >= sb.lineno:
            continue
        ra = pf.line_span(sa.lineno, sa.end_lineno or sa.lineno)
        rb = pf.line_span(sb.lineno, sb.end_lineno or sb.lineno)
        ta, tb = pf.text[ra[0] : ra[1]], pf.text[rb[0] : rb[1]]
        if not ta.endswith("\n") or not tb.endswith("\n"):
            continue
        new = apply_edits(pf.text, [(ra[0], ra[1], tb), (rb[0], rb[1], ta)])
        if new is None or not parses(pf.path, new):
            continue
        return Mutant(
            str(sau["sau_id"]),
            str(sau["dimension"]),
            "swap",
            pf.path,
            sa.lineno,
            f"swapped '{steps[i].text[:40]}' ({pf.path}:{sa.lineno}) and "
            f"'{steps[i + 1].text[:40]}' ({pf.path}:{sb.lineno})",
            {pf.path: new},
        )
    return None
