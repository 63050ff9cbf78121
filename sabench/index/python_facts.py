"""Python facts: one pass over a module's AST for named values, functions, calls, docstrings."""

from __future__ import annotations

import ast
import contextlib
import re
from collections.abc import Iterator

from sabench.index.liveness import child_statements, inert_in_submission, statement_span
from sabench.index.model import CODE, CodeIndex, Definition, Fact, Function, SourceFile
from sabench.index.terms import leaf_terms
from sabench.values import parse_number, words

#: Decorators that register what they decorate (a CLI command, a route, a registry entry, a
#: compiled function): a framework runs it, no code reads its name.
_REGISTERS = re.compile(
    r"regist|command|route|app\b|cli|hook|callback|task|fixture|main|entry|fire|click|typer"
    r"|hydra|export|script|\.(get|post|put)$",
    re.I,
)
#: a string that may name a module: ``data``, ``esl.model``, ``src/data.py``
_MODULE_REF = re.compile(r"[A-Za-z_][\w.]*|[\w./-]+\.py")
PLACEHOLDER_RE = re.compile(r"\b(TODO|FIXME|XXX|placeholder|not implemented|stub)\b", re.I)


_WRAPPERS = words(
    "int float str Decimal Fraction tensor as_tensor array asarray float32 float64 int32 "
    "int64 Parameter full"
)


def _const_numbers(node: ast.AST | None) -> tuple[float, ...]:
    """Numbers a literal expression stands for (``1e-3``, ``-2``, ``2**10``, ``(0.9, 0.999)``)."""
    if node is None:
        return ()
    v = _const_eval(node)
    if isinstance(v, bool) or v is None:
        pass
    elif isinstance(v, int | float):
        return (float(v),)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        n = parse_number(node.value)
        return (n,) if n is not None else ()
    if isinstance(node, ast.Tuple | ast.List) and len(node.elts) <= 16:
        out: list[float] = []
        for e in node.elts:
            out.extend(_const_numbers(e))
        return tuple(out)
    if isinstance(node, ast.Call) and node.args and len(node.args) <= 2:
        # int(1e6), float("1e-4"), torch.tensor(0.5); not x.unsqueeze(0)
        fname = _dotted(node.func).rsplit(".", 1)[-1]
        if fname in _WRAPPERS:
            return _const_numbers(node.args[0])
    return ()


def _const_eval(node: ast.AST, depth: int = 0) -> float | int | None:
    if depth > 6:
        return None
    if isinstance(node, ast.Constant):
        v = node.value
        return v if isinstance(v, int | float) and not isinstance(v, bool) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        v = _const_eval(node.operand, depth + 1)
        if v is None:
            return None
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a = _const_eval(node.left, depth + 1)
        b = _const_eval(node.right, depth + 1)
        if a is None or b is None:
            return None
        try:
            if isinstance(node.op, ast.Mult):
                return a * b
            if isinstance(node.op, ast.Div):
                return a / b
            if isinstance(node.op, ast.Add):
                return a + b
            if isinstance(node.op, ast.Sub):
                return a - b
            if isinstance(node.op, ast.Pow) and abs(b) < 400:
                r = a**b
                return r if isinstance(r, int | float) else None
            if isinstance(node.op, ast.FloorDiv):
                return a // b
        except (ZeroDivisionError, OverflowError, ValueError):
            return None
    return None


