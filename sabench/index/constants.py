"""The value of an expression made of literals alone, comprehensions included, worked out from its
AST without running anything: ``{f"{a}.{m}": v for a, ms in {"x": {"acc": 0.844}}.items() for m,
v in ms.items()}`` is the literal ``{"x.acc": 0.844}`` written another way (docs/checks.md, "The
record and the results"). Only literals, the comprehension's own names, names the caller knows
to be literals, operators and a few pure builtins take part; anything else is no constant."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

from sabench.index.sources import NONE

#: Work done (nodes visited, elements made) before an expression is taken for no constant.
BUDGET = 20_000

#: The arithmetic operators worked out (``**`` left out: its results can be huge).
OPERATORS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_BUILTINS: dict[str, Callable[..., Any]] = {
    f.__name__: f
    for f in (abs, dict, enumerate, float, int, len, list, max, min, round, sorted, str, sum)
} | {
    "range": lambda *a: list(range(*a)),
    "zip": lambda *a: list(zip(*a, strict=False)),
    "tuple": tuple,
}
_METHODS = ("items", "keys", "values")


class _NotConstant(Exception):
    pass


def constant_value(node: ast.AST, known: Callable[[str], Any]) -> Any:
    """``node``'s value, or ``NONE`` when any part of it is not a literal; ``known(name)`` gives a
    name's literal value, or ``NONE``."""
    try:
        return _Eval(known).value(node, {})
    except (_NotConstant, ArithmeticError, TypeError, ValueError, LookupError, RecursionError):
        return NONE


class _Eval:
    def __init__(self, known: Callable[[str], Any]) -> None:
        self.known, self.left = known, BUDGET

    def spend(self, n: int = 1) -> None:
        self.left -= n
        if self.left < 0:
            raise _NotConstant

    def value(self, node: ast.AST, env: dict[str, Any]) -> Any:
        self.spend()
        v = self.value
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            got = env[node.id] if node.id in env else self.known(node.id)
            if got is NONE:
                raise _NotConstant
            return got
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            if any(isinstance(e, ast.Starred) for e in node.elts):
                raise _NotConstant
            items = [v(e, env) for e in node.elts]
            return tuple(items) if isinstance(node, ast.Tuple) else items
        if isinstance(node, ast.Dict) and None not in node.keys:
            return {v(k, env): v(x, env) for k, x in zip(node.keys, node.values, strict=True)}
        if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
            left, right = v(node.left, env), v(node.right, env)
            if isinstance(left, str | list | tuple) or isinstance(right, str | list | tuple):
                self.spend(len(left) if hasattr(left, "__len__") else 0)
                self.spend(len(right) if hasattr(right, "__len__") else 0)
                if isinstance(node.op, ast.Mult):
                    raise _NotConstant  # "ab" * n: no result is written so
            return OPERATORS[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            x = v(node.operand, env)
            return -x if isinstance(node.op, ast.USub) else +x
        if isinstance(node, ast.JoinedStr):
            return "".join(self._text(p, env) for p in node.values)
        if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice):
            return v(node.value, env)[v(node.slice, env)]
        if isinstance(node, ast.IfExp):
            return v(node.body, env) if v(node.test, env) else v(node.orelse, env)
        if isinstance(node, ast.Compare) and all(type(o) in _COMPARE for o in node.ops):
            left = v(node.left, env)
            for op, right_node in zip(node.ops, node.comparators, strict=True):
                right = v(right_node, env)
                if not _COMPARE[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.Call) and not node.keywords:
            return self._call(node, env)
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            out: list[Any] = []
            self._generate(node, node.generators, env, out)
            return dict(out) if isinstance(node, ast.DictComp) else out
        raise _NotConstant

    def _text(self, part: ast.AST, env: dict[str, Any]) -> str:
        if not isinstance(part, ast.FormattedValue):
            return str(self.value(part, env))
        x = self.value(part.value, env)
        x = {-1: x, 115: str(x), 114: repr(x), 97: ascii(x)}[part.conversion]
        spec = self.value(part.format_spec, env) if part.format_spec else ""
        return format(x, spec)

    def _call(self, node: ast.Call, env: dict[str, Any]) -> Any:
        args = [self.value(a, env) for a in node.args if not isinstance(a, ast.Starred)]
        if len(args) != len(node.args):
            raise _NotConstant
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _METHODS and not args:
            owner = self.value(func.value, env)
            if not isinstance(owner, dict):
                raise _NotConstant
            return list(getattr(owner, func.attr)())
        if isinstance(func, ast.Name) and func.id in _BUILTINS and func.id not in env:
            if func.id == "range" and len(range(*args)) > BUDGET:
                raise _NotConstant
            return _BUILTINS[func.id](*args)
        raise _NotConstant

    def _generate(
        self, node: ast.AST, gens: list[ast.comprehension], env: dict[str, Any], out: list[Any]
    ) -> None:
        if not gens:
            self.spend()
            if isinstance(node, ast.DictComp):
                out.append((self.value(node.key, env), self.value(node.value, env)))
            else:
                out.append(self.value(node.elt, env))  # type: ignore[attr-defined]
            return
        gen, rest = gens[0], gens[1:]
        for item in list(self.value(gen.iter, env)):
            inner = dict(env)
            _bind(gen.target, item, inner)
            if all(self.value(c, inner) for c in gen.ifs):
                self._generate(node, rest, inner, out)


def _bind(target: ast.AST, item: Any, env: dict[str, Any]) -> None:
    if isinstance(target, ast.Name):
        env[target.id] = item
    elif isinstance(target, ast.Tuple | ast.List) and len(target.elts) == len(item):
        for t, x in zip(target.elts, item, strict=True):
            _bind(t, x, env)
    else:
        raise _NotConstant
