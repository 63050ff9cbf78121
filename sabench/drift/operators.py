"""D2, an operator changed: the outermost operator of the statement that computes the claim
(also how a claim's statement is found, which the stub drift reuses)."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from typing import Any

from sabench.drift.mutants import (
    SIMPLE_STMTS,
    Mutant,
    PyFile,
    Submission,
    apply_edits,
    parses,
)

_OPERATOR_SWAP: dict[type, tuple[type, str]] = {
    ast.Add: (ast.Sub, "-"),
    ast.Sub: (ast.Add, "+"),
    ast.Mult: (ast.Div, "/"),
    ast.Div: (ast.Mult, "*"),
    ast.FloorDiv: (ast.Mult, "*"),
    ast.Pow: (ast.Mult, "*"),
    ast.MatMult: (ast.Mult, "*"),
    ast.Mod: (ast.Mult, "*"),
}
_OP_TEXT = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Pow: "**",
    ast.MatMult: "@",
    ast.Mod: "%",
}
#: A prose claim is tied to a statement only when the statement (with its function's name) holds
#: this share of the claim's weighted terms, and at least two of them.
PROSE_TIE_SHARE = 0.3


def _statements(sub: Submission) -> Iterable[tuple[PyFile, ast.stmt]]:
    for path in sub.code_files:
        pf = sub.py[path]
        for node in ast.walk(pf.tree):
            if isinstance(node, SIMPLE_STMTS) and any(
                isinstance(n, ast.BinOp) for n in ast.walk(node)
            ):
                yield pf, node


def _prose_tie(
    sub: Submission,
    claim: Any,
    candidates: Iterable[tuple[PyFile, ast.stmt]],
) -> tuple[PyFile, ast.stmt] | None:
    """The statement (with its function's name) holding most of the claim's weighted terms."""
    from sabench.index import text_terms

    weights = claim.terms
    total = sum(weights.values()) or 1.0
    best: tuple[float, int, PyFile, ast.stmt] | None = None
    for pf, stmt in candidates:
        fn = pf.function_at(stmt.lineno)
        terms = set(text_terms(pf.segment(stmt)))
        if fn is not None:
            terms |= set(text_terms(fn.name))
        hit = [t for t in weights if t in terms]
        score = sum(weights[t] for t in hit) / total
        if len(hit) >= 2 and score >= PROSE_TIE_SHARE and (best is None or score > best[0]):
            best = (score, -stmt.lineno, pf, stmt)
    return (best[2], best[3]) if best else None


def _formula_tie(sub: Submission, formula: str) -> tuple[PyFile, ast.stmt] | None:
    """The statement whose operands and operators contain most of a backticked formula's."""
    from sabench.judges.static import formula_tokens

    target = formula_tokens(formula)
    names = {k: v for k, v in target.items() if k.startswith("n:")}
    ops = {k: v for k, v in target.items() if not k.startswith("n:")}
    if len(names) < 1:
        return None
    n_names, n_ops = sum(names.values()), sum(ops.values()) or 1
    best: tuple[tuple[float, float], PyFile, ast.stmt] | None = None
    for pf, stmt in _statements(sub):
        toks = formula_tokens(pf.segment(stmt).split("#", 1)[0])
        n_cont = sum(min(c, toks.get(t, 0)) for t, c in names.items()) / n_names
        o_cont = sum(min(c, toks.get(t, 0)) for t, c in ops.items()) / n_ops
        if n_cont < 0.75:
            continue
        key = (n_cont + o_cont, -abs(sum(toks.values()) - sum(target.values())))
        if best is None or key > best[0]:
            best = (key, pf, stmt)
    return (best[1], best[2]) if best else None


def locate_statement(
    sub: Submission, claim: Any, cited: Sequence[tuple[str, int, int]] = ()
) -> tuple[PyFile, ast.stmt] | None:
    """The statement that computes the claim: its backticked formula, else (prose) the statement
    with the claim's terms, among the lines another judge cited when there are any."""
    for formula in claim.formulas:
        found = _formula_tie(sub, formula)
        if found is not None:
            return found
    if cited:
        inside = [
            (pf, s)
            for pf, s in _statements(sub)
            if any(
                pf.path == f and s.lineno <= b and (s.end_lineno or s.lineno) >= a
                for f, a, b in cited
            )
        ]
        found = _prose_tie(sub, claim, inside)
        if found is not None:
            return found
    if not claim.formulas:
        return _prose_tie(sub, claim, _statements(sub))
    return None


def operator_mutant(
    sub: Submission, sau: dict[str, Any], claim: Any, cited: Sequence = ()
) -> Mutant | None:
    """D2: the outermost arithmetic operator of the claim's statement swapped."""
    found = locate_statement(sub, claim, cited)
    if found is None:
        return None
    pf, stmt = found
    for node in ast.walk(stmt):
        if not isinstance(node, ast.BinOp) or type(node.op) not in _OPERATOR_SWAP:
            continue
        gap_start = pf.span(node.left)[1]
        gap_end = pf.span(node.right)[0]
        gap = pf.text[gap_start:gap_end]
        symbol = _OP_TEXT[type(node.op)]
        pos = gap.find(symbol)
        while pos >= 0 and symbol in ("*", "/") and gap[pos : pos + 2] in ("**", "//"):
            pos = gap.find(symbol, pos + 2)
        if pos < 0:
            continue
        new_symbol = _OPERATOR_SWAP[type(node.op)][1]
        a = gap_start + pos
        new = apply_edits(pf.text, [(a, a + len(symbol), new_symbol)])
        if new is None or not parses(pf.path, new):
            continue
        line = pf.text.count("\n", 0, a) + 1
        return Mutant(
            str(sau["sau_id"]),
            str(sau["dimension"]),
            "operator",
            pf.path,
            line,
            f"`{symbol}` -> `{new_symbol}` in `{pf.segment(stmt).strip()[:80]}`",
            {pf.path: new},
        )
    return None
