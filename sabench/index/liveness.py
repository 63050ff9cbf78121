"""Liveness: which statements of a Python module compute something that reaches an output.

A claim is implemented only by code whose result reaches what the submission reports. Per function,
a backward dataflow over its statements (loops to a fixpoint, ``try`` bodies reaching their handlers)
keeps a statement live when it has an effect (a return, a ``yield``, a ``raise``, a call that is not a
known pure computation: a write, a print or log of a value, ``json.dump``, ``savefig``, any call of
code the module does not prove pure, a store into an attribute or into a value it did not create)
or when it defines a name that a later live statement reads. The others are *inert*: a dead store
(``_ = alpha * x ** 2`` nobody reads), a pure expression whose result is discarded (a call of a
function of the module that only computes, too), a store overwritten before any read, a container
filled and never read, and operands multiplied by a literal zero (``value * 0.0 + 0.597``: ``value``
does not reach the result). A branch under a constant false test never runs. The index reads inert
statements as text (:meth:`CodeIndex.mark_unread`), and the names they read do not make a function
live. Module-level assignments are left to the index's declarations (other modules may read them).

Each function is summarised by the parameters whose values reach its return value or its effects,
to a least fixpoint over the module's functions (:func:`inert_in_submission`: over the submission's,
through its imports): a call ``f(x)`` whose summary says ``x`` reaches nothing does not read ``x``
(``return zero_like(value, c)`` computes ``value`` for nothing). With an execution record the
statements that did not run are left out of the dataflow (a helper's never-run ``return value``
branch passes nothing on); :mod:`sabench.judges.static.executed` reads the record.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from sabench.values import words

#: builtins that compute a value from their arguments and nothing else
_PURE_BUILTINS = words(
    "abs all any bool complex dict divmod enumerate filter float format frozenset hash int "
    "isinstance issubclass iter len list map max min pow range repr reversed round set slice "
    "sorted str sum tuple type zip getattr hasattr id chr ord bin hex oct"
)
#: modules whose functions compute (``np.mean``, ``math.exp``, ``torch.sigmoid``), except ...
_NUMERIC_MODULES = words(
    "np numpy math cmath jnp jax scipy sp torch F functional tf statistics linalg special"
)
#: ... those that write, seed or set state
_MODULE_EFFECT = re.compile(
    r"^(save\w*|seed|manual_seed\w*|shuffle|set_\w+|copyto|put\w*|place|fill_diagonal|load\w*"
    r"|use_deterministic_algorithms|print\w*|backward|synchronize)$"
)
#: methods that compute a new value from their object
_PURE_METHODS = words(
    "mean sum std var max min dot reshape view transpose permute item tolist numpy cpu detach "
    "clone copy astype float double int long half sqrt exp log log1p expm1 abs pow clip clamp "
    "norm matmul mm bmm softmax log_softmax sigmoid tanh relu argmax argmin argsort cumsum "
    "cumprod prod round squeeze unsqueeze flatten ravel size numel any all get keys values items "
    "split strip lower upper format join replace startswith endswith count index square "
    "diagonal trace t outer inner cross sort_values nonzero where masked_fill gather expand "
    "repeat expand_as type_as contiguous median quantile logsumexp neg reciprocal rsqrt sign "
    "floor ceil diff mul add sub div"
)
#: pure functions of other modules (``os.path.join``, ``json.dumps``)
_PURE_OTHER = words("dumps loads join basename dirname splitext abspath exists")
#: methods that change their (container) object: live when the container is
_MUTATORS = words(
    "append extend insert add update setdefault pop popitem remove discard clear appendleft "
    "extendleft sort reverse"
)
#: calls that make a new object: a name bound only to these may be changed without an effect
_FRESH_CALLS = words(
    "zeros ones empty full zeros_like ones_like empty_like full_like array copy deepcopy dict "
    "list set defaultdict OrderedDict Counter deque arange linspace eye identity"
)
_DYNAMIC = words("locals vars eval exec globals")
#: calls that may draw a new value each time (``f() - f()`` need not be zero)
_RANDOM = re.compile(r"rand|sample|normal|uniform|choice|shuffle|noise|dropout|next|pop|read|\?")
#: what gives a shape or a type, no value: ``np.zeros_like(x)``, ``np.zeros(x.shape)``, ``type(x)``
_LIKE = words("zeros_like ones_like empty_like full_like new_zeros new_ones new_empty new_full")
_SHAPED, _TYPE_ONLY = words("zeros ones empty full"), words("type isinstance hasattr callable")
_SHAPE_ATTRS = words("shape dtype ndim device size")
_NONE_TEST = re.compile(r"^[\w.]+ is (not )?None$")

_Live = frozenset[str]
#: the nodes the scan of a function looks at (statements, calls, names, ...)
_NOTED = frozenset(
    {c for c in vars(ast).values() if isinstance(c, type) and issubclass(c, ast.stmt)}
    | {ast.ExceptHandler, ast.Call, ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr}
    | {ast.Name, ast.Lambda}
)


def _dotted(node: ast.AST) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _is_zero(node: ast.AST) -> bool:
    """An expression that is literally zero, or a product with such a factor (``x * 0.0``)."""
    if isinstance(node, ast.Constant):
        return type(node.value) in (int, float) and node.value == 0
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return _is_zero(node.operand)
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Mult):
            return _is_zero(node.left) or _is_zero(node.right)
        if isinstance(node.op, ast.Div | ast.FloorDiv | ast.Mod):
            return _is_zero(node.left)
        if isinstance(node.op, ast.Sub) and ast.dump(node.left) == ast.dump(node.right):
            calls = [_dotted(n.func) for n in ast.walk(node.left) if isinstance(n, ast.Call)]
            return not any(_RANDOM.search(c or "?") for c in calls)  # ``x - x``, drawing nothing
    return False


def _base(node: ast.AST) -> str | None:
    """The name a store into ``a.b[c].d`` changes (``a``); None for ``f().x`` and the like."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Starred):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


