"""Where a value written to a metrics file comes from: a backward dataflow over one Python file.

A metric is implemented only by code that runs and whose result reaches the output. This module
follows each value written to a metrics sink (``json.dump``, ``write``/``write_text``, ``print``
into a redirected stdout) back through assignments, subscripts, dict/list building, string
parsing, the changes that put a value in a container (``d.update(x)``, ``d |= x``,
``setdefault``, ``append``, ``{**a, **x}``, ``ChainMap``: an entry only ``x`` gives has ``x``'s
sources) and the returns of the file's own functions, and reports the values whose every source is
no computation: literals and literal arithmetic (``x * 0.0 + 0.597``: a term times a literal 0
contributes nothing), decoded blobs (base64, hex, zlib/gzip/bz2/lzma, pickle/marshal, ``json.loads``
or ``eval`` of a literal string, ``struct.unpack``), and text or JSON read from a file no code of
the submission computes (the paper, a README table, a checked-in file). Anything else is
computation: an unknown call, a parameter, a loop over a literal grid, a branch with one computed
arm. Uncertain means honest.
"""

from __future__ import annotations

import ast
from collections.abc import Container
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sabench.index.constants import OPERATORS, constant_value
from sabench.index.sources import (
    B64,
    CODEC_MODULES,
    DECODERS,
    DOC_EXT,
    KEEP,
    KEEP_METHODS,
    LOADERS,
    MAX_BLOB,
    NONE,
    NUMERIC,
    PARSERS,
    ROOTS,
    basename,
    decode,
    is_num,
    parse_text,
    path_text,
    write_mode,
)
from sabench.index.values import (
    ARITH,
    DECODED,
    LITERAL,
    PARSED,
    READ,
    Src,
    entries,
    extend,
    literal_src,
    merge,
    put,
    put_unknown,
    setdefault,
)
from sabench.index.values import join as _join
from sabench.index.values import solid as _solid

MAX_DEPTH = 4  # calls into the file's own functions followed this deep
_BIN = {**OPERATORS, ast.Pow: pow}


@dataclass(frozen=True)
class Traced:
    """One value written to a metrics sink from no computation (``key`` "*": the whole file)."""

    key: str
    value: float
    line: int
    how: str
    rank: int


@dataclass(frozen=True)
class Context:
    """What one file's scan knows of the submission: the metrics file names, the checked-in files,
    the file names some code may write, whether this file's stdout is redirected into a metrics
    file, and the submission root (to read a checked-in JSON file's values)."""

    metrics: tuple[str, ...] = ("results.json",)
    files: frozenset[str] = frozenset()
    written: Container[str] = frozenset()
    stdout_metrics: bool = False
    root: Path | None = None


