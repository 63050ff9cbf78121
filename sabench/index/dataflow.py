"""What an expression's value is made of: the names whose values reach it, which calls only
compute, what a function's parameters reach. The expression half of :mod:`sabench.index.liveness`
(which runs the dataflow over statements)."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Collection, Iterator

from sabench.values import words

#: builtins that compute a value from their arguments and nothing else
PURE_BUILTINS = words(
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
MUTATORS = words(
    "append extend insert add update setdefault pop popitem remove discard clear appendleft "
    "extendleft sort reverse"
)
#: calls that make a new object: a name bound only to these may be changed without an effect
_FRESH_CALLS = words(
    "zeros ones empty full zeros_like ones_like empty_like full_like array copy deepcopy dict "
    "list set defaultdict OrderedDict Counter deque arange linspace eye identity default_rng "
    "RandomState Generator"
)
DYNAMIC = words("locals vars eval exec globals")
#: calls that may draw a new value each time (``f() - f()`` need not be zero)
_RANDOM = re.compile(r"rand|sample|normal|uniform|choice|shuffle|noise|dropout|next|pop|read|\?")
#: what gives a shape or a type, no value: ``np.zeros_like(x)``, ``np.zeros(x.shape)``, ``type(x)``
_LIKE = words("zeros_like ones_like empty_like full_like new_zeros new_ones new_empty new_full")
_SHAPED, _TYPE_ONLY = words("zeros ones empty full"), words("type isinstance hasattr callable")
_SHAPE_ATTRS = words("shape dtype ndim device size")
_NONE_TEST = re.compile(r"^[\w.]+ is (not )?None$")

Live = frozenset[str]
#: marks a name of which only the keys reach (``for k in d``, ``d.keys()``, ``d.items()`` whose
#: values nobody reads): a dict whose keys alone reach an output does not carry its values there
KEYS = "\x00keys"
_DICT_CALLS = words("dict OrderedDict defaultdict")
#: the nodes the scan of a function looks at (statements, calls, names, ...)
NOTED = frozenset(
    {c for c in vars(ast).values() if isinstance(c, type) and issubclass(c, ast.stmt)}
    | {ast.ExceptHandler, ast.Call, ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr}
    | {ast.Name, ast.Lambda}
)


def dotted(node: ast.AST) -> str:
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
            calls = [dotted(n.func) for n in walk(node.left) if isinstance(n, ast.Call)]
            return not any(_RANDOM.search(c or "?") for c in calls)  # ``x - x``, drawing nothing
    return False


def store_base(node: ast.AST) -> str | None:
    """The name a store into ``a.b[c].d`` changes (``a``); None for ``f().x`` and the like."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Starred):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