def _dotted(node: ast.AST) -> str:
    """``self.model.lr`` for an attribute chain, ``foo`` for a name, '' otherwise."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif isinstance(node, ast.Call):
        inner = _dotted(node.func)
        if inner:
            parts.append(inner + "()")
    elif isinstance(node, ast.Subscript):
        inner = _dotted(node.value)
        if inner:
            parts.append(inner + "[]")
    else:
        return ""
    return ".".join(reversed(parts))


def _unconstructible(cls: ast.ClassDef) -> bool:
    """Whether a class's ``__init__`` raises ``NotImplementedError`` whatever it is given: no
    instance can be made, so none of its methods runs."""
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
            return any(_raises_unimplemented(s) for s in stmt.body)
    return False


def _raises_unimplemented(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.Raise):
        return False
    exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def _is_stub(fn: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> bool:
    body = list(fn.body)
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]
    if not body:
        return True
    trivial = True
    for stmt in body:
        if isinstance(stmt, ast.Pass):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        if (
            isinstance(stmt, ast.Return)
            and len(body) == 1
            and isinstance(stmt.value, ast.Constant)
            and (fn.args.args or fn.args.vararg or fn.args.kwonlyargs or fn.args.posonlyargs)
            and [a.arg for a in fn.args.args] not in (["self"], ["cls"])
        ):
            continue  # a function of its inputs that returns a constant ignores them
        if _raises_unimplemented(stmt):
            continue
        trivial = False
        break
    if trivial:
        return True
    # A body of one trivial return (or assignment + return) with a TODO/placeholder comment.
    if len(body) <= 2 and isinstance(body[-1], ast.Return):
        ret = body[-1].value
        simple = ret is None or isinstance(
            ret, ast.Constant | ast.Name | ast.Attribute | ast.Tuple | ast.List | ast.Dict
        )
        if simple:
            if isinstance(ret, ast.Tuple | ast.List | ast.Dict) and not all(
                isinstance(e, ast.Constant | ast.Name)
                for e in getattr(ret, "elts", None) or getattr(ret, "values", None) or []
            ):
                return False
            end = getattr(fn, "end_lineno", fn.lineno) or fn.lineno
            text = "\n".join(lines[fn.lineno - 1 : end])
            return bool(PLACEHOLDER_RE.search(text))
    return False


def _is_literal(node: ast.AST | None, depth: int = 0) -> bool:
    """A value written out as data (numbers, strings, lists of them): nothing computed."""
    if node is None or depth > 8:
        return False
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp):
        return _is_literal(node.operand, depth + 1)
    if isinstance(node, ast.BinOp):
        return _is_literal(node.left, depth + 1) and _is_literal(node.right, depth + 1)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return all(_is_literal(e, depth + 1) for e in node.elts)
    return False  # a dict is a registry or a config: its keys name things, kept as code


def _bound_names(target: ast.AST) -> list[str]:
    """Names an assignment binds (``x``, ``self.x`` -> ``x``); [] for subscripts and the like."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Attribute):
        return [target.attr]
    if isinstance(target, ast.Tuple | ast.List):
        out = []
        for e in target.elts:
            names = _bound_names(e)
            if not names:
                return []
            out += names
        return out
    return []


#: Calls whose first string argument reads a key (``cfg.get("lr")``, ``getattr(args, "lr")``).
_KEY_READERS = words("get getattr pop setdefault getint getfloat getboolean hasattr")

#: Calls that only show their arguments (``print``, ``logger.info``, a progress bar's postfix):
#: what they read is displayed, not used, and their lines are text.
_DISPLAY_CALLS = words(
    "print pprint debug info warning warn error exception critical set_postfix set_description"
)

#: Calls that format a value for showing (inside a print or a log line they compute nothing).
_FORMATTERS = words("str repr format float int round len join item tolist abs type")


def _callee(call: ast.Call) -> str:
    """The called name: ``info`` of ``logger.info(...)``, ``format`` of ``"{}".format(x)``."""
    func = call.func
    return func.attr if type(func) is ast.Attribute else func.id if type(func) is ast.Name else ""


def _shows(call: ast.Call) -> bool:
    """A print or log call whose arguments compute nothing (``print(evaluate(model))`` does)."""
    if _callee(call) not in _DISPLAY_CALLS:
        return False
    inner = (n for a in (*call.args, *call.keywords) for n in ast.walk(a))
    return not any(type(n) is ast.Call and _callee(n) not in _FORMATTERS for n in inner)


