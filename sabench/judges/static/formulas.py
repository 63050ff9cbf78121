"""D2 formulas: a backticked formula is compared with code statements as multisets of normalised
operands and operators."""

from __future__ import annotations

import ast
import contextlib
import copy
import math
import re
import textwrap
from collections import Counter, defaultdict
from typing import TYPE_CHECKING

from sabench.index import CODE, Function, squash, text_terms
from sabench.index.dataflow import walk
from sabench.judges.static.claims import Claim, equation_tree
from sabench.judges.static.evidence import Window
from sabench.judges.static.outcome import Outcome
from sabench.judges.static.params import GENERIC, RULES
from sabench.values import words

if TYPE_CHECKING:
    from sabench.judges.static.rules import ClaimJudge

_MODULES = words(
    "np numpy torch math jnp jax scipy linalg F nn functional tf special stats random sp "
    "tensorflow keras K backend"
)
_FUNC_ALIASES = {
    "average": "mean",
    "amax": "max",
    "amin": "min",
    "absolute": "abs",
    "fabs": "abs",
    "nansum": "sum",
    "nanmean": "mean",
    "matmul": "@",
    "dot": "@",
    "mm": "@",
    "clamp": "clip",
    "sub": "-",
    "subtract": "-",
    "add": "+",
    "mul": "*",
    "multiply": "*",
    "div": "/",
    "divide": "/",
    "true_divide": "/",
    "power": "^",
    "pow": "^",
}


def judge_formulas(
    judge: ClaimJudge, claim: Claim, cov: float, ev: list[tuple[int, int, int]]
) -> Outcome | None:
    results = [_formula(judge, f) for f in claim.formulas]
    drifted = [r for r in results if r[0] == "drifted"]
    matched = [r for r in results if r[0] == "aligned"]
    evidence = [r[2] for r in results if r[2] is not None] + ev
    evidence = list(dict.fromkeys(evidence))[:4]
    if drifted:
        return Outcome(
            "drifted", 0.0, "implementation_mismatch", " ".join(r[1] for r in drifted), evidence
        )
    inert = [r for r in results if r[0] == "inert"]
    if inert and not matched:  # computed where nothing takes the result: written, not done
        return Outcome("placeholder", 0.0, "placeholder", " ".join(r[1] for r in inert), evidence)
    if matched:
        frac = len(matched) / len(results)
        return judge.by_support(
            0.6 * frac + 0.4 * cov,
            evidence,
            " ".join(r[1] for r in matched) if frac == 1 else "Formulas matched in part",
            verified=frac == 1,
        )
    return None