class Scope:
    """The bindings of one function (or the module), each with the scope it is evaluated in."""

    def __init__(self, flow: Flow, body: list[ast.stmt], parent: Scope | None) -> None:
        self.flow, self.parent = flow, parent
        #: name -> bindings: ("value", node, scope) | ("elem", node, scope) | ("opaque",)
        self.binds: dict[str, list[tuple[Any, ...]]] = {}
        #: name -> its changes in order: ("set", key nodes, value), ("update", value),
        #: ("setdefault", key node, value), ("append" | "extend", value); each with its scope
        self.stores: dict[str, list[tuple[Any, ...]]] = {}
        self.copies: set[int] = set()  # ``d[k] = v`` of ``for k, v in x.items()``: an update
        self.memo: dict[str, Src | None] = {}
        for stmt in body:
            self._walk(stmt)

    def bind(self, name: str, entry: tuple[Any, ...]) -> None:
        self.binds.setdefault(name, []).append(entry)

    def change(self, name: str, *how: Any) -> None:
        self.stores.setdefault(name, []).append((*how, self))

    def _target(self, t: ast.AST, value: ast.AST | None, kind: str = "value") -> None:
        if isinstance(t, ast.Name):
            self.bind(t.id, (kind, value, self) if value is not None else ("opaque",))
        elif isinstance(t, ast.Subscript):
            keys: list[ast.expr] = []
            node: ast.AST = t
            while isinstance(node, ast.Subscript):
                keys.insert(0, node.slice)
                node = node.value
            if isinstance(node, ast.Name) and value is not None:
                self.change(node.id, "set", tuple(keys), value)
        elif isinstance(t, ast.Tuple | ast.List):
            same = isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(t.elts)
            for i, sub in enumerate(t.elts):
                if same and kind == "value" and not isinstance(sub, ast.Starred):
                    self._target(sub, value.elts[i])  # type: ignore[union-attr]
                else:
                    self._target(sub, value, "elem" if value is not None else kind)
        elif isinstance(t, ast.Starred):
            self._target(t.value, None)

    def _walk(self, node: ast.AST) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            if not isinstance(node, ast.Lambda):
                self.bind(node.name, ("opaque",))
            return
        if isinstance(node, ast.Assign):
            for t in node.targets if id(node) not in self.copies else ():
                self._target(t, node.value)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self._target(node.target, node.value)
        elif isinstance(node, ast.AugAssign):
            if isinstance(node.target, ast.Name) and isinstance(node.op, ast.BitOr):
                self.change(node.target.id, "update", node.value)  # d |= x
            elif isinstance(node.target, ast.Name):
                aug = ast.BinOp(left=ast.Name(node.target.id), op=node.op, right=node.value)
                self.bind(node.target.id, ("value", ast.copy_location(aug, node), self))
            else:
                self._target(node.target, None)
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            self._target(node.target, node.iter, "elem")
            if isinstance(node, ast.For):
                self._copy_loop(node)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            self._target(node.optional_vars, node.context_expr)
        elif isinstance(node, ast.NamedExpr):
            self._target(node.target, node.value)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            for n in node.names:
                self.bind(n, ("opaque",))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for a in node.names:
                self.bind((a.asname or a.name).split(".")[0], ("opaque",))
        elif isinstance(node, ast.ExceptHandler) and node.name:
            self.bind(node.name, ("opaque",))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            base = node.func.value
            if isinstance(base, ast.Name):
                self._mutation(base.id, node.func.attr, node)
        for child in ast.iter_child_nodes(node):
            self._walk(child)

    def _mutation(self, name: str, attr: str, call: ast.Call) -> None:
        """A container changed by a call merges what the call puts in it."""
        args, kws = call.args, call.keywords
        if any(isinstance(a, ast.Starred) for a in args):
            if attr in ("update", "setdefault", "append", "extend", "insert", "__setitem__"):
                self.bind(name, ("opaque",))
            return
        if attr == "update" and len(args) <= 1:
            for a in args:
                self.change(name, "update", a)
            for k in kws:
                if k.arg is None:
                    self.change(name, "update", k.value)
                else:
                    self.change(name, "set", (ast.Constant(k.arg),), k.value)
        elif attr == "setdefault" and 1 <= len(args) <= 2:
            self.change(name, "setdefault", args[0], args[1] if len(args) > 1 else None)
        elif attr == "__setitem__" and len(args) == 2:
            self.change(name, "set", (args[0],), args[1])
        elif attr in ("append", "extend") and len(args) == 1:
            self.change(name, attr, args[0])
        elif attr == "insert" and len(args) == 2:
            self.change(name, "append", args[1])
        elif attr in ("update", "setdefault", "append", "extend", "insert", "__setitem__"):
            self.bind(name, ("opaque",))  # changed in a way not followed: its content is unknown

    def _copy_loop(self, loop: ast.For) -> None:
        """``for k, v in x.items(): d[k] = v`` copies ``x`` into ``d``: ``d.update(x)``."""
        t, it = loop.target, loop.iter
        if not (isinstance(t, ast.Tuple) and len(t.elts) == 2 and isinstance(it, ast.Call)):
            return
        k, v = t.elts
        func = it.func
        if not (isinstance(func, ast.Attribute) and func.attr == "items" and not it.args):
            return
        for stmt in loop.body:
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(sub := stmt.targets[0], ast.Subscript)
                and isinstance(sub.value, ast.Name)
                and isinstance(k, ast.Name)
                and isinstance(v, ast.Name)
                and isinstance(sub.slice, ast.Name)
                and sub.slice.id == k.id
                and isinstance(stmt.value, ast.Name)
                and stmt.value.id == v.id
            ):
                self.copies.add(id(stmt))
                self.change(sub.value.id, "update", func.value)

    def lookup(self, name: str) -> Scope | None:
        scope: Scope | None = self
        while scope is not None and name not in scope.binds and name not in scope.stores:
            scope = scope.parent
        return scope