#: Nodes with nothing inside for the index (names, contexts, operators).
_LEAVES = frozenset(
    {ast.Name, ast.Load, ast.Store, ast.Del, ast.alias, ast.Pass, ast.Break, ast.Continue}
    | {c for c in vars(ast).values() if isinstance(c, type) and issubclass(c, ast.operator)}
    | {c for c in vars(ast).values() if isinstance(c, type) and issubclass(c, ast.cmpop)}
    | {c for c in vars(ast).values() if isinstance(c, type) and issubclass(c, ast.unaryop)}
    | {c for c in vars(ast).values() if isinstance(c, type) and issubclass(c, ast.boolop)}
    | {ast.Import, ast.ImportFrom}
)


class _PyVisitor:
    """One pass over a module's AST collecting facts, functions, calls and docstring lines."""

    def __init__(self, index: CodeIndex, sf: SourceFile) -> None:
        self.index = index
        self.sf = sf
        self.path = sf.path
        self.calls_stack: list[list[tuple[str, int]]] = []
        self.module_calls: list[tuple[str, int]] = []
        self.literals: list[tuple[float, int]] = []
        #: reads count only in code (a test that reads a constant does not make it used)
        self.reads: set[str] | None = set() if sf.kind == CODE else None
        #: the reads that are bare names (``train(...)``, not ``obj.train``): a function of the
        #: same module when it defines one
        self.bare: set[str] = set()
        self.fid = next(i for i in range(len(index.files) - 1, -1, -1) if index.files[i] is sf)
        #: the contexts that are class bodies (a public method runs through its object)
        self.classes: set[tuple[str, ...]] = set()
        #: the innermost definition being read (index in ``index.definitions``)
        self.scope: int | None = None
        #: the modules the current scope imports (dotted names, relative ones resolved)
        self.imports: set[str] = set()
        #: the current scope's calls with a literal module name or path (:attr:`Definition.loads`)
        self.loads: set[tuple[str, str]] = set()
        #: ids of the statements whose results reach nothing (:mod:`.liveness`): what they read
        #: is not used
        self.inert: set[int] = set()

    def fact(
        self,
        kind: str,
        name: str,
        value_node: ast.AST | None,
        line: int,
        context: tuple[str, ...] = (),
    ) -> None:
        numbers = _const_numbers(value_node)
        seg = _segment(self.sf.lines, value_node) if value_node is not None else ""
        terms = leaf_terms(name)
        if not terms:
            return
        self.index.facts.append(
            Fact(kind, name, seg[:120], numbers, self.path, line, terms, context)
        )

    def run(self, tree: ast.Module) -> None:
        self._docstring(tree)
        self.calls_stack.append(self.module_calls)
        for stmt in tree.body:
            if _is_main_guard(stmt):
                end = getattr(stmt, "end_lineno", stmt.lineno) or stmt.lineno
                self.index.main_blocks[self.path] = (stmt.lineno, end)
            self.visit(stmt, ())
        self.calls_stack.pop()
        self.index.module_calls[self.path] = self.module_calls
        if self.reads is not None:
            self.index.reads |= self.reads
            self.index.module_reads.append(
                (self.fid, self.reads, self.bare, self.imports, self.loads)
            )

    def _docstring(self, node: ast.AST) -> None:
        body = getattr(node, "body", None)
        if (
            body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            d = body[0]
            for ln in range(d.lineno, (d.end_lineno or d.lineno) + 1):
                if 0 < ln <= len(self.sf.comment):
                    self.sf.comment[ln - 1] = 1

    def visit(self, node: ast.AST, ctx: tuple[str, ...]) -> None:
        if self.reads is not None and id(node) in self.inert:
            reads, self.reads = self.reads, None  # computed, never used: no reads
            try:
                self.visit(node, ctx)
            finally:
                self.reads = reads
            return
        t = type(node)
        if t is ast.Name:
            if self.reads is not None and type(node.ctx) is not ast.Store:  # type: ignore[attr-defined]
                self.reads.add(node.id)  # type: ignore[attr-defined]
                self.bare.add(node.id)  # type: ignore[attr-defined]
            return
        if t is ast.ImportFrom or t is ast.Import:
            if self.reads is not None:
                self._declared(node, ())  # an import names code, it runs none
                self._import(node)  # type: ignore[arg-type]
            return
        if t in _LEAVES:
            return
        if self.reads is not None:
            self._reads(node, t)
        if t is ast.Constant:
            v = node.value  # type: ignore[attr-defined]
            if (t2 := type(v)) is int or t2 is float:
                self.literals.append((float(v), node.lineno))  # type: ignore[attr-defined]
            return
        if t is ast.FunctionDef or t is ast.AsyncFunctionDef:
            self._function(node, ctx)  # type: ignore[arg-type]
            return
        if t is ast.ClassDef:
            self._docstring(node)
            doc = ast.get_docstring(node)  # type: ignore[arg-type]
            if doc:
                self.index.class_docs[(self.path, ".".join((*ctx, node.name)))] = doc[:300]  # type: ignore[attr-defined]
            with self._definition(node, ctx):  # type: ignore[arg-type]
                for child in (*node.bases, *node.keywords, *node.decorator_list):  # type: ignore[attr-defined]
                    self.visit(child, ctx)
                self.classes.add((*ctx, node.name))  # type: ignore[attr-defined]
                for stmt in node.body:  # type: ignore[attr-defined]
                    self.visit(stmt, (*ctx, node.name))  # type: ignore[attr-defined]
            self.index.subclassed.update(_dotted(b).rsplit(".", 1)[-1] for b in node.bases)  # type: ignore[attr-defined]
            if _unconstructible(node):  # type: ignore[arg-type]
                self.index.unconstructible.append((self.path, ".".join((*ctx, node.name))))  # type: ignore[attr-defined]
            return
        if t is ast.UnaryOp and type(node.operand) is ast.Constant:  # type: ignore[attr-defined]
            v = node.operand.value  # type: ignore[attr-defined]
            if type(v) in (int, float):
                sign = -1.0 if type(node.op) is ast.USub else 1.0  # type: ignore[attr-defined]
                self.literals.append((sign * float(v), node.lineno))  # type: ignore[attr-defined]
            return
        if t is ast.Expr and (
            type(node.value) is ast.Constant  # type: ignore[attr-defined]
            or (type(node.value) is ast.Call and _shows(node.value))  # type: ignore[attr-defined]
        ):
            self._declared(node, ())  # a bare string, a print or a log line: text, not code
        if (t is ast.Assign or t is ast.AnnAssign) and _is_literal(node.value):  # type: ignore[attr-defined]
            targets = node.targets if t is ast.Assign else [node.target]  # type: ignore[attr-defined]
            names = [n for tg in targets for n in _bound_names(tg)]
            if names and all(_bound_names(tg) for tg in targets):
                self._declared(node, tuple(names))
        if t is ast.Assign:
            for target in node.targets:  # type: ignore[attr-defined]
                self._assign(target, node.value, node.lineno, ctx)  # type: ignore[attr-defined]
        elif t is ast.AnnAssign and node.value is not None:  # type: ignore[attr-defined]
            self._assign(node.target, node.value, node.lineno, ctx)  # type: ignore[attr-defined]
        elif t is ast.Call:
            self._call(node, ctx)  # type: ignore[arg-type]
            if self.reads is not None and _shows(node):  # type: ignore[arg-type]
                reads, self.reads = self.reads, None  # shown, not used: no reads
                try:
                    for child in (*node.args, *node.keywords):  # type: ignore[attr-defined]
                        self.visit(child, ctx)
                finally:
                    self.reads = reads
                return
        elif t is ast.Dict:
            # {"blobs-3": {"n_samples": 450}}: the outer key names the inner values.
            for k, v in zip(node.keys, node.values, strict=False):  # type: ignore[attr-defined]
                if k is not None:
                    self.visit(k, ctx)
                if isinstance(k, ast.Constant) and isinstance(k.value, str) and v is not None:
                    self.fact("key", k.value, v, k.lineno, ctx)
                    self.visit(v, (*ctx, k.value))
                elif v is not None:
                    self.visit(v, ctx)
            return
        visit = self.visit
        for name in node._fields:
            child = getattr(node, name, None)
            if type(child) is list:
                for c in child:
                    if isinstance(c, ast.AST):
                        visit(c, ctx)
            elif isinstance(child, ast.AST):
                visit(child, ctx)

    def _reads(self, node: ast.AST, t: type) -> None:
        """Names and keys this node reads: ``obj.lr``, ``cfg["lr"]``, ``cfg.get("lr")``."""
        assert self.reads is not None
        if t is ast.Attribute and type(node.ctx) is not ast.Store:  # type: ignore[attr-defined]
            self.reads.add(node.attr)  # type: ignore[attr-defined]
        elif t is ast.Subscript:
            sl = node.slice  # type: ignore[attr-defined]
            if isinstance(sl, ast.Constant) and isinstance(sl.value, str):
                self.reads.add(sl.value)
        elif t is ast.Call and node.args:  # type: ignore[attr-defined]
            fname = _dotted(node.func).rsplit(".", 1)[-1]  # type: ignore[attr-defined]
            if fname in _KEY_READERS:
                for a in node.args[:2]:  # type: ignore[attr-defined]
                    if isinstance(a, ast.Constant) and isinstance(a.value, str):
                        self.reads.add(a.value)

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        """The modules an import runs (``from .data import load`` in ``pkg/train.py``: ``pkg.data``,
        or ``pkg.data.load`` if that is a module); ``from m import run as run_m`` reads ``run``."""
        assert self.reads is not None
        if isinstance(node, ast.Import):
            self.imports.update(a.name for a in node.names)
            return
        base = node.module or ""
        if node.level:
            package = self.path.split("/")[:-1]
            package = package[: len(package) - (node.level - 1)] if node.level > 1 else package
            base = ".".join([*package, base] if base else package)
        if base:
            self.imports.add(base)
        self.imports.update(f"{base}.{a.name}" if base else a.name for a in node.names)
        self.reads.update(a.name for a in node.names if a.asname)

    @contextlib.contextmanager
    def _definition(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, ctx: tuple[str, ...]
    ) -> Iterator[None]:
        """Read ``node`` as a definition of its own (its reads its own) when only a read of its name
        runs it: a function, a class, a private method (``_build``); a public method runs through
        its object, so its reads are its class's."""
        name = node.name
        if self.reads is None or (
            ctx in self.classes and not (name.startswith("_") and not name.startswith("__"))
        ):
            yield
            return
        registered = any(
            _REGISTERS.search(_dotted(d.func if isinstance(d, ast.Call) else d))
            for d in node.decorator_list
        )
        end = node.end_lineno or node.lineno
        d = Definition(self.fid, node.lineno, end, name, self.scope, registered)
        outer = self.reads, self.bare, self.imports, self.loads, self.scope
        self.index.definitions.append(d)
        self.reads, self.bare, self.imports, self.loads = d.reads, d.bare, d.imports, d.loads
        self.scope = len(self.index.definitions) - 1
        try:
            yield
        finally:
            self.reads, self.bare, self.imports, self.loads, self.scope = outer

    def _declared(self, node: ast.AST, names: tuple[str, ...]) -> None:
        end = getattr(node, "end_lineno", None) or node.lineno  # type: ignore[attr-defined]
        self.index.declarations.append((self.fid, node.lineno, end, names))  # type: ignore[attr-defined]

    def _assign(self, target: ast.AST, value: ast.AST, line: int, ctx: tuple[str, ...]) -> None:
        if isinstance(target, ast.Tuple | ast.List):
            if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts):
                for t, v in zip(target.elts, value.elts, strict=True):
                    self._assign(t, v, line, ctx)
            return
        if isinstance(target, ast.Subscript):
            sl = target.slice
            if isinstance(sl, ast.Constant) and isinstance(sl.value, str):
                self.fact("key", sl.value, value, line, ctx)
            return
        name = _dotted(target)
        if name:
            self.fact("assign", name, value, line, ctx)

    def _call(self, node: ast.Call, ctx: tuple[str, ...]) -> None:
        fname = _dotted(node.func)
        short = fname.rsplit(".", 1)[-1] if fname else ""
        if short and self.calls_stack:
            self.calls_stack[-1].append((short, node.lineno))
        call_ctx = (*ctx, short) if short else ctx
        if self.reads is not None and short and node.args:
            first = node.args[0]
            literal = first.value if isinstance(first, ast.Constant) else None
            if isinstance(literal, str) and _MODULE_REF.fullmatch(literal):
                self.loads.add((short, literal))
        if short == "add_argument" and node.args:
            first = node.args[0]
            flags = [
                a.value
                for a in node.args
                if isinstance(a, ast.Constant) and isinstance(a.value, str)
            ]
            long = next((f for f in flags if f.startswith("--")), flags[0] if flags else "")
            default = next((k.value for k in node.keywords if k.arg == "default"), None)
            if long:
                self.fact("argparse", long, default, first.lineno, ctx)
        for kw in node.keywords:
            if kw.arg:
                self.fact("kwarg", kw.arg, kw.value, kw.value.lineno, call_ctx)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, ctx: tuple[str, ...]) -> None:
        self._docstring(node)
        end = node.end_lineno or node.lineno
        qual = ".".join((*ctx, node.name))
        doc = ast.get_docstring(node) or ""
        body = node.body
        if doc and len(body) > 1:
            body = body[1:]
        fn = Function(
            node.name,
            qual,
            self.path,
            node.lineno,
            end,
            _is_stub(node, self.sf.lines),
            docstring=doc[:300],
            body_start=body[0].lineno if body else end,
        )
        self.index.functions.append(fn)
        with self._definition(node, ctx):
            self._function_body(node, fn, ctx)

    def _function_body(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef, fn: Function, ctx: tuple[str, ...]
    ) -> None:
        a = node.args
        positional = a.posonlyargs + a.args
        for arg, default in zip(
            positional[len(positional) - len(a.defaults) :], a.defaults, strict=True
        ):
            self.fact("default", arg.arg, default, default.lineno, (*ctx, node.name))
        for arg, kd in zip(a.kwonlyargs, a.kw_defaults, strict=True):
            if kd is not None:
                self.fact("default", arg.arg, kd, kd.lineno, (*ctx, node.name))
        for d in node.decorator_list:
            self.visit(d, ctx)
        self.calls_stack.append(fn.calls)
        for stmt in node.body:
            self.visit(stmt, (*ctx, node.name))
        self.calls_stack.pop()