def _formula(judge: ClaimJudge, formula: str) -> tuple[str, str, tuple[int, int, int] | None]:
    target = formula_tokens(formula)
    names = Counter({k: v for k, v in target.items() if k.startswith("n:")})
    ops = Counter({k: v for k, v in target.items() if not k.startswith("n:")})
    if not names:
        return ("absent", "", None)
    n_names = sum(names.values())
    # candidate lines: code lines with at least half of the formula's operand names
    hits: Counter[tuple[int, int]] = Counter()
    for name in names:
        raw = name[2:]
        for site in _raw_sites(judge, raw):
            hits[site] += 1
    need = max(1, math.ceil(len(names) * 0.5))
    # the same computation in code whose result reaches nothing or that did not run
    inert: tuple[int, int] | None = None
    best: tuple[tuple[bool, float, float], float, float, tuple[int, int], Counter[str], str] | None
    best = None
    sites = [
        (site, formula_tokens(_statement(judge, *site)), "")
        for site, k in hits.items()
        if k >= need
    ]
    limit = 2 * sum(target.values())
    functions = {(f.file, f.start): f for s in hits if (f := judge.ctx.function_at(*s)) is not None}
    for fn in functions.values():
        for ln, exprs in stepwise_statements(judge, fn).items():
            for expr in exprs:
                toks = formula_tokens(expr)
                if (
                    sum(toks.values()) <= limit
                    and sum(min(c, toks[t]) for t, c in names.items()) >= need
                ):
                    # a formula written in steps, read as one expression
                    sites.append(((judge.ctx.fid_of[fn.file], ln), toks, expr))
    for (fid, ln), toks, stepwise in sites:
        if judge.index.files[fid].kind != CODE:
            continue
        toks = _named_constants_as_values(judge, toks, target)
        text = judge.index.is_text(fid, ln)
        if text and (inert is not None or judge.index.is_comment(fid, ln)):
            continue
        n_cont = sum(min(c, toks.get(t, 0)) for t, c in names.items()) / n_names
        o_total = sum(ops.values()) or 1
        o_cont = sum(min(c, toks.get(t, 0)) for t, c in ops.items()) / o_total
        if text:
            if n_cont >= 0.999 and o_cont >= 0.999:
                inert = (fid, ln)
            continue
        if n_cont < RULES["formula_names_min"]:
            continue
        key = (n_cont >= 0.999 and o_cont >= 0.999, n_cont + o_cont, n_cont)
        if best is None or key > best[0]:
            best = (key, n_cont, o_cont, (fid, ln), toks, stepwise)
    if (best is None or not best[0][0]) and inert is not None:
        fid, ln = inert
        why = (
            f"`{formula}` is computed at {judge.where(fid, ln)} only where its result reaches "
            "nothing the submission reports (a value nobody reads, a branch or function that "
            "does not run)."
        )
        return ("inert", why, judge.loc(fid, ln))
    if best is None or best[1] < RULES["formula_names_min"]:
        return ("absent", "", None)
    _, n_cont, o_cont, (fid, ln), toks, stepwise = best
    loc = judge.loc(fid, ln)
    code = f"`{judge.index.files[fid].lines[ln - 1].strip()[:100]}`"
    if stepwise:  # the line as written, and what it computes with its local names followed back
        code += f" (in steps: `{stepwise[:120]}`)"
    if n_cont >= 0.999 and o_cont >= 0.999:
        return ("aligned", f"`{formula}` matches {judge.where(fid, ln)}: {code}.", loc)
    if len(names) < 2 or o_cont < RULES["formula_ops_min"]:
        return ("absent", "", None)  # a mention of the operands, not the same computation
    lacking = [k.split(":", 1)[1] for k in (target - toks)]
    extra = [
        k.split(":", 1)[1]
        for k in (toks - target)
        if k.startswith("f:") and k[2:] not in ("float", "int", "array", "asarray", "item")
    ]
    diff = f"lacks {', '.join(lacking[:4])}" if lacking else ""
    if extra:
        diff += ("; " if diff else "") + f"has {', '.join(extra[:3])} instead"
    return (
        "drifted",
        f"`{formula}` differs from {judge.where(fid, ln)} {code}: {diff}.",
        loc,
    )


#: where a value is bound to a name: ``window = 5``, ``def f(window=5)``, ``f(window=5)``,
#: ``--window 5`` (argparse), ``window: 5`` (a config file)
_BINDINGS = frozenset({"assign", "default", "kwarg", "argparse", "key", "config"})


def bound_numbers(judge: ClaimJudge) -> dict[str, float]:
    """The names the submission binds to a number and to no other one (``window = 5``, or
    ``def f(window=WINDOW)`` with ``WINDOW = 5``); a name bound to two values (``window = 5``
    here, ``window = 7`` there) or to an expression is none. Read once a submission."""
    if judge.ctx.bound is None:
        raw: dict[str, set[str]] = defaultdict(set)
        for fact in judge.index.facts:
            if fact.kind in _BINDINGS:
                raw[fact.setting].add(fact.value.strip())

        def value(name: str, depth: int) -> float:
            found = set()
            for text in raw.get(name, ()):
                try:
                    found.add(float(text))
                except ValueError:  # another name (followed), else an expression
                    bound = text in raw and depth > 0 and text != name
                    found.add(value(text, depth - 1) if bound else math.nan)
            return found.pop() if len(found) == 1 else math.nan

        judge.ctx.bound = {name: v for name in raw if not math.isnan(v := value(name, _STEPS))}
    return judge.ctx.bound


