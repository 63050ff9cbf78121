"""Where a value written to a metrics file comes from: a backward dataflow over one Python file.

A metric is implemented only by code that runs and whose result reaches the output. This module
follows each value written to a metrics sink (``json.dump``, ``write``/``write_text``, ``print``
into a redirected stdout) back through assignments, subscripts, dict/list building, string
parsing and the returns of the file's own functions, and reports the values whose every source is
no computation: literals and literal arithmetic (``x * 0.0 + 0.597``: a term times a literal 0
contributes nothing), decoded blobs (base64, hex, zlib/gzip/bz2/lzma, pickle/marshal, ``json.loads``
or ``eval`` of a literal string, ``struct.unpack``), and text or JSON read from a file no code of
the submission computes (the paper, a README table, a checked-in file). Anything else is
computation: an unknown call, a parameter, a loop over a literal grid, a branch with one computed
arm. Uncertain means honest.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Container
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    json_numbers,
    number_items,
    parse_text,
    path_text,
    write_mode,
)

#: Provenance classes, weakest first: the strongest source names a combined value.
LITERAL, ARITH, PARSED, DECODED, READ = range(5)
MAX_DEPTH = 4  # calls into the file's own functions followed this deep
_BIN = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: pow,
}


@dataclass(frozen=True)
class Src:
    """A value that is no computation: where it comes from (``how``), its class, the line of its
    source, its concrete value when known, the entries of a dict built with constant keys, and
    whether it is a number (a value of unknown type is reported only then)."""

    how: str
    rank: int
    line: int
    const: Any = NONE
    items: dict[str, Src | None] | None = field(default=None, compare=False)
    num: bool = False


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


def _solid(v: Src | None) -> bool:
    """No part of the value is computed (a dict built with a computed entry is not)."""
    return v is not None and (v.items is None or all(_solid(i) for i in v.items.values()))


def _join(vals: list[Src | None]) -> Src | None:
    """Several possible values (branches, bindings, operands): no computation only if none is."""
    if not vals or any(v is None for v in vals):
        return None
    srcs: list[Src] = [v for v in vals if v is not None]
    top = max(srcs, key=lambda s: s.rank)
    if len(srcs) == 1:
        return top
    consts = [s.const for s in srcs]
    same = all(c is not NONE and is_num(c) and c == consts[0] for c in consts)
    num = all(s.num or is_num(s.const) for s in srcs)
    return Src(top.how, top.rank, top.line, consts[0] if same else NONE, None, num)


class _Scope:
    """The bindings of one function (or the module), each with the scope it is evaluated in."""

    def __init__(self, flow: _Flow, body: list[ast.stmt], parent: _Scope | None) -> None:
        self.flow, self.parent = flow, parent
        #: name -> bindings: ("value", node, scope) | ("elem", node, scope) | ("opaque",)
        self.binds: dict[str, list[tuple[Any, ...]]] = {}
        #: name -> subscript stores (constant key path or None, value, scope)
        self.stores: dict[str, list[tuple[tuple[str, ...] | None, ast.AST, _Scope]]] = {}
        self.memo: dict[str, Src | None] = {}
        for stmt in body:
            self._walk(stmt)

    def bind(self, name: str, entry: tuple[Any, ...]) -> None:
        self.binds.setdefault(name, []).append(entry)

    def _target(self, t: ast.AST, value: ast.AST | None, kind: str = "value") -> None:
        if isinstance(t, ast.Name):
            self.bind(t.id, (kind, value, self) if value is not None else ("opaque",))
        elif isinstance(t, ast.Subscript):
            keys: list[str] = []
            node: ast.AST = t
            while isinstance(node, ast.Subscript):
                k = node.slice
                keys.insert(0, k.value if isinstance(k, ast.Constant) else None)  # type: ignore[arg-type]
                node = node.value
            if isinstance(node, ast.Name) and value is not None:
                path = None if None in keys else tuple(str(k) for k in keys)
                self.stores.setdefault(node.id, []).append((path, value, self))
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
            for t in node.targets:
                self._target(t, node.value)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self._target(node.target, node.value)
        elif isinstance(node, ast.AugAssign):
            if isinstance(node.target, ast.Name):
                aug = ast.BinOp(left=ast.Name(node.target.id), op=node.op, right=node.value)
                self.bind(node.target.id, ("value", ast.copy_location(aug, node), self))
            else:
                self._target(node.target, None)
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            self._target(node.target, node.iter, "elem")
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
            if isinstance(base, ast.Name) and node.func.attr in (
                "update",
                "setdefault",
                "append",
                "extend",
                "insert",
                "__setitem__",
            ):
                self.bind(base.id, ("opaque",))  # changed by a call: its content is unknown
        for child in ast.iter_child_nodes(node):
            self._walk(child)

    def lookup(self, name: str) -> _Scope | None:
        scope: _Scope | None = self
        while scope is not None and name not in scope.binds and name not in scope.stores:
            scope = scope.parent
        return scope


class _Flow:
    def __init__(self, tree: ast.Module, ctx: Context) -> None:
        self.ctx = ctx
        self.aliases: dict[str, str] = {}
        self.functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef | None] = {}
        #: every call with the functions around it, outermost first
        self.calls: list[tuple[ast.Call, tuple[ast.AST, ...]]] = []
        self._collect(tree, ())
        self.aliases.setdefault("np", "numpy")
        self.module = _Scope(self, tree.body, None)
        self.scopes: dict[int, _Scope] = {}
        self.active: set[tuple[int, str]] = set()

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

    def scope_of(self, chain: tuple[ast.AST, ...]) -> _Scope:
        """The scope of code inside these functions (built once, when first needed)."""
        scope = self.module
        for fn in chain:
            got = self.scopes.get(id(fn))
            if got is None:
                body = [] if isinstance(fn, ast.Lambda) else fn.body  # type: ignore[attr-defined]
                got = _Scope(self, body, scope)
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

    def name(self, node: ast.Name, scope: _Scope, depth: int) -> Src | None:
        owner = scope.lookup(node.id)
        if owner is None:
            return None
        key = (id(owner), node.id)
        if node.id in owner.memo:
            return owner.memo[node.id]
        if key in self.active:
            return None  # a cycle (x = f(x)): computed
        self.active.add(key)
        try:
            vals = [self._binding(b, depth) for b in owner.binds.get(node.id, [])]
            base = _join(vals) if vals else None
            stores = owner.stores.get(node.id, [])
            if stores:
                base = self._stored(base, stores, depth)
        finally:
            self.active.discard(key)
        owner.memo[node.id] = base
        return base

    def _stored(self, base: Src | None, stores: list[Any], depth: int) -> Src | None:
        if any(path is None for path, _, _ in stores):
            return None  # a dynamic key may overwrite any entry
        items: dict[str, Src | None] = dict(base.items) if base and base.items else {}
        for path, value, scope in stores:
            node = items
            for k in path[:-1]:
                inner = node.get(k)
                if inner is None or inner.items is None:
                    inner = Src("a literal", LITERAL, 0, items={})
                    node[k] = inner
                node = inner.items  # type: ignore[assignment]
            node[path[-1]] = self.eval(value, scope, depth)
        return Src("a literal", LITERAL, 0, items=items)

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
    def eval(self, node: ast.AST | None, scope: _Scope, depth: int) -> Src | None:
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
            if any(k is None for k in node.keys):
                return None  # a ** spread may override
            items = {}
            for k, v in zip(node.keys, node.values, strict=True):
                if isinstance(k, ast.Constant) and isinstance(k.value, str):
                    items[k.value] = self.eval(v, scope, depth)
            return Src("a literal", LITERAL, line, items=items)
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            vals = [self.eval(e, scope, depth) for e in node.elts]
            got = _join(vals) if vals else Src("a literal", LITERAL, line, [])
            if got is None:
                return None
            consts = [v.const for v in vals if v is not None]
            known = all(c is not NONE for c in consts)
            return Src(got.how, got.rank, got.line, list(consts) if known else NONE)
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
        if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp):
            inner = _Scope(self, [], scope)
            for gen in node.generators:
                inner._target(gen.target, gen.iter, "elem")
            got = self.eval(node.elt, inner, depth)
            return None if got is None else Src(got.how, got.rank, got.line)
        if isinstance(node, ast.Attribute):
            return None  # an attribute of an object: computed somewhere
        return None

    def _binop(self, node: ast.BinOp, scope: _Scope, depth: int) -> Src | None:
        left, right = self.eval(node.left, scope, depth), self.eval(node.right, scope, depth)
        line = node.lineno
        if isinstance(node.op, ast.Mult):  # a term times a literal 0 contributes nothing
            for a, b in ((left, right), (right, left)):
                zero = a is not None and a.rank == LITERAL and is_num(a.const) and a.const == 0
                if zero and (b is None or b.rank <= ARITH):
                    return Src("literal arithmetic", ARITH, line, 0.0, None, True)
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

    def _subscript(self, node: ast.Subscript, scope: _Scope, depth: int) -> Src | None:
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
    def _call(self, node: ast.Call, scope: _Scope, depth: int) -> Src | None:
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
        if q == "dict" and not args:
            items = {k.arg: self.eval(k.value, scope, depth) for k in node.keywords if k.arg}
            if any(k.arg is None for k in node.keywords):
                return None
            return Src("a literal", LITERAL, line, items=items)
        if isinstance(node.func, ast.Name) and depth < MAX_DEPTH:
            fn = self.functions.get(node.func.id)
            owner = scope.lookup(node.func.id)
            if fn is not None and (owner is None or owner.binds.get(node.func.id) == [("opaque",)]):
                return self._returns(fn, node, scope, depth)
        return None  # an unknown call: computation

    def _decoded(
        self, node: ast.Call, q: str, attr: str, args: list[ast.expr], scope: _Scope, depth: int
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
        self, q: str, args: list[ast.expr], scope: _Scope, depth: int, line: int
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
        self, node: ast.Call, q: str, args: list[ast.expr], scope: _Scope, line: int
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

    def _loaded(self, q: str, arg: ast.expr, scope: _Scope, depth: int, line: int) -> Src | None:
        src = self.eval(arg, scope, depth)
        if src is None or src.rank != READ:
            return None
        name = src.how.rsplit(" ", 1)[-1]
        const = parse_text("json.loads", src.const) if q == "json.load" else NONE
        return Src(f"loaded from {name}, a file no code computes", READ, line, const)

    def _returns(
        self, fn: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call, scope: _Scope, depth: int
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
        inner = _Scope(self, fn.body, outer)
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
    flow = _Flow(ast.Module(body=[], type_ignores=[]), Context())
    got = flow.eval(tree.body, flow.module, 0)
    return got.const if got is not None else NONE


def _own_nodes(node: ast.AST) -> list[ast.AST]:
    """The nodes of a statement outside nested functions and classes."""
    out = [node]
    for child in ast.iter_child_nodes(node):
        if not isinstance(
            child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda
        ):
            out += _own_nodes(child)
    return out


# --- sinks ---------------------------------------------------------------------------------------


def _target(flow: _Flow, node: ast.AST | None, scope: _Scope) -> str:
    """Where a file object or path writes: "metrics", "other" or "unknown"."""
    text = path_text(node, scope)
    name = basename(text)
    if name is not None and name in flow.ctx.metrics:
        return "metrics"
    if name is not None:
        return "other"
    if text and any(text.endswith(m) for m in flow.ctx.metrics):
        return "metrics"
    return "unknown"


def _flatten(v: Src | None, prefix: str, text: bool) -> list[tuple[str, float, Src]]:
    if v is None:
        return []
    if v.items is not None:
        return [
            t
            for k, iv in v.items.items()
            for t in _flatten(iv, (f"{prefix}.{k}" if prefix else str(k)), False)
        ]
    c = v.const
    if isinstance(c, dict):
        return [(k, x, v) for k, x in number_items(c, prefix)]
    if is_num(c):
        return [(prefix or "*", float(c), v)]
    if text and isinstance(c, str | bytes):
        raw = c.decode("utf-8", "ignore") if isinstance(c, bytes) else c
        return [((f"{prefix}.{k}" if prefix else str(k)), x, v) for k, x in json_numbers(raw)]
    if c is NONE and (v.num or v.rank == DECODED or (not prefix and v.rank >= PARSED)):
        return [(prefix or "*", math.nan, v)]
    return []


def traced_writes(tree: ast.Module, ctx: Context) -> list[Traced]:
    """The values of one Python file's metrics writes whose every source is no computation."""
    flow = _Flow(tree, ctx)
    return [t for call, chain in flow.calls for t in _sink(flow, call, chain)]


