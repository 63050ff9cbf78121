"""D2, an operator changed: the outermost operator of the statement that computes the claim
(also how a claim's statement is found, which the stub drift reuses)."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Sequence
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


def claim_operations(claim: Any) -> tuple[set[str], set[str], set[str]]:
    """What computation a claim states: its operators (from backticked formulas, inline math and
    the operation words of its prose: "sum", "ratio", "squared"...), the terms and symbols
    (lowercase) and the constants of its math (the claim's terms where it has no math), as
    (operators, terms, constants)."""
    from sabench.index import text_terms
    from sabench.judges.static import OPERATION_WORDS, formula_tokens, span_operations

    ops: set[str] = set()
    terms: set[str] = set()
    consts: set[str] = set()
    prose = re.sub(r"`[^`]*`", " ", claim.text)
    for math in [*claim.formulas, *claim.math]:
        toks = formula_tokens(math)
        ops |= {k[2:] for k in toks if k.startswith("o:") and k[2:] in "+-*/^@"}
        if math not in claim.formulas:
            ops |= span_operations(math)
        terms |= set(text_terms(math)) | {k[2:].lower() for k in toks if k.startswith("n:")}
        consts |= {k for k in toks if k.startswith("c:")}
    for op, pattern in OPERATION_WORDS.items():
        if pattern.search(prose):
            ops.add(op)
    return ops, terms or set(claim.terms), consts


def computes(pf: PyFile, node: ast.BinOp, stated: tuple[set[str], set[str], set[str]]) -> bool:
    """Whether a binary operation computes part of what the claim states: its operator is one
    the claim states (``@`` also where it multiplies) and its operands hold a term, a symbol or a
    constant of the claim's math."""
    from sabench.index import text_terms
    from sabench.judges.static import formula_tokens

    ops, terms, consts = stated
    sym = _OP_TEXT.get(type(node.op))
    if sym == "**":
        sym = "^"
    if sym == "//":
        sym = "/"
    if sym not in ops and not (sym == "@" and "*" in ops):
        return False
    operands = pf.segment(node.left) + " " + pf.segment(node.right)
    toks = formula_tokens(operands)
    names = set(text_terms(operands)) | {k[2:].lower() for k in toks if k.startswith("n:")}
    return bool(names & terms) or bool({k for k in toks if k.startswith("c:")} & consts)


#: which statements may hold the claim's computation (all, when None)
Keep = Callable[[PyFile, ast.stmt], bool] | None


def _statements(sub: Submission, keep: Keep = None) -> Iterable[tuple[PyFile, ast.stmt]]:
    for path in sub.code_files:
        pf = sub.py[path]
        for node in ast.walk(pf.tree):
            if (
                isinstance(node, SIMPLE_STMTS)
                and any(isinstance(n, ast.BinOp) for n in ast.walk(node))
                and (keep is None or keep(pf, node))
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


def _formula_tie(
    sub: Submission, formula: str, keep: Keep = None
) -> tuple[PyFile, ast.stmt] | None:
    """The statement whose operands and operators contain most of a backticked formula's."""
    from sabench.judges.static import formula_tokens

    target = formula_tokens(formula)
    names = {k: v for k, v in target.items() if k.startswith("n:")}
    ops = {k: v for k, v in target.items() if not k.startswith("n:")}
    if len(names) < 1:
        return None
    n_names, n_ops = sum(names.values()), sum(ops.values()) or 1
    best: tuple[tuple[float, float], PyFile, ast.stmt] | None = None
    for pf, stmt in _statements(sub, keep):
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
    sub: Submission, claim: Any, cited: Sequence[tuple[str, int, int]] = (), keep: Keep = None
) -> tuple[PyFile, ast.stmt] | None:
    """The statement that computes the claim: its backticked formula, else (prose) the statement
    with the claim's terms, among the lines another judge cited when there are any; ``keep``
    narrows the candidates."""
    for formula in claim.formulas:
        found = _formula_tie(sub, formula, keep)
        if found is not None:
            return found
    if cited:
        inside = [
            (pf, s)
            for pf, s in _statements(sub, keep)
            if any(
                pf.path == f and s.lineno <= b and (s.end_lineno or s.lineno) >= a
                for f, a, b in cited
            )
        ]
        found = _prose_tie(sub, claim, inside)
        if found is not None:
            return found
    if not claim.formulas:
        return _prose_tie(sub, claim, _statements(sub, keep))
    return None


def operator_mutant(
    sub: Submission, sau: dict[str, Any], claim: Any, cited: Sequence = ()
) -> Mutant | None:
    """D2: where the claim states a computation (a backticked formula, inline math, or prose
    naming the operation: "sum", "ratio", "squared"...), the outermost operator of the claim's
    statement that computes part of it (``computes``) swapped; none where the claim states no
    operation or its statement computes none of it."""
    stated = claim_operations(claim)
    if not stated[0]:
        return None

    def swappable(node: ast.AST, pf: PyFile) -> bool:
        return (
            isinstance(node, ast.BinOp)
            and type(node.op) in _OPERATOR_SWAP
            and computes(pf, node, stated)
        )

    found = locate_statement(
        sub, claim, cited, lambda pf, stmt: any(swappable(n, pf) for n in ast.walk(stmt))
    )
    if found is None:
        return None
    pf, stmt = found
    for node in ast.walk(stmt):
        if not isinstance(node, ast.BinOp) or not swappable(node, pf):
            continue
        swapped = swap_operator(pf, node)
        if swapped is None:
            continue
        new, line, symbol, new_symbol = swapped
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


def swap_operator(pf: PyFile, node: ast.BinOp) -> tuple[str, int, str, str] | None:
    """The file with one binary operation's operator swapped (``+``<->``-``, ``*``<->``/``,
    ``**``/``@`` -> ``*``), as (new text, line, operator, new operator); None for an operator
    with no swap or a file that no longer parses."""
    if type(node.op) not in _OPERATOR_SWAP:
        return None
    gap_start = pf.span(node.left)[1]
    gap_end = pf.span(node.right)[0]
    gap = pf.text[gap_start:gap_end]
    symbol = _OP_TEXT[type(node.op)]
    pos = gap.find(symbol)
    while pos >= 0 and symbol in ("*", "/") and gap[pos : pos + 2] in ("**", "//"):
        pos = gap.find(symbol, pos + 2)
    if pos < 0:
        return None
    new_symbol = _OPERATOR_SWAP[type(node.op)][1]
    a = gap_start + pos
    new = apply_edits(pf.text, [(a, a + len(symbol), new_symbol)])
    if new is None or not parses(pf.path, new, pf.text):
        return None
    return new, pf.text.count("\n", 0, a) + 1, symbol, new_symbol