def _named_constants_as_values(
    judge: ClaimJudge, toks: Counter[str], target: Counter[str]
) -> Counter[str]:
    """``toks`` with each operand the formula does not name, where the submission binds it to one
    number, read as that number: ``sum(y[t - window:t]) / window`` with ``window = 5`` computes
    the paper's ``sum(y[t-5:t]) / 5`` (the paper writes the value, the code names it); with
    ``window = 4`` it still differs, by the value."""
    bound = bound_numbers(judge)
    out = Counter(toks)
    for tok, count in toks.items():
        name = tok[2:]
        if tok.startswith("n:") and tok not in target and name in bound:
            del out[tok]
            out[f"c:{bound[name]:g}"] += count
    return out


#: a stated operation and the one a drift puts in its place: a sign flipped, a product for a
#: ratio and back, a product for a power
_INVERSE: dict[type, type] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.Pow: ast.Mult,
}
_OP_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "^"}

#: a binary operation by its operator and the names of its two operands
Operation = tuple[type, frozenset[str], frozenset[str]]


def _operand_keys(node: ast.AST) -> frozenset[str]:
    """An operand's names, whole (squashed: ``sigma_data`` -> ``sigmadata``) and by their terms;
    constants say nothing about which operand it is."""
    keys: set[str] = set()
    for n in walk(node):
        if isinstance(n, ast.Name | ast.Attribute):
            name = n.id if isinstance(n, ast.Name) else n.attr
            if name != "self":
                keys.add(squash(name))
                keys.update(t for t in text_terms(name) if len(t) >= 2 and t not in GENERIC)
    return frozenset(k for k in keys if len(k) >= 2)


def operations(tree: ast.AST) -> list[Operation]:
    """The arithmetic binary operations of an expression or code, with their operands' keys."""
    return [
        (type(n.op), _operand_keys(n.left), _operand_keys(n.right))
        for n in ast.walk(tree)
        if isinstance(n, ast.BinOp) and type(n.op) in _INVERSE
    ]


def _overlap(a: Operation, b: Operation) -> int:
    """How many operand terms two operations share, side by side (either way round for an
    operation that commutes); 0 unless both sides share one, or one side shares two."""
    _, al, ar = a
    _, bl, br = b
    pairs = [(len(al & bl), len(ar & br))]
    if a[0] in (ast.Add, ast.Mult) or b[0] in (ast.Add, ast.Mult):
        pairs.append((len(al & br), len(ar & bl)))
    return max((x + y if (x and y) or x + y >= 2 else 0) for x, y in pairs)


def function_tree(judge: ClaimJudge, fn: Function) -> ast.Module | None:
    """A function's code parsed on its own (its lines dedented), once a submission; None when it
    does not parse."""
    fid = judge.ctx.fid_of.get(fn.file)
    if fid is None:
        return None
    key = (fn.file, fn.start, fn.end)
    if key not in judge.ctx.function_trees:
        lines = judge.index.files[fid].lines[fn.start - 1 : fn.end]
        judge.ctx.function_trees[key] = None
        with contextlib.suppress(SyntaxError, ValueError, RecursionError):
            judge.ctx.function_trees[key] = ast.parse(textwrap.dedent("\n".join(lines)))
    return judge.ctx.function_trees[key]


#: how many assignments deep a name is followed back into the expression that reads it
_STEPS = 3