def _sink(flow: _Flow, call: ast.Call, chain: tuple[ast.AST, ...]) -> list[Traced]:
    q = flow.qual(call.func)
    attr = q.rsplit(".", 1)[-1]
    if not (q in ("json.dump", "print", ".write", "sys.stdout.write") or attr.startswith("write_")):
        return []
    if q == "print" and not flow.ctx.stdout_metrics and not call.keywords:
        return []
    scope = flow.scope_of(chain)
    if q == "json.dump" and len(call.args) >= 2:
        where = _target(flow, _file_of(call.args[1], scope), scope)
        payload, text = call.args[0], False
    elif q.startswith(".") and attr in ("write_text", "write_bytes") and call.args:
        where = _target(flow, call.func.value, scope)  # type: ignore[attr-defined]
        payload, text = call.args[0], True
    elif attr == "write" and call.args and q in (".write", "sys.stdout.write"):
        owner = call.func.value  # type: ignore[attr-defined]
        if q == "sys.stdout.write":
            where = "stdout"
        else:
            where = _target(flow, _file_of(owner, scope), scope)
        payload, text = call.args[0], True
    elif q == "print" and call.args:
        dest = next((k.value for k in call.keywords if k.arg == "file"), None)
        where = "stdout" if dest is None else _target(flow, _file_of(dest, scope), scope)
        payload, text = call.args[0], True
    else:
        return []
    if where == "stdout":
        where = "metrics" if flow.ctx.stdout_metrics else "other"
    if where == "other":
        return []
    v = flow.eval(payload, scope, 0)
    found = []
    for key, value, src in _flatten(v, "", text):
        if where == "unknown" and src.rank == READ:
            continue  # a file read echoed somewhere unknown: maybe a config copied, not a result
        found.append(Traced(key, value, src.line or call.lineno, src.how, src.rank))
    return found