class Sig:
    """A function's parameters and those whose values reach its return value or its effects."""

    def __init__(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        a = fn.args
        self.pos = [x.arg for x in (*a.posonlyargs, *a.args)]
        self.named = {x.arg for x in (*a.args, *a.kwonlyargs)}
        self.vararg = a.vararg.arg if a.vararg else None
        self.kwarg = a.kwarg.arg if a.kwarg else None
        self.all = {*self.pos, *self.named} | {x for x in (self.vararg, self.kwarg) if x}
        self.reach: set[str] = set()
        #: what calling it does besides computing its result: acts on the world, or changes
        #: these parameters (decided over the submission, :func:`~sabench.index.liveness`)
        self.acts = True
        self.mutates: set[str] = set()
        self.fn = fn

    @functools.cached_property
    def stub(self) -> bool:  # returns nothing, raises: arguments left to the stub rules
        own = list(walk_own(self.fn, set()))
        return any(isinstance(n, ast.Raise) for n in own) and not any(
            isinstance(n, ast.Return) and n.value is not None for n in own
        )

    def bound(self, call: ast.Call) -> dict[str, ast.AST] | None:
        """The arguments of ``call`` by the parameter they bind (None: unpacked, unknown)."""
        if any(isinstance(x, ast.Starred) for x in call.args) or any(
            k.arg is None for k in call.keywords
        ):
            return None
        out = {self.pos[i]: a for i, a in enumerate(call.args) if i < len(self.pos)}
        out.update({k.arg: k.value for k in call.keywords if k.arg in self.named})
        return out

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


class ModuleFacts:
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
        #: the functions that only compute: the module's own, those it imports from the
        #: submission (by their local names), and ``alias.f`` for ``import helpers as alias``
        self.pure_fns: set[str] = set()
        #: local names (and ``alias.f``) of the submission's functions that only change their
        #: parameters: a call of one acts only where what it is given is read later
        self.mutators: dict[str, Sig] = {}
        #: local names (and ``alias.f``) -> the submission's module (path) and function they are
        self.imported: dict[str, tuple[str, str]] = {}
        #: names read per expression node (by id), for the duration of the analysis
        self.uses: dict[int, frozenset[str]] = {}
        #: what evaluating an expression node may change (by id; :meth:`effects`)
        self.changes: dict[int, bool | set[str]] = {}
        self.kids = Children()
        #: the statements that did not run (by an execution record): they do nothing
        self.skip = skip or set()
        #: bare names -> the submission's functions they call, and module aliases -> theirs
        self.sigs: dict[str, Sig] = {}
        self.module_sigs: dict[str, dict[str, Sig]] = {}
        self.shadow: set[str] = set()
        #: the names of the function analysed that are bound only to new dicts
        self.dicts: set[str] = set()
        self.dropped: list[ast.AST] = []
        bound: dict[str, int] = {}
        for st in tree.body:
            for n in _bound_names(st):
                bound[n] = bound.get(n, 0) + 1
        #: the module-level functions with a summary: bound once, undecorated
        self.own = {
            st.name: (st, Sig(st))
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
            return func.id in PURE_BUILTINS or func.id in self.pure_fns
        if isinstance(func, ast.Call) and dotted(func.func) == "type":
            return True  # ``type(x)(...)``: a new value of x's type
        if not isinstance(func, ast.Attribute):
            return False
        last = func.attr
        if last.endswith("_") and not last.endswith("__"):
            return False  # in place: ``w.add_(g)``, ``nn.init.normal_(w)``
        root = dotted(func).split(".")[0]
        if dotted(func) in self.pure_fns:
            return True  # ``helpers.mse(...)`` of a pure function of the submission
        if root in _NUMERIC_MODULES:
            return not _MODULE_EFFECT.match(last)
        if root in self.modules:
            return last in _PURE_OTHER
        return last in _PURE_METHODS

    def effectful(self, node: ast.AST | None) -> bool:  # may do more than compute a value
        if node is None:
            return False
        for n in walk(node, self.kids):
            if isinstance(n, ast.Call) and not self.pure_call(n):
                return True
            if isinstance(n, ast.Yield | ast.YieldFrom | ast.Await | ast.NamedExpr):
                return True
        return False

    def effects(self, node: ast.AST, fresh: Collection[str]) -> bool | set[str]:
        """What evaluating ``node`` may change: True when something outside the function may
        change (a write, a print, a global, a parameter), else the local names, bound only to
        values the function created (``fresh``), whose values may change (``rng.normal()``, a
        submission function changing the list it is given): such a change matters only where
        the name is read later. Once per node: a node is of one function, its ``fresh``."""
        got = self.changes.get(id(node))
        if got is None:
            got = self.changes[id(node)] = self._effects(node, fresh)
        return got

    def _effects(self, node: ast.AST, fresh: Collection[str]) -> bool | set[str]:
        out: set[str] = set()
        for n in walk(node, self.kids):
            if isinstance(n, ast.Yield | ast.YieldFrom | ast.Await | ast.NamedExpr):
                return True
            if not isinstance(n, ast.Call) or self.pure_call(n):
                continue
            sig = self.mutators.get(dotted(n.func)) if dotted(n.func) not in self.shadow else None
            if sig is not None:
                bound = sig.bound(n)
                changed = (
                    [bound[p] for p in sig.mutates if p in bound] if bound is not None else None
                )
            elif isinstance(n.func, ast.Attribute) and store_base(n.func) not in self.modules:
                changed = [n.func.value, *changed_arguments(n)]
            else:
                changed = None
            if changed is None:
                return True
            for value in changed:
                owner = store_base(value)
                if owner is not None and owner in fresh:
                    out.add(owner)
                elif not is_fresh(value):
                    return True
        return out

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
                if isinstance(n, ast.IfExp) and constant_test(n.test) is not None:
                    todo.append(n.body if constant_test(n.test) else n.orelse)
                    continue
                if isinstance(n, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
                    out |= self._comprehension(n)
                    continue
                kept = self._call_args(n) if isinstance(n, ast.Call) else None
                todo.extend(self.kids[n] if kept is None else kept)
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
            targets = {x.id for x in walk(g.target, self.kids) if isinstance(x, ast.Name)}
            bound |= targets
            if targets & needed or g.ifs or not isinstance(g.target, ast.Name | ast.Tuple):
                reads = self.key_reads(g.iter, g.target, needed) or self.names(g.iter)
                if i:
                    needed |= reads
                else:
                    first = reads
        return (needed - bound) | first

    def key_reads(
        self, it: ast.AST, target: ast.AST, needed: Collection[str]
    ) -> frozenset[str] | None:
        """``{d}`` marked :data:`KEYS` where iterating ``it`` into ``target`` reads only the keys
        of a mapping ``d``: ``for k in d`` (``d`` bound only to dicts), ``for k in d.keys()``,
        ``for k, v in d.items()`` with ``v`` not in ``needed``; None otherwise."""
        if isinstance(it, ast.Name) and it.id in self.dicts:
            return frozenset({it.id + KEYS})
        if not (
            isinstance(it, ast.Call)
            and not it.args
            and not it.keywords
            and isinstance(it.func, ast.Attribute)
            and isinstance(it.func.value, ast.Name)
        ):
            return None
        name, attr = it.func.value.id, it.func.attr
        if attr == "keys" or (
            attr == "items"
            and isinstance(target, ast.Tuple)
            and len(target.elts) == 2
            and isinstance(target.elts[1], ast.Name)
            and target.elts[1].id not in needed
        ):
            return frozenset({name + KEYS})
        return None

    def dict_keys(self, value: ast.AST) -> frozenset[str] | None:
        """What the keys of a new dict ``value`` read (a display's keys, a comprehension's key
        and what it iterates); None for anything else."""
        if isinstance(value, ast.Dict):
            parts = [
                k if k is not None else v for k, v in zip(value.keys, value.values, strict=True)
            ]
            return frozenset(n for part in parts for n in self.names(part))
        if isinstance(value, ast.DictComp):
            return self.names(ast.SetComp(elt=value.key, generators=value.generators))
        if isinstance(value, ast.Call) and dotted(value.func) in _DICT_CALLS and not value.args:
            return frozenset()
        return None

    def _call_args(self, call: ast.Call) -> list[ast.AST] | None:  # the parts reaching
        func = call.func
        last = dotted(func).rsplit(".", 1)[-1] if dotted(func) else ""
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
        if last in _SHAPED and dotted(func).split(".")[0] in _NUMERIC_MODULES and call.args:
            return [*_shape_free(call.args[0]), *call.args[1:], *kws]
        return None


def _shape_free(node: ast.AST) -> list[ast.AST]:  # what is more than a shape in a shape
    if isinstance(node, ast.Attribute) and node.attr in _SHAPE_ATTRS:
        return []
    if isinstance(node, ast.Call) and dotted(node.func) == "len" and len(node.args) == 1:
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


def store_names(target: ast.AST) -> list[ast.AST]:
    if isinstance(target, ast.Tuple | ast.List):
        return [x for e in target.elts for x in store_names(e)]
    if isinstance(target, ast.Starred):
        return store_names(target.value)
    return [target]


#: per node class, its fields that may hold nodes, but contexts and operators (shared
#: singletons that no analysis here reads as a node)
_FIELDS = {
    c: tuple(f for f in c._fields if f not in ("ctx", "op", "ops"))
    for c in vars(ast).values()
    if isinstance(c, type) and issubclass(c, ast.AST)
}


def children(node: ast.AST) -> list[ast.AST]:
    """``ast.iter_child_nodes`` as a list, in its order, less the contexts and operators: the
    analyses walk each module's nodes many times, and this is what they spend most on."""
    out: list[ast.AST] = []
    for f in _FIELDS.get(type(node)) or node._fields:
        v = getattr(node, f, None)
        if type(v) is list:
            out += [x for x in v if isinstance(x, ast.AST)]
        elif isinstance(v, ast.AST):
            out.append(v)
    return out


class Children(dict[ast.AST, list[ast.AST]]):
    """Each node's :func:`children`, found once (an analysis walks each node many times)."""

    def __missing__(self, node: ast.AST) -> list[ast.AST]:
        self[node] = found = children(node)
        return found


def walk(node: ast.AST, kids: Children | None = None) -> Iterator[ast.AST]:
    """``ast.walk``'s nodes (less contexts and operators), depth first: for what does not depend on
    the order."""
    of = children if kids is None else kids.__getitem__
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        todo += of(n)


_SCOPES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda})


def walk_own(node: ast.AST, skip: set[int], kids: Children | None = None) -> Iterator[ast.AST]:
    """The nodes of a statement, not entering nested functions' or classes' bodies nor the
    statements ``skip`` names (they did not run)."""
    of = children if kids is None else kids.__getitem__
    todo = [node]
    while todo:
        n = todo.pop()
        if id(n) in skip:
            continue
        yield n
        if n is not node and type(n) in _SCOPES:
            continue
        todo += of(n)


_FRESH_NODES = (ast.List, ast.Dict, ast.Set, ast.Tuple, ast.Constant, ast.ListComp, ast.DictComp)
_FRESH_NODES += (ast.SetComp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.JoinedStr)


def changed_arguments(call: ast.Call) -> list[ast.AST]:
    """What a method call changes besides its object: ``rng.shuffle(x)`` shuffles ``x``."""
    if isinstance(call.func, ast.Attribute) and call.func.attr == "shuffle" and call.args:
        return [call.args[0]]
    return []


def is_new_dict(value: ast.AST | None) -> bool:
    """A dict display, a dict comprehension or ``dict(...)``."""
    if isinstance(value, ast.Call):
        return dotted(value.func) in _DICT_CALLS
    return isinstance(value, ast.Dict | ast.DictComp)


def is_fresh(value: ast.AST | None) -> bool:
    """A value that is a new object: a literal, a comprehension, arithmetic, ``np.zeros(...)``."""
    if isinstance(value, _FRESH_NODES):
        return True
    if isinstance(value, ast.Call):
        return dotted(value.func).rsplit(".", 1)[-1] in _FRESH_CALLS
    return False


def constant_test(test: ast.expr) -> bool | None:
    ok = isinstance(test, ast.Constant) and not isinstance(test.value, str)
    return bool(test.value) if ok else None  # type: ignore[attr-defined]


def child_statements(n: ast.AST) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for f in ("body", "orelse", "finalbody", "handlers", "cases"):
        for c in getattr(n, f, ()):
            if isinstance(c, ast.stmt):
                out.append(c)
            elif isinstance(c, ast.ExceptHandler | getattr(ast, "match_case", ast.ExceptHandler)):
                out.extend(x for x in c.body if isinstance(x, ast.stmt))
    return out