def stepwise_statements(judge: ClaimJudge, fn: Function) -> dict[int, list[str]]:
    """The expressions of a function's statements (a ``return``, an assignment's value) that read
    a local name, with each such name replaced by the value its last assignment before gave it, to
    ``_STEPS`` deep: ``residual = X @ w - y; return np.mean(residual ** 2)`` computes
    ``np.mean((X @ w - y) ** 2)``. A step whose result reaches nothing (text to the index: a dead
    store, a value zeroed or overwritten) is no step. By absolute line; read once a submission."""
    key = (fn.file, fn.start)
    if key in judge.ctx.stepwise:
        return judge.ctx.stepwise[key]
    out: dict[int, list[str]] = defaultdict(list)
    tree = None if fn.stub else function_tree(judge, fn)
    assigned: dict[str, list[tuple[int, ast.expr]]] = defaultdict(list)
    statements: list[tuple[int, ast.expr]] = []
    for node in ast.walk(tree) if tree is not None else ():
        if not isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.Return):
            continue
        if node.value is None:
            continue
        statements.append((node.lineno, node.value))
        targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        fid, line = judge.ctx.fid_of[fn.file], fn.start + node.lineno - 1
        if [type(x) for x in targets] == [ast.Name] and not judge.index.is_text(fid, line):
            assigned[targets[0].id].append((node.lineno, node.value))  # a step that is used
    for lineno, value in statements:
        # the parts of a tuple or list (``return w - lr * gw, b - lr * gb``) are each their own
        for part in value.elts if isinstance(value, ast.Tuple | ast.List) else [value]:
            with contextlib.suppress(RecursionError, ValueError):
                inlined = _inline(part, lineno, assigned, _STEPS)
                if inlined is not part:
                    out[fn.start + lineno - 1].append(ast.unparse(inlined))
    judge.ctx.stepwise[key] = out
    return out


def _inline(
    node: ast.expr, line: int, assigned: dict[str, list[tuple[int, ast.expr]]], depth: int
) -> ast.expr:
    """``node`` with the local names it reads replaced by their values before ``line``; the same
    object when nothing is replaced."""
    if depth == 0:
        return node

    class _Steps(ast.NodeTransformer):
        changed = False

        def visit_Name(self, name: ast.Name) -> ast.AST:
            before = [a for a in assigned.get(name.id, ()) if a[0] < line]
            if not isinstance(name.ctx, ast.Load) or not before:
                return name
            at, value = max(before, key=lambda a: a[0])
            self.changed = True
            return _inline(copy.deepcopy(value), at, assigned, depth - 1)

    steps = _Steps()
    new = steps.visit(copy.deepcopy(node))
    return new if steps.changed else node


def function_operations(judge: ClaimJudge, fn: Function) -> list[Operation]:
    """The arithmetic operations of a function's code, read once a submission."""
    key = (fn.file, fn.start)
    if key not in judge.operations_of:
        tree = function_tree(judge, fn)
        judge.operations_of[key] = operations(tree) if tree is not None else []
    return judge.operations_of[key]


#: the operators compared at the top of a defining expression (``**`` is also written as a
#: product, so it is left out)
_TOP_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div)