def _is_main_guard(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.If):
        return False
    t = stmt.test
    return (
        isinstance(t, ast.Compare)
        and isinstance(t.left, ast.Name)
        and t.left.id == "__name__"
        and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in t.comparators)
    )


def _segment(lines: list[str], node: ast.AST) -> str:
    ln = getattr(node, "lineno", None)
    if ln is None or ln > len(lines):
        return ""
    end = getattr(node, "end_lineno", ln) or ln
    c0 = getattr(node, "col_offset", 0) or 0
    c1 = getattr(node, "end_col_offset", None)
    if end == ln:
        return lines[ln - 1][c0:c1]
    return lines[ln - 1][c0:] + " ..."


#: a markdown code fence: a model's answer saved as the file (```python ... ```)
_FENCE_RE = re.compile(r"^```")
#: the lines of prose a model's answer may have before its code's fence
_FENCE_WITHIN = 5
#: cuts tried, from the error up, before a file that does not parse is left as text
_RECOVERY_TRIES = 40


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _parse(lines: list[str]) -> ast.Module | SyntaxError | None:
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError as e:
        return e
    except (ValueError, RecursionError, MemoryError):
        return None


def parse_recovering(text: str) -> tuple[ast.Module, list[int]] | None:
    """The code of a Python file that may not parse as saved, and the lines (0-based) that are
    not code: a model's answer written with its markdown (the prose and the fences around
    the code are text) and a file cut short or broken (the code before the statement that does
    not parse is read; from there on the file is text, since Python would not run it).
    Line numbers are kept. None when nothing parses."""
    lines = text.split("\n")
    first = _parse(lines)
    if first is None:
        return None
    if isinstance(first, ast.Module):
        return first, []
    text_lines: list[int] = []
    fences = [i for i, line in enumerate(lines) if _FENCE_RE.match(line)]
    before = "\n".join(lines[: fences[0]]) if fences else ""
    # the answer's own fence: near the top, not in a docstring showing an example
    if (
        fences
        and fences[0] < _FENCE_WITHIN
        and before.count('"""') % 2 == before.count("'''") % 2 == 0
    ):
        start = fences[0]
        end = fences[1] if len(fences) > 1 else len(lines)
        text_lines = [i for i in range(len(lines)) if not start < i < end]
        lines = [line if start < i < end else "" for i, line in enumerate(lines)]
    parsed = _parse(lines)
    if not isinstance(parsed, SyntaxError):
        return (parsed, text_lines) if parsed is not None else None
    # the longest prefix that parses, cut at a line no deeper than the one holding the error
    # (a statement's start, tried from the error up: a cut inside a bracket or after a block's
    # header does not parse)
    err = min(parsed.lineno or 1, len(lines)) - 1
    while err > 0 and not lines[err].strip():
        err -= 1
    depth = _indent(lines[err])
    tries = 0
    for cut in range(err, 0, -1):
        if not lines[cut].strip() or _indent(lines[cut]) > depth:
            continue
        head = lines[:cut]
        parsed = _parse(head + [""] * (len(lines) - cut))
        if isinstance(parsed, ast.Module):
            return parsed, text_lines + [i for i in range(cut, len(lines)) if lines[i]]
        tries += 1
        if parsed is None or tries >= _RECOVERY_TRIES:
            break
    return None