class _Sig:
    """A function's parameters and those whose values reach its return value or its effects."""

    def __init__(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        a = fn.args
        self.pos = [x.arg for x in (*a.posonlyargs, *a.args)]
        self.named = {x.arg for x in (*a.args, *a.kwonlyargs)}
        self.vararg = a.vararg.arg if a.vararg else None
        self.kwarg = a.kwarg.arg if a.kwarg else None
        self.all = {*self.pos, *self.named} | {x for x in (self.vararg, self.kwarg) if x}
        self.reach: set[str] = set()
        #: it returns nothing and raises (a stub): its arguments are left to the stub rules
        own = list(_walk_own(fn, set()))
        self.stub = any(isinstance(n, ast.Raise) for n in own) and not any(
            isinstance(n, ast.Return) and n.value is not None for n in own
        )

    def args(self, call: ast.Call) -> list[ast.AST] | None:  # those reaching (None: all)
        if any(isinstance(x, ast.Starred) for x in call.args):
            return None
        out: list[ast.AST] = []
        for i, arg in enumerate(call.args):
            name = self.pos[i] if i < len(self.pos) else self.vararg
            if name is None or name in self.reach:
                out.append(arg)
        for k in call.keywords:
            name = k.arg if k.arg in self.named else self.kwarg
            if k.arg is None or name is None or name in self.reach:
                out.append(k.value)
        return out


class _Module:
    """What the analysis of one module knows: its imported names, its pure functions and what
    reaches the results of its functions (and of those it imports from the submission)."""

    def __init__(self, tree: ast.Module, skip: set[int] | None = None) -> None:
        self.tree = tree
        self.modules: set[str] = set()
        #: the module's functions, nested ones included
        self.functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        todo: list[ast.stmt] = list(tree.body)
        while todo:
            node = todo.pop()
            todo.extend(child_statements(node))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.functions.append(node)
            elif isinstance(node, ast.Import):
                self.modules.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.split(".")[0] in _NUMERIC_MODULES
            ):
                self.modules.update(a.asname or a.name for a in node.names)
        self.pure_fns: set[str] = set()
        #: names read per expression node (by id), for the duration of the analysis
        self.uses: dict[int, frozenset[str]] = {}
        #: the statements that did not run (by an execution record): they do nothing
        self.skip = skip or set()
        #: bare names -> the submission's functions they call, and module aliases -> theirs
        self.sigs: dict[str, _Sig] = {}
        self.module_sigs: dict[str, dict[str, _Sig]] = {}
        self.shadow: set[str] = set()
        self.dropped: list[ast.AST] = []
        bound: dict[str, int] = {}
        for st in tree.body:
            for n in _bound_names(st):
                bound[n] = bound.get(n, 0) + 1
        #: the module-level functions with a summary: bound once, undecorated
        self.own = {
            st.name: (st, _Sig(st))
            for st in tree.body
            if isinstance(st, ast.FunctionDef | ast.AsyncFunctionDef)
            and not st.decorator_list
            and bound.get(st.name) == 1
        }
        self.sigs.update({k: v[1] for k, v in self.own.items()})

    def pure_call(self, call: ast.Call) -> bool:
        if any(kw.arg == "out" for kw in call.keywords):
            return False
        func = call.func
        if isinstance(func, ast.Name):
            return func.id in _PURE_BUILTINS or func.id in self.pure_fns
        if isinstance(func, ast.Call) and _dotted(func.func) == "type":
            return True  # ``type(x)(...)``: a new value of x's type
        if not isinstance(func, ast.Attribute):
            return False
        last = func.attr
        if last.endswith("_") and not last.endswith("__"):
            return False  # in place: ``w.add_(g)``, ``nn.init.normal_(w)``
        root = _dotted(func).split(".")[0]
        if root in _NUMERIC_MODULES:
            return not _MODULE_EFFECT.match(last)
        if root in self.modules:
            return last in _PURE_OTHER
        return last in _PURE_METHODS

    def effectful(self, node: ast.AST | None) -> bool:  # may do more than compute a value
        if node is None:
            return False
        for n in ast.walk(node):
            if isinstance(n, ast.Call) and not self.pure_call(n):
                return True
            if isinstance(n, ast.Yield | ast.YieldFrom | ast.Await | ast.NamedExpr):
                return True
        return False

    def effectful_args(self, call: ast.Call) -> bool:
        return any(self.effectful(a) for a in (*call.args, *(k.value for k in call.keywords)))

    def names(self, node: ast.AST | None) -> frozenset[str]:
        """The names whose values reach the value of an expression: not the operands a literal
        zero multiplies away (``x * 0.0``, ``x - x``), the branch a constant test does not take,
        what only gives a shape (``np.zeros_like(x)``, ``type(x)``, a comprehension's iterable
        whose elements it does not read, a dict comprehension's keys), nor the arguments of a
        function of the submission whose parameters reach nothing of it."""
        if node is None:
            return frozenset()
        got = self.uses.get(id(node))
        if got is None:
            out: set[str] = set()
            todo = [node]
            while todo:
                n = todo.pop()
                if isinstance(n, ast.BinOp) and _is_zero(n):
                    self.dropped.append(n)
                    continue
                if isinstance(n, ast.Name):
                    if not isinstance(n.ctx, ast.Store):
                        out.add(n.id)
                    continue
                if isinstance(n, ast.Compare) and _NONE_TEST.match(ast.unparse(n)):
                    continue  # ``x is None``: whether there is a value, not which
                if isinstance(n, ast.IfExp) and _constant_test(n.test) is not None:
                    todo.append(n.body if _constant_test(n.test) else n.orelse)
                    continue
                if isinstance(n, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
                    out |= self._comprehension(n)
                    continue
                kept = self._call_args(n) if isinstance(n, ast.Call) else None
                todo.extend(ast.iter_child_nodes(n) if kept is None else kept)
                if kept is not None:  # what the call takes and drops
                    ids = {id(k) for k in kept}
                    args = [*n.args, *(k.value for k in n.keywords)]  # type: ignore[attr-defined]
                    self.dropped.extend(a for a in args if id(a) not in ids)
            got = self.uses[id(node)] = frozenset(out)
        return got

    def _comprehension(
        self, n: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> set[str]:
        needed = set(self.names(n.value if isinstance(n, ast.DictComp) else n.elt))
        for g in n.generators:
            for c in g.ifs:
                needed |= self.names(c)
        bound: set[str] = set()
        first: frozenset[str] = frozenset()
        for i in range(len(n.generators) - 1, -1, -1):
            g = n.generators[i]
            targets = {x.id for x in ast.walk(g.target) if isinstance(x, ast.Name)}
            bound |= targets
            if targets & needed or g.ifs or not isinstance(g.target, ast.Name | ast.Tuple):
                if i:
                    needed |= self.names(g.iter)
                else:
                    first = self.names(g.iter)
        return (needed - bound) | first

    def _call_args(self, call: ast.Call) -> list[ast.AST] | None:  # the parts reaching
        func = call.func
        last = _dotted(func).rsplit(".", 1)[-1] if _dotted(func) else ""
        kws = [k.value for k in call.keywords]
        if isinstance(func, ast.Name) and func.id not in self.shadow:
            if func.id in _TYPE_ONLY:  # ``isinstance(x, dict)``: what x is, not its value
                return [func, *call.args[1:], *kws]
            sig = self.sigs.get(func.id)
            if sig is not None:
                args = sig.args(call)
                return None if args is None else [func, *args]
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            sig = self.module_sigs.get(func.value.id, {}).get(func.attr)
            if sig is not None and func.value.id not in self.shadow:
                args = sig.args(call)
                return None if args is None else [func, *args]
        if last in _LIKE:
            if last.startswith("new_"):  # ``x.new_zeros(shape)``: x gives a dtype and a device
                return [*(x for a in call.args[:1] for x in _shape_free(a)), *call.args[1:], *kws]
            return [func, *call.args[1:], *kws]  # ``np.zeros_like(x)``: x gives the shape
        if last in _SHAPED and _dotted(func).split(".")[0] in _NUMERIC_MODULES and call.args:
            return [*_shape_free(call.args[0]), *call.args[1:], *kws]
        return None


def _shape_free(node: ast.AST) -> list[ast.AST]:  # what is more than a shape in a shape
    if isinstance(node, ast.Attribute) and node.attr in _SHAPE_ATTRS:
        return []
    if isinstance(node, ast.Call) and _dotted(node.func) == "len" and len(node.args) == 1:
        return []
    if isinstance(node, ast.Tuple | ast.List | ast.Subscript | ast.BinOp | ast.Starred):
        return [x for c in ast.iter_child_nodes(node) for x in _shape_free(c)]
    return [node]


def _bound_names(st: ast.stmt) -> list[str]:
    if isinstance(st, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [st.name]
    if isinstance(st, ast.Import | ast.ImportFrom):
        return [(a.asname or a.name).split(".")[0] for a in st.names]
    return [n.id for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]


def _store_names(target: ast.AST) -> list[ast.AST]:
    if isinstance(target, ast.Tuple | ast.List):
        return [x for e in target.elts for x in _store_names(e)]
    if isinstance(target, ast.Starred):
        return _store_names(target.value)
    return [target]


def _walk_own(node: ast.AST, skip: set[int]) -> Iterator[ast.AST]:
    """The nodes of a statement, not entering nested functions' or classes' bodies nor the
    statements ``skip`` names (they did not run)."""
    todo = [node]
    while todo:
        n = todo.pop()
        if id(n) in skip:
            continue
        yield n
        if n is not node and isinstance(
            n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda
        ):
            continue
        todo.extend(ast.iter_child_nodes(n))


_FRESH_NODES = (ast.List, ast.Dict, ast.Set, ast.Tuple, ast.Constant, ast.ListComp, ast.DictComp)
_FRESH_NODES += (ast.SetComp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.JoinedStr)


def _fresh(value: ast.AST | None) -> bool:
    """A value that is a new object: a literal, a comprehension, arithmetic, ``np.zeros(...)``."""
    if isinstance(value, _FRESH_NODES):
        return True
    if isinstance(value, ast.Call):
        return _dotted(value.func).rsplit(".", 1)[-1] in _FRESH_CALLS
    return False


def _constant_test(test: ast.expr) -> bool | None:
    ok = isinstance(test, ast.Constant) and not isinstance(test.value, str)
    return bool(test.value) if ok else None  # type: ignore[attr-defined]


class _Function:
    """Backward liveness over one function body (or the module's own statements)."""

    def __init__(self, mod: _Module, body: list[ast.stmt], params: set[str], is_module: bool):
        self.mod = mod
        self.live: set[int] = set()  # ids of live statements
        self.bail = False  # the frame is read dynamically (``locals()``, ``eval``): all live
        self.is_module = is_module
        declared: set[str] = set()
        assigned: dict[str, bool] = {}  # local name -> bound only to fresh values
        captured: set[str] = set()
        #: the statement (or handler) each statement is in, and those holding a live one
        self.parent: dict[int, int] = {}
        self.has_live: set[int] = set()
        #: the function does more than compute its return value (calls something impure other
        #: than the module's functions, yields, stores into what it did not create) ...
        self.acts = False
        #: ... or calls a bare name that may be impure
        self.calls: set[str] = set()
        stores: list[tuple[ast.AST, bool]] = []
        for stmt in body:
            if is_module and isinstance(
                stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
            ):
                continue
            for n in _walk_own(stmt, mod.skip):
                if type(n) not in _NOTED:
                    continue
                if isinstance(n, ast.stmt | ast.ExceptHandler):
                    for f in ("body", "orelse", "finalbody", "handlers"):
                        for c in getattr(n, f, ()):
                            self.parent[id(c)] = id(n)
                if isinstance(n, ast.Call):
                    if isinstance(n.func, ast.Name) and n.func.id not in _PURE_BUILTINS:
                        self.calls.add(n.func.id)
                    elif not mod.pure_call(n):
                        self.acts = True
                elif isinstance(n, ast.Yield | ast.YieldFrom | ast.Await | ast.NamedExpr):
                    self.acts = True
                if isinstance(n, ast.Global | ast.Nonlocal):
                    declared.update(n.names)
                    self.acts = True
                elif isinstance(n, ast.Name) and n.id in _DYNAMIC:
                    self.bail = self.acts = True
                elif not is_module and isinstance(
                    n, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
                ):
                    captured |= {x.id for x in ast.walk(n) if isinstance(x, ast.Name)}
                if isinstance(n, ast.Assign | ast.AugAssign | ast.AnnAssign):
                    aug = isinstance(n, ast.AugAssign)
                    for t in n.targets if isinstance(n, ast.Assign) else [n.target]:
                        stores.extend((x, aug) for x in _store_names(t))
                if isinstance(n, ast.Assign):
                    fresh = _fresh(n.value)
                    for t in n.targets:
                        single = isinstance(t, ast.Name)
                        for s in _store_names(t):
                            if isinstance(s, ast.Name):
                                assigned[s.id] = assigned.get(s.id, True) and fresh and single
                elif isinstance(n, ast.AnnAssign | ast.AugAssign) and isinstance(
                    n.target, ast.Name
                ):
                    fresh = isinstance(n, ast.AnnAssign) and _fresh(n.value)
                    assigned[n.target.id] = assigned.get(n.target.id, True) and fresh
                elif isinstance(n, ast.For | ast.AsyncFor | ast.With | ast.AsyncWith):
                    targets = (
                        [n.target]
                        if isinstance(n, ast.For | ast.AsyncFor)
                        else [i.optional_vars for i in n.items if i.optional_vars is not None]
                    )
                    for t in targets:
                        for s in _store_names(t):
                            if isinstance(s, ast.Name):
                                assigned[s.id] = False
                elif isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name):
                    assigned[n.target.id] = False
        self.nonlocal_ = declared
        self.fresh = {k for k, v in assigned.items() if v and k not in params}
        for x, aug in stores:
            if isinstance(x, ast.Name):
                self.acts = self.acts or (aug and x.id not in self.fresh)
            else:
                self.acts = self.acts or _base(x) not in self.fresh
        self.locals = set(assigned) | params
        #: names read after the function's end (closures; every global of the module) are live
        self.always = frozenset(captured) | frozenset(assigned if is_module else declared)
        self.loops: list[tuple[set[str], _Live]] = []  # (head, exit) of the enclosing loops
        self.extra: _Live = frozenset()  # live at every point (a ``try``'s handlers)

    def run(self, body: list[ast.stmt]) -> _Live:  # afresh; the names live at its start
        self.live, self.has_live, self.loops, self.extra = set(), set(), [], frozenset()
        self.mod.shadow = set() if self.is_module else self.locals
        return self.block(body, frozenset())

    # --- statements ------------------------------------------------------------------------
    def block(self, stmts: list[ast.stmt], out: _Live) -> _Live:
        live = out
        for stmt in reversed(stmts):
            if id(stmt) not in self.mod.skip:  # a statement that did not run did nothing
                live = self.stmt(stmt, live | self.extra | self.always)
        return live

    def _mark(self, stmt: ast.AST) -> None:
        self.live.add(id(stmt))
        p = self.parent.get(id(stmt))
        while p is not None and p not in self.has_live:
            self.has_live.add(p)
            p = self.parent.get(p)

    def _any_live(self, stmts: list[ast.stmt]) -> bool:
        return any(id(st) in self.live or id(st) in self.has_live for st in stmts)

    def _target(self, t: ast.AST, after: _Live) -> tuple[bool, set[str], frozenset[str]]:
        """(live, killed, read) for a store into ``t``."""
        if isinstance(t, ast.Name):
            if t.id in self.nonlocal_:
                return True, set(), frozenset()
            return t.id in after, {t.id}, frozenset()
        reads = self.mod.names(t)
        base = _base(t)
        if base is not None and base in self.fresh and base not in self.nonlocal_:
            return base in after, set(), reads
        return True, set(), reads

    def stmt(self, s: ast.stmt, after: _Live) -> _Live:
        mod = self.mod
        if isinstance(s, ast.Assign | ast.AnnAssign | ast.AugAssign):
            return self._assign(s, after)
        if isinstance(s, ast.Expr):
            v = s.value
            if isinstance(v, ast.Constant):
                self._mark(s)  # a docstring or a bare string: the index's own rule
                return after
            if (
                isinstance(v, ast.Call)
                and isinstance(v.func, ast.Attribute)
                and v.func.attr in _MUTATORS
            ):
                base = _base(v.func.value)
                if base is not None and base in self.fresh:
                    if base not in after and not mod.effectful_args(v):
                        return after  # a container nobody reads, filled
                    self._mark(s)
                    return after | mod.names(v)
            entry = (
                self.is_module
                and isinstance(v, ast.Call)
                and isinstance(v.func, ast.Name)
                and v.func.id not in _PURE_BUILTINS
            )  # ``main()`` at module level runs the program, whatever it returns
            if not entry and not mod.effectful(v):
                return after  # a computation whose result nobody takes
            self._mark(s)
            return after | mod.names(v)
        if isinstance(s, ast.Return):
            self._mark(s)
            return mod.names(s.value) | self.extra | self.always
        if isinstance(s, ast.Raise | ast.Assert):
            self._mark(s)
            return after | {n for c in ast.iter_child_nodes(s) for n in mod.names(c)}
        if isinstance(s, ast.Break):
            self._mark(s)
            return self.loops[-1][1] if self.loops else after
        if isinstance(s, ast.Continue):
            self._mark(s)
            return frozenset(self.loops[-1][0]) if self.loops else after
        if isinstance(s, ast.If):
            test = _constant_test(s.test)
            body = self.block(s.body, after) if test is not False else after
            orelse = self.block(s.orelse, after) if test is not True else after
            if test is None or self._any_live(s.body + s.orelse) or mod.effectful(s.test):
                if self._any_live(s.body + s.orelse) or mod.effectful(s.test):
                    self._mark(s)
                    return body | orelse | mod.names(s.test)
                return body | orelse
            return after
        if isinstance(s, ast.For | ast.AsyncFor | ast.While):
            return self._loop(s, after)
        if isinstance(s, ast.With | ast.AsyncWith):
            inner = self.block(s.body, after)
            kill: set[str] = set()
            reads: set[str] = set()
            for item in s.items:
                reads |= mod.names(item.context_expr)
                if item.optional_vars is not None:
                    kill |= {
                        n.id for n in _store_names(item.optional_vars) if isinstance(n, ast.Name)
                    }
            if self._any_live(s.body) or any(mod.effectful(i.context_expr) for i in s.items):
                self._mark(s)
                return (inner - kill) | reads
            return inner
        if isinstance(s, ast.Try | getattr(ast, "TryStar", ast.Try)):
            return self._try(s, after)  # type: ignore[arg-type]
        if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if self.is_module:
                self._mark(s)
                return after
            reads = {n.id for n in ast.walk(s) if isinstance(n, ast.Name)}
            if s.name in after or s.decorator_list or s.name in self.always:
                self._mark(s)
                return (after - {s.name}) | reads
            return after
        # imports, global, pass, del, match ...: kept, reading all they name
        self._mark(s)
        return after | {n.id for n in ast.walk(s) if isinstance(n, ast.Name)}

    def _assign(self, s: ast.Assign | ast.AnnAssign | ast.AugAssign, after: _Live) -> _Live:
        value = s.value
        if value is None:  # ``x: int``
            self._mark(s)
            return after
        targets = (
            [x for t in s.targets for x in _store_names(t)]
            if isinstance(s, ast.Assign)
            else _store_names(s.target)
        )
        live = self.mod.effectful(value)
        kill: set[str] = set()
        reads = set(self.mod.names(value))
        for t in targets:
            t_live, t_kill, t_reads = self._target(t, after)
            live = live or t_live
            kill |= t_kill
            reads |= t_reads
        if isinstance(s, ast.AugAssign):
            kill = set()
            if isinstance(s.target, ast.Name):
                reads.add(s.target.id)
                if s.target.id not in self.fresh:
                    live = True  # ``w += g`` may change the array ``w`` aliases
        if not live:
            return after
        self._mark(s)
        return (after - kill) | reads

    def _try(self, s: ast.Try, after: _Live) -> _Live:
        fin = self.block(s.finalbody, after) if s.finalbody else after
        orelse = self.block(s.orelse, fin)
        handlers: _Live = frozenset()
        for h in s.handlers:
            handlers |= self.block(h.body, fin)
            if h.type is not None:
                handlers |= self.mod.names(h.type)
        outer = self.extra
        self.extra = outer | handlers | (fin if s.finalbody else frozenset())
        try:
            body = self.block(s.body, orelse)
        finally:
            self.extra = outer
        self._mark(s)
        for h in s.handlers:
            self._mark(h)
        return body | handlers

    def _loop(self, s: ast.For | ast.AsyncFor | ast.While, after: _Live) -> _Live:
        test = s.test if isinstance(s, ast.While) else s.iter
        if isinstance(s, ast.While) and _constant_test(s.test) is False:
            return self.block(s.orelse, after)
        exit_ = self.block(s.orelse, after) if s.orelse else after
        kill: set[str] = set()
        target_reads: frozenset[str] = frozenset()
        if not isinstance(s, ast.While):
            kill = {n.id for n in _store_names(s.target) if isinstance(n, ast.Name)}
            if not isinstance(s.target, ast.Name):
                target_reads = self.mod.names(s.target)
        head: set[str] = set(exit_) | self.mod.names(test)
        for _ in range(20):
            self.loops.append((head, after))
            try:
                body = self.block(s.body, frozenset(head))
            finally:
                self.loops.pop()
            new = head | (body - kill) | target_reads | self.mod.names(test)
            if new == head:
                break
            head = new
        if self._any_live(s.body) or self.mod.effectful(test):
            self._mark(s)
            return frozenset(head)
        return exit_


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    a = fn.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    names += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    return set(names)


def inert_statements(tree: ast.Module, skip: set[int] | None = None) -> set[int]:
    """The ids of the statements of ``tree`` whose results reach nothing (see the module's doc);
    ``skip``: those that did not run."""
    return inert_in_submission({"": tree}, {"": skip or set()})[""]


def inert_in_submission(
    trees: dict[str, ast.Module],
    skips: dict[str, set[int]] | None = None,
    dropped: dict[str, list[ast.AST]] | None = None,
) -> dict[str, set[int]]:
    """:func:`inert_statements` of every module of a submission (path -> tree), the functions
    of one module that another imports (``from pkg.helpers import f``, ``import helpers as h``)
    summarised as the module's own are; ``skips``: per path, the statements that did not run;
    ``dropped`` gets, per path, the parts of expressions whose values reach nothing."""
    mods = {p: _Module(t, (skips or {}).get(p)) for p, t in trees.items()}
    by_name: dict[str, list[str]] = {}
    for p in mods:
        parts = p.removesuffix(".py").removesuffix("/__init__").replace("/", ".").split(".")
        for i in range(len(parts)):
            by_name.setdefault(".".join(parts[i:]), []).append(p)
    for m in mods.values():
        for st in ast.walk(m.tree):
            if not isinstance(st, ast.Import | ast.ImportFrom):
                continue
            base = f"{st.module}." if isinstance(st, ast.ImportFrom) and st.module else ""
            for a in st.names:
                local = a.asname or a.name
                mod = by_name.get(base + a.name, [])  # ``import pkg.helpers as h``
                if len(mod) == 1 and (a.asname or "." not in a.name):
                    m.module_sigs[local] = {k: v[1] for k, v in mods[mod[0]].own.items()}
                mod = by_name.get(base[:-1], []) if base else []
                if len(mod) == 1 and a.name in mods[mod[0]].own:  # ``from .helpers import f``
                    m.sigs.setdefault(local, mods[mod[0]].own[a.name][1])
    analyses = {p: _analyses(m) for p, m in mods.items()}
    # what reaches each function's results, to the least fixpoint: a parameter reaches when a
    # live statement reads it, through the calls of the functions summarised so far
    for _ in range(30):  # then every parameter is taken to reach
        changed = False
        for p, m in mods.items():
            m.uses.clear()
            for fn, f in analyses[p]:
                entry = m.own.get(fn.name)
                if entry is None or entry[0] is not fn:
                    continue
                sig = entry[1]
                reach = sig.all if f.bail or sig.stub else f.run(fn.body) & sig.all
                if not reach <= sig.reach:
                    sig.reach |= reach
                    changed = True
        if not changed:
            break
    else:
        for m in mods.values():
            for _, sig in m.own.values():
                sig.reach = sig.all
    out: dict[str, set[int]] = {}
    for p, m in mods.items():
        m.uses.clear()
        m.dropped = (dropped if dropped is not None else {}).setdefault(p, [])
        inert: set[int] = set()
        for fn, f in analyses[p]:
            if not f.bail:
                f.run(fn.body)
                inert |= _dead_in(fn.body, f.live)
        top = _Function(m, m.tree.body, set(), True)
        if not top.bail:
            top.run(m.tree.body)
            inert |= _dead_in(m.tree.body, top.live, module=True)
        out[p] = inert
    return out


def _analyses(mod: _Module) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, _Function]]:
    analyses = [(fn, _Function(mod, fn.body, _params(fn), False)) for fn in mod.functions]
    # a function is pure when nothing of it leaves but its return value: calls of the module's
    # pure functions are pure computations (a name defined twice is pure only if each one is)
    impure = {fn.name for fn, f in analyses if f.acts or fn.decorator_list}
    candidates = {fn.name: f.calls for fn, f in analyses if fn.name not in impure}
    changed = True
    while changed:
        changed = False
        for name, calls in candidates.items():
            if name not in mod.pure_fns and calls <= mod.pure_fns | {name}:
                mod.pure_fns.add(name)
                changed = True
    return analyses