def defining_expressions(judge: ClaimJudge, name: str) -> list[tuple[ast.expr, int, int]]:
    """Where the code computes ``name``: the value of each assignment to it (``c_skip = ...``,
    ``c_skip_val = ...``) and the last ``return`` of each real function named so (``c_skip``,
    ``_c_skip``), with file id and line."""
    cache = judge.ctx.defining
    if name in cache:
        return cache[name]
    out: list[tuple[ast.expr, int, int]] = []
    target = re.compile(rf"_?{re.escape(name)}(?:_\w+)?", re.I)
    assign = re.compile(rf"(?<![\w.])_?{re.escape(name)}(?:_\w+)?\s*(?::[^=]+)?=(?!=)", re.I)
    for fid in sorted(judge.ctx.code_fids):
        if not judge.index.files[fid].path.endswith(".py"):
            continue
        for ln, line in enumerate(judge.index.files[fid].lines, 1):
            if name.lower() not in line.lower() or not assign.search(code_text(line)):
                continue
            stmt: ast.stmt | None = None
            with contextlib.suppress(SyntaxError, ValueError, RecursionError, IndexError):
                stmt = ast.parse(_statement(judge, fid, ln).strip()).body[0]
            if isinstance(stmt, ast.Assign):
                targets = stmt.targets
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                targets = [stmt.target]
            else:
                continue  # a keyword argument, a comparison, a statement that does not parse
            if stmt.value is not None and any(
                isinstance(t, ast.Name) and target.fullmatch(t.id) for t in targets
            ):
                out.append((stmt.value, fid, ln))
    for key, fns in judge.ctx.by_name.items():
        if key.strip("_").lower() != name.lower():
            continue
        for fn in fns:
            tree = None if fn.stub else function_tree(judge, fn)
            returns = [
                (n.lineno, n.value)
                for n in (ast.walk(tree) if tree else ())
                if isinstance(n, ast.Return) and n.value is not None
            ]
            if returns:
                line, value = max(returns, key=lambda r: r[0])
                out.append((value, judge.ctx.fid_of[fn.file], fn.start + line - 1))
    cache[name] = out
    return out


#: calls that round a value, not compute it: ``floor(K / n)`` computes a quotient
_ROUNDING = frozenset({"int", "float", "floor", "ceil", "round", "trunc"})


def _top(node: ast.expr) -> tuple[type, ast.expr, ast.expr] | None:
    """The outermost ``+ - * /`` of an expression and its two operands, inside any rounding
    (``int(...)``, ``math.floor(...)``); a product with a reciprocal (``(1/t) * x``) is a quotient
    and a sum with a negation (``a + -b``) a difference (``**`` is also written as a product, so
    it is left out)."""
    while isinstance(node, ast.Call) and len(node.args) == 1:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if name not in _ROUNDING:
            break
        node = node.args[0]
    if not isinstance(node, ast.BinOp) or type(node.op) not in _TOP_OPS:
        return None
    op, left, right = type(node.op), node.left, node.right
    if op is ast.Mult:
        for a, b in ((left, right), (right, left)):
            if (
                isinstance(a, ast.BinOp)
                and isinstance(a.op, ast.Div)
                and isinstance(a.left, ast.Constant)
                and a.left.value == 1
            ):
                return (ast.Div, b, a.right)
    if op is ast.Add and isinstance(right, ast.UnaryOp) and isinstance(right.op, ast.USub):
        return (ast.Sub, left, right.operand)
    return (op, left, right)


def _kind(node: ast.expr) -> str:
    """What an operand is, for comparing the shapes of two formulas: a sum (``+ -``), a product
    (``* /``) or a value (a name, a number, a call, a power: ``sigma_d ** 2`` is often a
    variable of its own in code)."""
    if isinstance(node, ast.UnaryOp):
        return _kind(node.operand)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        return "sum"
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
        return "product"
    return "value"


def _same_operands(
    code: tuple[type, ast.expr, ast.expr], stated: tuple[type, ast.expr, ast.expr]
) -> bool:
    """Whether two outermost operations apply to the same operands: operands of the same kinds
    (``a**2 / (a**2 + b**2)`` and ``a**2 * (a**2 + b**2 + eps)``), sharing terms on each side."""
    kinds = {(_kind(code[1]), _kind(code[2]))}
    if code[0] in (ast.Add, ast.Mult) or stated[0] in (ast.Add, ast.Mult):
        kinds.add((_kind(code[2]), _kind(code[1])))
    as_keys = [(op, _operand_keys(a), _operand_keys(b)) for op, a, b in (code, stated)]
    return (_kind(stated[1]), _kind(stated[2])) in kinds and bool(_overlap(*as_keys))