def parse_python(index: CodeIndex) -> dict[int, tuple[ast.Module, list[int]]]:
    """Every Python file of the index parsed once, on its lines as the index numbers them
    (:func:`parse_recovering`; a file where nothing parses is left out), and the liveness of the
    code's modules over the whole submission, a function one module imports summarised as its own
    are (:func:`~sabench.index.liveness.inert_in_submission`), kept on the index for the judges
    (:attr:`CodeIndex.trees`, :attr:`CodeIndex.inert_ids`, :attr:`CodeIndex.dropped`)."""
    parsed: dict[int, tuple[ast.Module, list[int]]] = {}
    for fid, sf in enumerate(index.files):
        got = parse_recovering("\n".join(sf.lines)) if sf.language == "python" else None
        if got is not None:
            parsed[fid] = got
            if sf.kind == CODE and sf.lines:
                index.trees[sf.path] = got[0]
    try:
        index.inert_ids = inert_in_submission(index.trees, None, index.dropped)
    except RecursionError:  # a pathologically deep module: the others each on its own
        index.dropped.clear()
        for path, tree in index.trees.items():
            with contextlib.suppress(RecursionError):
                index.inert_ids |= inert_in_submission({path: tree}, None, index.dropped)
    return parsed


def python_facts(
    index: CodeIndex, sf: SourceFile, recovered: tuple[ast.Module, list[int]] | None
) -> list[tuple[float, int]]:
    """Facts of one Python file, parsed by :func:`parse_python` (None: nothing parses, the file
    is text); returns its numeric literals."""
    if recovered is None:
        return []
    tree, text_lines = recovered
    for i in text_lines:
        if i < len(sf.comment):
            sf.comment[i] = 1
    visitor = _PyVisitor(index, sf)
    if sf.kind == CODE:
        visitor.inert = index.inert_ids.get(sf.path, set())
        index.inert.update((visitor.fid, ln) for ln in statement_lines(tree, visitor.inert))
    with contextlib.suppress(RecursionError):  # a pathologically deep file keeps what was read
        visitor.run(tree)
    return visitor.literals


def statement_lines(tree: ast.Module, ids: set[int]) -> set[int]:
    """The lines of the statements ``ids`` (and of what they hold) that no other statement
    shares."""
    dead: set[int] = set()
    kept: set[int] = set()
    todo: list[tuple[ast.stmt, bool]] = [(c, False) for c in tree.body]
    while todo:
        n, inside = todo.pop()
        inside = inside or id(n) in ids
        if inside:
            dead.update(range(n.lineno, (n.end_lineno or n.lineno) + 1))
        else:
            kept.update(statement_span(n))
        todo.extend((c, inside) for c in child_statements(n))
    return dead - kept