class Flow:
    def __init__(self, tree: ast.Module, ctx: Context) -> None:
        self.ctx = ctx
        self.aliases: dict[str, str] = {}
        self.functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef | None] = {}
        #: every call with the functions around it, outermost first
        self.calls: list[tuple[ast.Call, tuple[ast.AST, ...]]] = []
        self._collect(tree, ())
        self.aliases.setdefault("np", "numpy")
        self.module = Scope(self, tree.body, None)
        self.scopes: dict[int, Scope] = {}
        self.active: set[tuple[int, str]] = set()
        self.hits: list[tuple[int, str]] = []  # names a cycle came back to
        self.assumed: dict[tuple[int, str], Src | None] = {}

    def _collect(self, node: ast.AST, chain: tuple[ast.AST, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                for a in child.names:
                    root = a.name.split(".")[0]
                    self.aliases[a.asname or root] = a.name if a.asname else root
            elif isinstance(child, ast.ImportFrom) and child.module:
                for a in child.names:
                    self.aliases[a.asname or a.name] = f"{child.module}.{a.name}"
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                if not isinstance(child, ast.Lambda):
                    dup = child.name in self.functions
                    self.functions[child.name] = None if dup else child
                self._collect(child, (*chain, child))
                continue
            elif isinstance(child, ast.Call):
                self.calls.append((child, chain))
            self._collect(child, chain)

    def scope_of(self, chain: tuple[ast.AST, ...]) -> Scope:
        """The scope of code inside these functions (built once, when first needed)."""
        scope = self.module
        for fn in chain:
            got = self.scopes.get(id(fn))
            if got is None:
                body = [] if isinstance(fn, ast.Lambda) else fn.body  # type: ignore[attr-defined]
                got = Scope(self, body, scope)
                a = fn.args  # type: ignore[attr-defined]
                for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg):
                    if p is not None:  # a parameter: whatever the caller computed
                        got.binds.setdefault(p.arg, []).insert(0, ("opaque",))
                self.scopes[id(fn)] = got
            scope = got
        return scope

    # --- names ---------------------------------------------------------------------------
    def qual(self, func: ast.AST) -> str:
        """``base64.b64decode``, ``numpy.float64``, ``open``; a method of a value: ``.attr``."""
        parts: list[str] = []
        node = func
        while isinstance(node, ast.Attribute):
            parts.insert(0, node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            if not parts:
                return self.aliases.get(node.id, node.id)
            if node.id in self.aliases or node.id in ROOTS:
                return ".".join([self.aliases.get(node.id, node.id), *parts])
        return "." + parts[-1] if parts else ""

    def name(self, node: ast.Name, scope: Scope, depth: int) -> Src | None:
        owner = scope.lookup(node.id)
        if owner is None:
            return None
        key = (id(owner), node.id)
        if node.id in owner.memo:
            return owner.memo[node.id]
        if key in self.active:
            self.hits.append(key)
            return self.assumed.get(key)  # a cycle (x = f(x)): computed, unless assumed
        at = len(self.hits)
        acyclic, base = self._value(owner, node.id, key, depth)
        if key in self.hits[at:] and acyclic is not None:
            # a value that flows back into itself (rows.append((h, cells)); for h, cells in rows)
            # is what its other sources give only when that assumption reproduces itself
            self.assumed[key] = acyclic
            _, again = self._value(owner, node.id, key, depth)
            del self.assumed[key]
            base = again if again == acyclic else None
        if not any(h in self.active for h in self.hits[at:]):
            owner.memo[node.id] = base  # not valid while a cycle it hit is being solved
            del self.hits[at:]
        return base

    def _value(
        self, owner: Scope, name: str, key: tuple[int, str], depth: int
    ) -> tuple[Src | None, Src | None]:
        """A name's value, and that of the bindings that do not flow back into it."""
        self.active.add(key)
        try:
            vals, acyclic = [], []
            for b in owner.binds.get(name, []):
                at = len(self.hits)
                vals.append(self._binding(b, depth))
                if key not in self.hits[at:]:
                    acyclic.append(vals[-1])
            base = _join(vals) if vals else None
            stores = owner.stores.get(name, [])
            if stores:
                base = self._stored(base, stores, depth)
        finally:
            self.active.discard(key)
        return (_join(acyclic) if acyclic and not stores else None), base

    def _stored(self, base: Src | None, stores: list[Any], depth: int) -> Src | None:
        """A value after its changes, in order."""
        cur = base
        for kind, *how, scope in stores:
            if kind == "set":
                paths = self._paths(how[0], scope, depth)
                if paths is None:
                    cur = put_unknown(cur)
                    continue
                value = self.eval(how[1], scope, depth)
                for path in paths:
                    cur = put(cur, path, value)
            elif kind == "update":
                cur = merge(cur, self.eval(how[0], scope, depth))
            elif kind == "setdefault":
                keys = self._paths((how[0],), scope, depth)
                key = keys[0][0] if keys and len(keys) == 1 else None
                cur = setdefault(cur, key, self.eval(how[1], scope, depth))
            else:
                cur = extend(cur, self.eval(how[0], scope, depth), kind == "append")
        return cur

    def _paths(
        self, keys: tuple[ast.expr, ...], scope: Scope, depth: int
    ) -> list[tuple[str, ...]] | None:
        """The key paths a subscript store may write: constants, or the names of a loop over a
        literal list of keys; None when a key is unknown."""
        paths: list[tuple[str, ...]] = [()]
        for k in keys:
            const = self.eval(k, scope, depth) if not isinstance(k, ast.Slice) else None
            if const is not None and type(const.const) in (str, int):
                names = [str(const.const)]  # a constant, or a name bound to one
            elif isinstance(k, ast.Name):
                owner = scope.lookup(k.id)
                binds = owner.binds.get(k.id, []) if owner else []
                if not binds or any(b[0] != "elem" for b in binds):
                    return None
                got = [self.eval(b[1], b[2], depth) for b in binds]
                consts = [g.const if g is not None else NONE for g in got]
                if not all(
                    isinstance(c, list) and all(isinstance(x, str) for x in c) for c in consts
                ):
                    return None
                names = sorted({x for c in consts for x in c})
            else:
                return None
            paths = [(*p, n) for p in paths for n in names]
            if len(paths) > 256:
                return None
        return paths

    def _binding(self, b: tuple[Any, ...], depth: int) -> Src | None:
        if b[0] == "opaque":
            return None
        got = self.eval(b[1], b[2], depth)
        if b[0] == "elem":
            return self._element(got)
        return got

    @staticmethod
    def _element(got: Src | None) -> Src | None:
        """An element of a value iterated: a literal grid is a search, not a source."""
        if got is None or got.rank <= ARITH:
            return None
        return Src(got.how, got.rank, got.line)

    # --- expressions ---------------------------------------------------------------------
    def eval(self, node: ast.AST | None, scope: Scope, depth: int) -> Src | None:
        if node is None:
            return None
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or node.value is None:
                return Src("a literal", LITERAL, line, node.value)
            v = node.value
            return Src("a literal", LITERAL, line, v, None, is_num(v))
        if isinstance(node, ast.Name):
            return self.name(node, scope, depth)
        if isinstance(node, ast.UnaryOp):
            v = self.eval(node.operand, scope, depth)
            if v is None or isinstance(node.op, ast.Not):
                return None
            c = v.const
            if is_num(c) and isinstance(node.op, ast.USub | ast.UAdd):
                c = -c if isinstance(node.op, ast.USub) else c
            return Src(v.how, v.rank, v.line, c, None, v.num or is_num(c))
        if isinstance(node, ast.BinOp):
            return self._binop(node, scope, depth)
        if isinstance(node, ast.IfExp):
            return _join([self.eval(node.body, scope, depth), self.eval(node.orelse, scope, depth)])
        if isinstance(node, ast.BoolOp):
            return _join([self.eval(v, scope, depth) for v in node.values])
        if isinstance(node, ast.Dict):
            got: Src | None = Src("a literal", LITERAL, line, items={})
            for k, v in zip(node.keys, node.values, strict=True):
                if k is None:  # {**a, **x}: x's entries replace a's
                    got = merge(got, self.eval(v, scope, depth))
                elif isinstance(key := self.eval(k, scope, depth), Src) and type(key.const) is str:
                    got = put(got, (key.const,), self.eval(v, scope, depth))
                elif got is not None:
                    got = replace(got, open=True)  # an entry of unknown name
            return None if got is None else replace(got, line=line)
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            vals = [self.eval(e, scope, depth) for e in node.elts]
            got = _join(vals) if vals else Src("a literal", LITERAL, line, [])
            if got is None:
                return None
            consts = [v.const for v in vals if v is not None]
            known = all(c is not NONE for c in consts)
            return Src(got.how, got.rank, got.line, list(consts) if known else NONE, None, got.num)
        if isinstance(node, ast.JoinedStr):
            parts = [
                self.eval(v.value if isinstance(v, ast.FormattedValue) else v, scope, depth)
                for v in node.values
            ]
            got = _join(parts) if parts else Src("a literal", LITERAL, line, "")
            if got is None:
                return None
            consts = [p.const for p in parts if p is not None]
            text = "".join(map(str, consts)) if all(c is not NONE for c in consts) else NONE
            return Src(got.how, got.rank, got.line, text)
        if isinstance(node, ast.Subscript):
            return self._subscript(node, scope, depth)
        if isinstance(node, ast.Call):
            return self._call(node, scope, depth)
        if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp | ast.DictComp):
            made = constant_value(node, lambda name: self._literal(name, scope, depth))
            if made is not NONE:  # a comprehension of literals is a literal written otherwise
                return literal_src(made, "a comprehension of literals", line)
        if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp):
            inner = Scope(self, [], scope)
            for gen in node.generators:
                inner._target(gen.target, gen.iter, "elem")
            got = self.eval(node.elt, inner, depth)
            return None if got is None else Src(got.how, got.rank, got.line)
        if isinstance(node, ast.Attribute):
            return None  # an attribute of an object: computed somewhere
        return None

    def _literal(self, name: str, scope: Scope, depth: int) -> Any:
        got = self.eval(ast.Name(name, ast.Load()), scope, depth)
        return got.const if got is not None and got.rank <= ARITH else NONE

    def _binop(self, node: ast.BinOp, scope: Scope, depth: int) -> Src | None:
        left, right = self.eval(node.left, scope, depth), self.eval(node.right, scope, depth)
        line = node.lineno
        if isinstance(node.op, ast.BitOr) and entries(right) is not None:
            return merge(left, right)  # a | x: x's entries replace a's
        if isinstance(node.op, ast.Mult):  # a term times a literal 0 contributes nothing
            for a, b in ((left, right), (right, left)):
                zero = a is not None and a.rank == LITERAL and is_num(a.const) and a.const == 0
                if zero and (b is None or b.rank <= ARITH):
                    return Src("literal arithmetic", ARITH, line, 0.0, None, True)
        if isinstance(node.op, ast.Add):  # json.dumps(d) + "\n": what is written is d
            for a, b in ((left, right), (right, left)):
                if a is not None and a.items is not None and b and isinstance(b.const, str):
                    return a
        if left is None or right is None:
            return None
        const = NONE
        op = _BIN.get(type(node.op))
        if op is not None and left.const is not NONE and right.const is not NONE:
            ok_pow = not isinstance(node.op, ast.Pow) or (
                is_num(right.const) and abs(right.const) <= 64
            )
            if ok_pow and (is_num(left.const) or is_num(right.const)):
                try:
                    const = op(left.const, right.const)
                except (ArithmeticError, TypeError, ValueError):
                    const = NONE
                if isinstance(const, str | list | bytes) and len(const) > MAX_BLOB:
                    const = NONE
            elif ok_pow and isinstance(node.op, ast.Add):
                try:
                    const = op(left.const, right.const)
                except TypeError:
                    const = NONE
        top = max((left, right), key=lambda s: s.rank)
        if top.rank <= ARITH:
            return Src("literal arithmetic", ARITH, line, const, None, is_num(const))
        return Src(top.how, top.rank, top.line, const, None, True)

    def _subscript(self, node: ast.Subscript, scope: Scope, depth: int) -> Src | None:
        base = self.eval(node.value, scope, depth)
        if base is None:
            return None
        key = self.eval(node.slice, scope, depth)
        if base.items is not None:
            if key is not None and isinstance(key.const, str):
                return base.items.get(key.const)
            return None
        if key is None:
            return None if base.rank <= ARITH else Src(base.how, base.rank, base.line)
        c = base.const
        if c is not NONE and key.const is not NONE and not isinstance(node.slice, ast.Slice):
            try:
                got = c[key.const]
                return Src(base.how, base.rank, base.line, got, None, is_num(got))
            except (KeyError, IndexError, TypeError):
                return None
        return Src(base.how, base.rank, base.line)

    # --- calls ---------------------------------------------------------------------------
    def _call(self, node: ast.Call, scope: Scope, depth: int) -> Src | None:
        q = self.qual(node.func)
        line = node.lineno
        args = [a for a in node.args if not isinstance(a, ast.Starred)]
        attr = q.rsplit(".", 1)[-1]
        if q in DECODERS or (attr in B64 and q.split(".")[0] in CODEC_MODULES):
            return self._decoded(node, q, attr, args, scope, depth)
        if q in PARSERS:
            return self._parsed(q, args, scope, depth, line)
        if q == "open" or (q.startswith(".") and attr in ("open", "read_text", "read_bytes")):
            return self._read(node, q, args, scope, line)
        if q in LOADERS and args:
            return self._loaded(q, args[0], scope, depth, line)
        if q.startswith(".") and attr == "get" and args:
            owner = self.eval(node.func.value, scope, depth)  # type: ignore[attr-defined]
            key = self.eval(args[0], scope, depth)
            if owner is not None and owner.items is not None:
                return owner.items.get(key.const) if key and isinstance(key.const, str) else None
        if q in KEEP or (q.startswith(".") and attr in KEEP_METHODS):
            parts = [self.eval(a, scope, depth) for a in args]
            parts += [self.eval(k.value, scope, depth) for k in node.keywords]
            if q.startswith("."):
                parts.insert(0, self.eval(node.func.value, scope, depth))  # type: ignore[attr-defined]
            if q == "json.dumps":
                return parts[0] if parts else None  # the text of a value is that value written
            if not all(_solid(p) for p in parts):
                return None
            got = _join(parts)
            if got is None:
                return None
            if attr == "decode" and parts and isinstance(parts[0], Src):
                c = parts[0].const
                c = bytes(c).decode("utf-8", "ignore") if isinstance(c, bytes | bytearray) else NONE
                return Src(got.how, got.rank, got.line, c)
            const = NONE
            if q in NUMERIC and parts and is_num(parts[0].const if parts[0] else None):
                const = float(parts[0].const) if q != "int" else int(parts[0].const)  # type: ignore[union-attr]
            elif q in NUMERIC and parts and isinstance(parts[0].const if parts[0] else 0, str):
                try:
                    const = float(parts[0].const)  # type: ignore[union-attr, arg-type]
                except ValueError:
                    return None
            if attr == "read" and q.startswith(".") and parts[0] is not None:
                const = parts[0].const  # the text of a file read
            return Src(got.how, got.rank, got.line, const, None, q in NUMERIC or is_num(const))
        if q in ("dict", "collections.ChainMap") and len(node.args) == len(args):
            return self._merged(node, q, args, scope, depth)
        if q in ("copy.copy", "copy.deepcopy") or (q == ".copy" and not args):
            arg = args[0] if args else node.func.value  # type: ignore[attr-defined]
            got = self.eval(arg, scope, depth)
            if got is not None and got.items is not None:
                return got  # a copy of a dict has its entries
        if isinstance(node.func, ast.Name) and depth < MAX_DEPTH:
            fn = self.functions.get(node.func.id)
            owner = scope.lookup(node.func.id)
            if fn is not None and (owner is None or owner.binds.get(node.func.id) == [("opaque",)]):
                return self._returns(fn, node, scope, depth)
        return None  # an unknown call: computation

    def _merged(
        self, node: ast.Call, q: str, args: list[ast.expr], scope: Scope, depth: int
    ) -> Src | None:
        """``dict(a, **x, k=v)``; ``ChainMap(a, x)``: the first mapping holding a key gives it."""
        got: Src | None = Src("a literal", LITERAL, node.lineno, items={})
        if (q == "dict" and len(args) > 1) or (q != "dict" and node.keywords):
            return None
        for a in args if q == "dict" else reversed(args):
            got = merge(got, self.eval(a, scope, depth))
        for k in node.keywords:
            value = self.eval(k.value, scope, depth)
            got = merge(got, value) if k.arg is None else put(got, (k.arg,), value)
        return got

    def _decoded(
        self, node: ast.Call, q: str, attr: str, args: list[ast.expr], scope: Scope, depth: int
    ) -> Src | None:
        if not args:
            return None
        data_ix = 1 if q in ("struct.unpack", "struct.unpack_from") else 0
        if len(args) <= data_ix:
            return None
        src = self.eval(args[data_ix], scope, depth)
        if src is None or not _solid(src):
            return None
        extra = [self.eval(a, scope, depth) for a in args[1:]]
        if q in ("struct.unpack", "struct.unpack_from"):
            fmt = self.eval(args[0], scope, depth)
            const = decode(q, attr, fmt.const if fmt else NONE, [src.const])
        else:
            const = decode(q, attr, src.const, [e.const if e else NONE for e in extra])
        if src.rank == READ:
            return Src(src.how, READ, src.line, const)
        enc = DECODERS.get(q, DECODERS.get(attr, "base64"))
        chain = src.how.removeprefix("decoded from a ").removesuffix(" blob")
        how = (
            f"decoded from a {chain}/{enc} blob"
            if src.rank == DECODED
            else (f"decoded from a {enc} blob")
        )
        return Src(how, DECODED, node.lineno, const, None, is_num(const))

    def _parsed(
        self, q: str, args: list[ast.expr], scope: Scope, depth: int, line: int
    ) -> Src | None:
        if not args:
            return None
        src = self.eval(args[0], scope, depth)
        if src is None or not _solid(src):
            return None
        const = parse_text(q, src.const) if src.const is not NONE else NONE
        if const is NONE and q == "eval" and isinstance(src.const, str):
            const = _eval_text(src.const)
        num = is_num(const)
        if src.rank == READ:
            name = src.how.rsplit(" ", 1)[-1]
            how = f"loaded from {name}, a file no code computes"
            return Src(how, READ, line, const, None, num)
        if src.rank >= DECODED:
            return Src(src.how, src.rank, src.line, const, None, num)
        return Src("parsed from a literal string", PARSED, line, const, None, num)

    def _read(
        self, node: ast.Call, q: str, args: list[ast.expr], scope: Scope, line: int
    ) -> Src | None:
        if q == "open":
            if not args or write_mode(node, 1):
                return None
            text = path_text(args[0], scope)
        else:
            if q.endswith(".open") and write_mode(node, 0):
                return None
            text = path_text(node.func.value, scope)  # type: ignore[attr-defined]
        name = self.uncomputed(text)
        if name is None:
            return None
        return Src(f"parsed from text read from {name}", READ, line, self.checked_in_text(name))

    def checked_in_text(self, name: str) -> Any:
        """The text of the one checked-in file of that name (small files only), or NONE."""
        root = self.ctx.root
        hits = [f for f in sorted(self.ctx.files) if f.rsplit("/", 1)[-1] == name]
        if root is None or len(hits) != 1:
            return NONE
        try:
            path = root / hits[0]
            return path.read_text(encoding="utf-8") if path.stat().st_size <= MAX_BLOB else NONE
        except (OSError, UnicodeDecodeError):
            return NONE

    def uncomputed(self, text: str | None) -> str | None:
        """The file a path names when no code of the submission computes it: the paper, a doc or
        a checked-in file that no code writes."""
        name = basename(text)
        if name is None or name in self.ctx.written or name in self.ctx.metrics:
            return None
        norm = text.replace("\\", "/") if text else ""
        checked = any(
            f == norm.lstrip("./") or f.rsplit("/", 1)[-1] == name for f in self.ctx.files
        )
        outside = norm.startswith("/paper/") or norm.startswith("/home/paper/")
        if (
            checked
            or outside
            or name.lower().endswith(DOC_EXT)
            or name.lower().startswith("readme")
        ):
            return name
        return None

    def _loaded(self, q: str, arg: ast.expr, scope: Scope, depth: int, line: int) -> Src | None:
        src = self.eval(arg, scope, depth)
        if src is None or src.rank != READ:
            return None
        name = src.how.rsplit(" ", 1)[-1]
        const = parse_text("json.loads", src.const) if q == "json.load" else NONE
        return Src(f"loaded from {name}, a file no code computes", READ, line, const)

    def _returns(
        self, fn: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call, scope: Scope, depth: int
    ) -> Src | None:
        key = (id(fn), "<call>")
        if key in self.active:
            return None
        body_nodes = [n for stmt in fn.body for n in _own_nodes(stmt)]
        if any(isinstance(n, ast.Yield | ast.YieldFrom) for n in body_nodes):
            return None
        returns = [n.value for n in body_nodes if isinstance(n, ast.Return)]
        if not returns or any(r is None for r in returns):
            return None
        outer = self.module
        inner = Scope(self, fn.body, outer)
        a = fn.args
        params = [p.arg for p in (*a.posonlyargs, *a.args)]
        defaults = dict(zip(params[len(params) - len(a.defaults) :], a.defaults, strict=True))
        for i, p in enumerate(params):
            given = call.args[i] if i < len(call.args) else None
            kw = next((k.value for k in call.keywords if k.arg == p), None)
            value = given if given is not None and not isinstance(given, ast.Starred) else kw
            if value is not None:
                inner.binds.setdefault(p, []).insert(0, ("value", value, scope))
            elif p in defaults:
                inner.binds.setdefault(p, []).insert(0, ("value", defaults[p], outer))
            else:
                inner.binds.setdefault(p, []).insert(0, ("opaque",))
        for p in (a.vararg, a.kwarg, *a.kwonlyargs):
            if p is not None:
                inner.binds.setdefault(p.arg, []).insert(0, ("opaque",))
        self.active.add(key)
        try:
            return _join([self.eval(r, inner, depth + 1) for r in returns])
        finally:
            self.active.discard(key)


def _eval_text(text: str) -> Any:
    """``eval`` of a literal expression (``"0.5 + 0.097"``), evaluated as this module would."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return NONE
    flow = Flow(ast.Module(body=[], type_ignores=[]), Context())
    got = flow.eval(tree.body, flow.module, 0)
    return got.const if got is not None else NONE


def _own_nodes(node: ast.AST) -> list[ast.AST]:
    """The nodes of a statement outside nested functions and classes."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
        return []  # a nested function's returns are its own
    return [node, *(n for child in ast.iter_child_nodes(node) for n in _own_nodes(child))]