def defined_inversion(judge: ClaimJudge, claim: Claim) -> tuple[str, tuple[int, int, int]] | None:
    """Where the code that computes a name the claim's equation defines (``c_skip(sigma) = a /
    b``) computes it with the inverse of the equation's outermost operator (``c_skip = a * b``),
    on operands of the same kinds sharing terms with the equation's, and nowhere with the
    operator itself. Only the outermost: operations inside an expression are matched by their
    operands' terms, which is too loose to tell a changed operator from another way of writing
    the formula."""
    for name, rhs in claim.defined:
        tree = equation_tree(rhs)
        body = tree.body if tree is not None else None
        if isinstance(body, ast.Tuple) and body.elts:
            body = body.elts[0]  # "floor(K / n), s0" read on past the formula's end
        stated = _top(body) if body is not None else None
        if stated is None:
            continue
        tops = [
            (top, fid, ln)
            for e, fid, ln in defining_expressions(judge, name)
            if (top := _top(e)) is not None
        ]
        if any(top[0] is stated[0] for top, _, _ in tops):
            continue
        for top, fid, ln in tops:
            if top[0] is _INVERSE[stated[0]] and _same_operands(top, stated):
                return _computed_otherwise(judge, name, top[0], stated[0], fid, ln)
    return None


def _computed_otherwise(
    judge: ClaimJudge, name: str, op: type, want: type, fid: int, ln: int
) -> tuple[str, tuple[int, int, int]]:
    where = f"{judge.index.files[fid].path}:{ln}"
    return (
        f"The code computes `{name}` with `{_OP_SYMBOL[op]}` ({where}) where the claim's "
        f"formula has `{_OP_SYMBOL[want]}`.",
        judge.loc(fid, ln),
    )


def window_functions(judge: ClaimJudge, wins: list[Window]) -> list[Function]:
    """The real functions holding the claim's best windows (those scoring
    ``equation_window_share`` of the best, at most ``equation_windows``), each once."""
    out: list[Function] = []
    for w in wins[: int(RULES["equation_windows"])]:
        if w.score < wins[0].score * RULES["equation_window_share"]:
            break
        fn = judge.ctx.function_at(w.fid, w.start)
        if fn is not None and not fn.stub and fn not in out:
            out.append(fn)
    return out


def inverted_operation(
    judge: ClaimJudge, claim: Claim, wins: list[Window]
) -> tuple[str, tuple[int, int, int]] | None:
    """Where the code computes an operation of the claim's prose equations with its inverse
    operator (``a / (a + b)`` computed as ``a * (a + b)``, ``x - y`` as ``x + y``): in the
    functions holding the claim's best evidence windows, an operation whose operands share terms
    with a stated one's and whose operator is that one's inverse, while no operation there
    computes the stated one with its own operator (the windows scoring ``equation_window_share`` of
    the best, at most ``equation_windows``). Prose formulas are matched by the terms of
    their operands, not their symbols, so only this confusion is told from another notation: each
    stated operation is compared with the code operation sharing most operand terms with it."""
    defined = defined_inversion(judge, claim)
    if defined is not None:
        return defined
    trees = [t for t in map(equation_tree, claim.equations) if t is not None]
    stated = [op for tree in trees for op in operations(tree)]
    if not stated:
        return None
    code = [
        (op, fn) for fn in window_functions(judge, wins) for op in function_operations(judge, fn)
    ]
    for want in stated:
        scored = [(_overlap(c, want), i) for i, (c, _) in enumerate(code)]
        best = max(scored, default=(0, -1))
        if best[0] == 0:
            continue
        c, fn = code[best[1]]
        if c[0] is _INVERSE[want[0]] and not any(
            k == best[0] and code[i][0][0] is want[0] for k, i in scored
        ):
            fid = judge.ctx.fid_of[fn.file]
            return (
                f"`{fn.qualname}` ({fn.file}:{fn.start}) computes with `{_OP_SYMBOL[c[0]]}` what "
                f"the claim's formula computes with `{_OP_SYMBOL[want[0]]}`.",
                judge.loc(fid, fn.start, fn.end),
            )
    return None