def _dead_in(stmts: list[ast.stmt], live: set[int], module: bool = False) -> set[int]:
    out: set[int] = set()
    for s in stmts:
        if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and (
            module or id(s) in live
        ):
            continue  # its own body is analysed as a function of its own
        if module and isinstance(s, ast.Assign | ast.AnnAssign | ast.AugAssign):
            continue
        if id(s) not in live:
            out.add(id(s))
            continue
        out |= _dead_in(child_statements(s), live, module)
    return out


def child_statements(n: ast.AST) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for f in ("body", "orelse", "finalbody", "handlers", "cases"):
        for c in getattr(n, f, ()):
            if isinstance(c, ast.stmt):
                out.append(c)
            elif isinstance(c, ast.ExceptHandler | getattr(ast, "match_case", ast.ExceptHandler)):
                out.extend(x for x in c.body if isinstance(x, ast.stmt))
    return out


def _compound(n: ast.stmt) -> bool:
    return isinstance(getattr(n, "body", None), list)


def statement_span(n: ast.stmt) -> range:
    """The lines of a statement's own code: a simple one's, a compound one's header, a
    decorated definition's decorators too."""
    first = min([n.lineno, *(d.lineno for d in getattr(n, "decorator_list", ()))])
    return range(first, (_header_end(n) if _compound(n) else (n.end_lineno or n.lineno)) + 1)


def _header_end(n: ast.stmt) -> int:
    body = getattr(n, "body", None)
    if isinstance(body, list) and body:
        return max(n.lineno, body[0].lineno - 1)
    return n.end_lineno or n.lineno