def _file_of(node: ast.AST, scope: _Scope) -> ast.AST | None:
    """The path expression a file object was opened on (``with open(p, "w") as f``)."""
    if isinstance(node, ast.Name):
        owner = scope.lookup(node.id)
        binds = owner.binds.get(node.id, []) if owner else []
        if len(binds) == 1 and binds[0][0] == "value":
            return _file_of(binds[0][1], binds[0][2])
        return None
    if isinstance(node, ast.Call):
        return node
    return node


# --- files some code writes ----------------------------------------------------------------------

_READERS = {"open", "Path", "PurePath", "PosixPath", "print", "str", "len", "repr"}
_READ_METHODS = {"read_text", "read_bytes", "exists", "is_file", "is_dir", "resolve", "stat"}


def written_names(tree: ast.Module) -> set[str]:
    """Base names of the files a Python file may write: any path handed to a call that is not a
    known read (an unknown call may write it)."""
    out: set[str] = set()
    flow = _Flow(tree, Context())
    for node, chain in flow.calls:
        q = flow.qual(node.func)
        attr = q.rsplit(".", 1)[-1]
        reads = q in _READERS or q.startswith(("os.path.", "pathlib.")) or q in LOADERS
        reads = reads or q in ("numpy.loadtxt", "numpy.load", "numpy.genfromtxt", "glob.glob")
        reads = reads or q.startswith(("pandas.read_", ".read_"))
        if q == "open" and write_mode(node, 1):
            reads = False
        args = list(node.args) + [k.value for k in node.keywords]
        if q.startswith("."):
            owner = node.func.value  # type: ignore[attr-defined]
            if attr in _READ_METHODS or (attr == "open" and not write_mode(node, 0)):
                continue
            if attr.startswith(("write", "to_", "save", "touch", "mkdir", "open")):
                args.append(owner)
        if reads:
            continue
        scope = flow.scope_of(chain)
        for arg in args:
            name = basename(path_text(arg, scope))
            if name is not None and "." in name:
                out.add(name)
    return out