#: a product's factors: (what it is, on which side of the fraction): keys of its names, or the
#: constant's value
Factor = tuple[frozenset[str] | float, bool]


def _factors(node: ast.expr, over: bool = False) -> list[tuple[ast.expr, bool]]:
    """The factors of a chain of ``*`` and ``/`` with their side (True: divides), ``a / (b * c)``
    as a over b and c; a sign is no factor."""
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _factors(node.left, over) + _factors(node.right, over)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return _factors(node.left, over) + _factors(node.right, not over)
    return [(node, over)]


def _chains(tree: ast.AST) -> list[list[Factor]]:
    """Every maximal chain of ``*`` and ``/`` in an expression or code, as factors (constants by
    value, other factors by their names' keys; factors with neither left out)."""
    out = []
    inner: set[int] = set()
    for n in ast.walk(tree):
        if id(n) in inner or not (
            isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult | ast.Div)
        ):
            continue
        for sub in ast.walk(n):
            inner.add(id(sub))
        chain: list[Factor] = []
        for f, over in _factors(n):
            if isinstance(f, ast.Constant) and isinstance(f.value, int | float):
                chain.append((float(f.value), over))
            elif keys := _operand_keys(f):
                chain.append((keys, over))
            # a factor's own products are chains of their own
            for sub in ast.walk(f):
                inner.discard(id(sub))
        if len(chain) >= 2:
            out.append(chain)
    return out


def _same_factor(a: frozenset[str] | float, b: frozenset[str] | float) -> bool:
    """The same constant, or operands sharing two name keys (or their only one)."""
    if isinstance(a, float) or isinstance(b, float):
        return a == b
    return len(a & b) >= 2 or (a == b and bool(a))


def _chain_match(code: list[Factor], stated: list[Factor]) -> tuple[int, int]:
    """(factors on the stated side, factors on the other side) of the code chain's factors that
    match the stated chain's (each matched once)."""
    same = other = 0
    used: set[int] = set()
    for f, over in stated:
        for i, (g, g_over) in enumerate(code):
            if i not in used and _same_factor(f, g):
                used.add(i)
                if over == g_over:
                    same += 1
                else:
                    other += 1
                break
    return same, other


def inverted_factor(
    judge: ClaimJudge, claim: Claim, wins: list[Window]
) -> tuple[str, tuple[int, int, int]] | None:
    """Where a product of the claim's equation is computed with a factor moved across the
    fraction (``0.5 * (1 + cos(...))`` computed as ``0.5 / (1 + cos(...))``): a code chain of
    ``*`` and ``/`` in the functions of the claim's best windows sharing at least two factors with
    a stated one, some on the other side, while no chain sharing as many has them all on theirs.
    Chains are compared whole, so a product the code groups otherwise than the equation
    (``0.5 * (peak - min) * (1 + cos(...))`` computed as ``0.5 * (1 + cos(...))`` times the
    range) still meets its factors, which :func:`inverted_operation`'s operations do not."""
    trees = [t for t in map(equation_tree, claim.equations) if t is not None]
    stated = [c for tree in trees for c in _chains(tree)]
    if not stated:
        return None
    code = [
        (c, fn)
        for fn in window_functions(judge, wins)
        if (tree := function_tree(judge, fn)) is not None
        for c in _chains(tree)
    ]
    for want in stated:
        scored = [(_chain_match(c, want), fn) for c, fn in code]
        scored = [(s, o, fn) for (s, o), fn in scored if s + o >= 2]
        if not scored:
            continue
        best = max(s + o for s, o, _ in scored)
        top = [(s, o, fn) for s, o, fn in scored if s + o == best]
        if any(o == 0 for _, o, _ in top):
            continue
        _, _, fn = top[0]
        fid = judge.ctx.fid_of[fn.file]
        return (
            f"`{fn.qualname}` ({fn.file}:{fn.start}) divides by what the claim's formula "
            "multiplies by, or the reverse.",
            judge.loc(fid, fn.start, fn.end),
        )
    return None


def _raw_sites(judge: ClaimJudge, raw: str) -> list[tuple[int, int]]:
    """Where a raw chunk occurs, without lines addressed to the judge (never evidence)."""
    return [s for s in judge.index.chunk_sites.get(raw, []) if s not in judge.index.directed]


def _statement(judge: ClaimJudge, fid: int, ln: int) -> str:
    lines = judge.index.files[fid].lines
    text = lines[ln - 1]
    depth = text.count("(") + text.count("[") - text.count(")") - text.count("]")
    j = ln
    while depth > 0 and j < len(lines) and j < ln + 6:
        nxt = lines[j]
        text += " " + nxt.strip()
        depth += nxt.count("(") + nxt.count("[") - nxt.count(")") - nxt.count("]")
        j += 1
    return code_text(text)


def code_text(line: str) -> str:
    """A line without its string literals and comment: a formula or step name in a string is text."""
    return _STRING_RE.sub('""', line).split("#", 1)[0]


_STRING_RE = re.compile(r"""[rbfuRBFU]{0,2}("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')""")

_FTOK_RE = re.compile(
    r"\*\*|//|==|!=|<=|>=|[A-Za-z_][\w]*(?:\s*\.\s*[A-Za-z_]\w*)*|\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+"
    r"|[-+*/@^%<>=()\[\],:|&~√Σ∑]"
)
_UNICODE_OPS = str.maketrans({"−": "-", "×": "*", "·": "*", "⋅": "*", "∗": "*", "÷": "/"})


def formula_tokens(text: str) -> Counter[str]:
    """Operands (``n:``), functions (``f:``), operators (``o:``) and constants (``c:``) of an
    expression, normalised: module prefixes dropped, methods as functions, ``**`` as ``^``."""
    text = text.translate(_UNICODE_OPS).replace("²", "**2").replace("√", "sqrt")
    # keep only the right-hand side of an assignment
    m = re.match(r"^\s*[\w.\[\], ]+?\s*(?<![=!<>])=(?!=)\s*(.+)$", text)
    if m:
        text = m.group(1)
    toks = _FTOK_RE.findall(text)
    out: Counter[str] = Counter()
    for i, tok in enumerate(toks):
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        if re.match(r"[A-Za-z_]", tok):
            parts = [p.strip() for p in tok.split(".")]
            while len(parts) > 1 and parts[0] in _MODULES:
                parts = parts[1:]
            if nxt == "(":
                *objs, fname = parts
                fname = _FUNC_ALIASES.get(fname, fname)
                for o in objs:
                    out[f"n:{o}"] += 1
                if fname in ("^", "@", "+", "-", "*", "/"):
                    out[f"o:{fname}"] += 1
                elif fname == "square":
                    out["o:^"] += 1
                    out["c:2"] += 1
                elif fname not in ("float", "int", "array", "asarray", "tensor", "item", "np"):
                    out[f"f:{fname}"] += 1
            else:
                for p in parts:
                    if p in ("sum", "mean", "T"):
                        out[f"n:{p}" if p == "T" else f"f:{p}"] += 1
                    elif p not in _MODULES:
                        out[f"n:{p}"] += 1
        elif re.match(r"[\d.]", tok):
            with contextlib.suppress(ValueError):
                out[f"c:{float(tok):g}"] += 1
        elif tok in ("(", ")", ",", ":", "[", "]"):
            continue
        else:
            out[f"o:{'^' if tok == '**' else tok}"] += 1
    # keyword arguments (``axis=0``) are not operators
    out.pop("o:=", None)
    return out
