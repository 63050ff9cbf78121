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
(``return zero_like(value, c)`` computes ``value`` for nothing), and a function calling only pure
ones, its module's or those it imports, is pure. A dict of which only the keys reach (``for name
in d``, ``d.keys()``, ``d.items()`` whose values nobody reads: the names of results, not the
results) reads only its keys (:data:`~sabench.index.dataflow.KEYS`). With an execution record the
statements that did not run are left out of the dataflow (a helper's never-run ``return value``
branch passes nothing on); :mod:`sabench.judges.static.executed` reads the record.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator

from sabench.index.dataflow import (
    DYNAMIC,
    KEYS,
    MUTATORS,
    NOTED,
    PURE_BUILTINS,
    Live,
    ModuleFacts,
    Sig,
    changed_arguments,
    child_statements,
    children,
    constant_test,
    dotted,
    is_fresh,
    is_new_dict,
    store_base,
    store_names,
    walk,
    walk_own,
)


class _Function:
    """Backward liveness over one function body (or the module's own statements)."""

    def __init__(self, mod: ModuleFacts, body: list[ast.stmt], params: set[str], is_module: bool):
        self.mod = mod
        self.live: set[int] = set()  # ids of live statements
        self.bail = False  # the frame is read dynamically (``locals()``, ``eval``): all live
        self.is_module = is_module
        declared: set[str] = set()
        assigned: dict[str, bool] = {}  # local name -> bound only to fresh values
        dicts: dict[str, bool] = {}  # ... only to new dicts
        captured: set[str] = set()
        #: the statement (or handler) each statement is in, and those holding a live one
        self.parent: dict[int, int] = {}
        self.has_live: set[int] = set()
        #: the function does more than compute its return value and change its parameters
        #: (calls something impure other than the submission's functions, yields, stores into
        #: what it neither created nor was given) ...
        self.acts = False
        #: ... or calls a bare name (or a submission module's function) that may ...
        self.calls: list[ast.Call] = []
        #: ... and the parameters it changes (``rng.normal()``, ``p.x = 1``, ``w += g``)
        self.mutates: set[str] = set()
        self.params = params
        impure: list[ast.Call] = []  # other calls that may act, decided once ``fresh`` is known
        stores: list[tuple[ast.AST, bool]] = []
        for stmt in body:
            if is_module and isinstance(
                stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
            ):
                continue
            for n in walk_own(stmt, mod.skip, mod.kids):
                if type(n) not in NOTED:
                    continue
                if type(n) is ast.Name:  # the most common node: only a dynamic read matters
                    if n.id in DYNAMIC:
                        self.bail = self.acts = True
                    continue
                if isinstance(n, ast.stmt | ast.ExceptHandler):
                    for f in ("body", "orelse", "finalbody", "handlers"):
                        for c in getattr(n, f, ()):
                            self.parent[id(c)] = id(n)
                if isinstance(n, ast.Call):
                    if isinstance(n.func, ast.Name) and n.func.id not in PURE_BUILTINS:
                        self.calls.append(n)
                    elif dotted(n.func) in mod.imported:
                        self.calls.append(n)  # ``helpers.f(...)``
                    elif not mod.pure_call(n):
                        impure.append(n)
                elif isinstance(n, ast.Yield | ast.YieldFrom | ast.Await | ast.NamedExpr):
                    self.acts = True
                if isinstance(n, ast.Global | ast.Nonlocal):
                    declared.update(n.names)
                    self.acts = True
                elif isinstance(n, ast.Name) and n.id in DYNAMIC:
                    self.bail = self.acts = True
                elif not is_module and isinstance(
                    n, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
                ):
                    captured |= {x.id for x in walk(n, mod.kids) if isinstance(x, ast.Name)}
                if isinstance(n, ast.Assign | ast.AugAssign | ast.AnnAssign):
                    aug = isinstance(n, ast.AugAssign)
                    for t in n.targets if isinstance(n, ast.Assign) else [n.target]:
                        stores.extend((x, aug) for x in store_names(t))
                if isinstance(n, ast.Assign):
                    fresh = is_fresh(n.value)
                    for t in n.targets:
                        single = isinstance(t, ast.Name)
                        for s in store_names(t):
                            if isinstance(s, ast.Name):
                                assigned[s.id] = assigned.get(s.id, True) and fresh and single
                                dicts[s.id] = dicts.get(s.id, True) and single
                                dicts[s.id] &= is_new_dict(n.value)
                elif isinstance(n, ast.AnnAssign | ast.AugAssign) and isinstance(
                    n.target, ast.Name
                ):
                    fresh = isinstance(n, ast.AnnAssign) and is_fresh(n.value)
                    assigned[n.target.id] = assigned.get(n.target.id, True) and fresh
                elif isinstance(n, ast.For | ast.AsyncFor | ast.With | ast.AsyncWith):
                    targets = (
                        [n.target]
                        if isinstance(n, ast.For | ast.AsyncFor)
                        else [i.optional_vars for i in n.items if i.optional_vars is not None]
                    )
                    for t in targets:
                        for s in store_names(t):
                            if isinstance(s, ast.Name):
                                assigned[s.id] = False
                elif isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name):
                    assigned[n.target.id] = False
        self.nonlocal_ = declared
        self.fresh = {k for k, v in assigned.items() if v and k not in params}
        self.dicts = {k for k, v in dicts.items() if v and assigned.get(k)} & self.fresh
        for x, aug in stores:
            if isinstance(x, ast.Name):
                if aug and x.id not in self.fresh:
                    self._changes(x)
            elif store_base(x) not in self.fresh:
                self._changes(x)
        for call in impure:  # a method of a value it created or was given changes only that
            owner = store_base(call.func.value) if isinstance(call.func, ast.Attribute) else None
            if owner is None or owner in mod.modules:
                self.acts = True
                continue
            for changed in (call.func.value, *changed_arguments(call)):
                self._changes(changed)
        self.locals = set(assigned) | params
        #: names read after the function's end (closures; every global of the module) are live
        self.always = frozenset(captured) | frozenset(assigned if is_module else declared)
        self.loops: list[tuple[set[str], Live]] = []  # (head, exit) of the enclosing loops
        self.extra: Live = frozenset()  # live at every point (a ``try``'s handlers)

    def _acts(self, node: ast.AST, after: Live) -> bool:
        """Whether evaluating ``node`` changes something that is read later (or outside)."""
        changed = self.mod.effects(node, self.fresh)
        return changed is True or any(n in after or n + KEYS in after for n in changed)

    def _changes(self, value: ast.AST) -> None:
        """``value`` may be changed: the function changes its parameter, or acts when it is
        neither its parameter nor a value it created."""
        owner = store_base(value)
        if owner is not None and owner in self.params and owner not in self.nonlocal_:
            self.mutates.add(owner)
        elif not (owner is not None and owner in self.fresh) and not is_fresh(value):
            self.acts = True

    def run(self, body: list[ast.stmt]) -> Live:  # afresh; the names live at its start
        self.live, self.has_live, self.loops, self.extra = set(), set(), [], frozenset()
        self.mod.shadow = set() if self.is_module else self.locals
        self.mod.dicts = set() if self.is_module else self.dicts
        return self.block(body, frozenset())

    # --- statements ------------------------------------------------------------------------
    def block(self, stmts: list[ast.stmt], out: Live) -> Live:
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

    def _target(self, t: ast.AST, after: Live) -> tuple[str | None, set[str], frozenset[str]]:
        """(what of the stored value is needed: ``value``, ``keys`` (of a dict), ``nothing``;
        killed; read) for a store into ``t``; ``None``: the store is dead."""
        if isinstance(t, ast.Name):
            if t.id in self.nonlocal_:
                return "value", set(), frozenset()
            need = "value" if t.id in after else "keys" if t.id + KEYS in after else None
            return need, {t.id, t.id + KEYS}, frozenset()
        reads = self.mod.names(t)
        base = store_base(t)
        if base is not None and base in self.fresh and base not in self.nonlocal_:
            if base in after:
                return "value", set(), reads
            if base + KEYS not in after:
                return None, set(), reads
            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                return "nothing", set(), self.mod.names(t.slice) | {base + KEYS}  # ``d[k] = v``
            return "value", set(), reads
        return "value", set(), reads

    def stmt(self, s: ast.stmt, after: Live) -> Live:
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
                and v.func.attr in MUTATORS
            ):
                base = store_base(v.func.value)
                if base is not None and base in self.fresh:
                    if not {base, base + KEYS} & after and not mod.effectful_args(v):
                        return after  # a container nobody reads, filled
                    self._mark(s)
                    return after | mod.names(v)
            entry = (
                self.is_module
                and isinstance(v, ast.Call)
                and isinstance(v.func, ast.Name)
                and v.func.id not in PURE_BUILTINS
            )  # ``main()`` at module level runs the program, whatever it returns
            if not entry and not self._acts(v, after):
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
            test = constant_test(s.test)
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
                    kill |= _killed(item.optional_vars)
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
            reads = {n.id for n in walk(s, mod.kids) if isinstance(n, ast.Name)}
            if s.name in after or s.decorator_list or s.name in self.always:
                self._mark(s)
                return (after - {s.name}) | reads
            return after
        # imports, global, pass, del, match ...: kept, reading all they name
        self._mark(s)
        return after | {n.id for n in walk(s, mod.kids) if isinstance(n, ast.Name)}

    def _assign(self, s: ast.Assign | ast.AnnAssign | ast.AugAssign, after: Live) -> Live:
        value = s.value
        if value is None:  # ``x: int``
            self._mark(s)
            return after
        targets = (
            [x for t in s.targets for x in store_names(t)]
            if isinstance(s, ast.Assign)
            else store_names(s.target)
        )
        needs = {"value"} if self._acts(value, after) else set()
        kill: set[str] = set()
        reads: set[str] = set()
        for t in targets:
            need, t_kill, t_reads = self._target(t, after)
            needs |= {need} if need else set()
            kill |= t_kill
            reads |= t_reads
        if isinstance(s, ast.AugAssign):
            kill = set()
            if isinstance(s.target, ast.Name):
                reads.add(s.target.id)
                if s.target.id not in self.fresh:
                    needs.add("value")  # ``w += g`` may change the array ``w`` aliases
        if not needs:
            return after
        keys = self.mod.dict_keys(value) if "value" not in needs and "keys" in needs else None
        if keys is not None:
            reads |= keys  # only the keys of the new dict reach
            self.mod.dropped.extend(_dict_values(value))
        elif needs != {"nothing"}:
            reads |= self.mod.names(value)
        else:
            self.mod.dropped.append(value)  # ``d[k] = v``: only the key reaches
        self._mark(s)
        return (after - kill) | reads

    def _try(self, s: ast.Try, after: Live) -> Live:
        fin = self.block(s.finalbody, after) if s.finalbody else after
        orelse = self.block(s.orelse, fin)
        handlers: Live = frozenset()
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

    def _iterated(self, s: ast.For | ast.AsyncFor | ast.While, body: Live) -> frozenset[str]:
        """What a loop's test or iterable reads, ``body`` live at the start of its body."""
        if isinstance(s, ast.While):
            return self.mod.names(s.test)
        return self.mod.key_reads(s.iter, s.target, body) or self.mod.names(s.iter)

    def _loop(self, s: ast.For | ast.AsyncFor | ast.While, after: Live) -> Live:
        test = s.test if isinstance(s, ast.While) else s.iter
        if isinstance(s, ast.While) and constant_test(s.test) is False:
            return self.block(s.orelse, after)
        exit_ = self.block(s.orelse, after) if s.orelse else after
        kill: set[str] = set()
        target_reads: frozenset[str] = frozenset()
        if not isinstance(s, ast.While):
            kill = _killed(s.target)
            if not isinstance(s.target, ast.Name):
                target_reads = self.mod.names(s.target)
        head: set[str] = set(exit_) | self._iterated(s, frozenset())
        for _ in range(20):
            self.loops.append((head, after))
            try:
                body = self.block(s.body, frozenset(head))
            finally:
                self.loops.pop()
            new = head | (body - kill) | target_reads | self._iterated(s, body)
            if new == head:
                break
            head = new
        if self._any_live(s.body) or self.mod.effectful(test):
            self._mark(s)
            return frozenset(head)
        return exit_


def _dict_values(value: ast.AST) -> list[ast.AST]:
    if isinstance(value, ast.Dict):
        return [v for k, v in zip(value.keys, value.values, strict=True) if k is not None]
    return [value.value] if isinstance(value, ast.DictComp) else []


def _killed(target: ast.AST) -> set[str]:
    names = [n.id for n in store_names(target) if isinstance(n, ast.Name)]
    return {*names, *(n + KEYS for n in names)}


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    a = fn.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    names += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    return set(names)


def inert_in_submission(
    trees: dict[str, ast.Module],
    skips: dict[str, set[int]] | None = None,
    dropped: dict[str, list[ast.AST]] | None = None,
) -> dict[str, set[int]]:
    """The ids of the statements whose results reach nothing (see the module's doc) of every
    module of a submission (path -> tree), the functions of one module that another imports
    (``from pkg.helpers import f``, ``import helpers as h``) summarised as the module's own are;
    ``skips``: per path, the statements that did not run; ``dropped`` gets, per path, the parts of
    expressions whose values reach nothing."""
    mods = {p: ModuleFacts(t, (skips or {}).get(p)) for p, t in trees.items()}
    by_name: dict[str, list[str]] = {}
    for p in mods:
        parts = p.removesuffix(".py").removesuffix("/__init__").replace("/", ".").split(".")
        for i in range(len(parts)):
            by_name.setdefault(".".join(parts[i:]), []).append(p)
    for m in mods.values():
        for st in _imports(m.tree):
            base = f"{st.module}." if isinstance(st, ast.ImportFrom) and st.module else ""
            for a in st.names:
                local = a.asname or a.name
                mod = by_name.get(base + a.name, [])  # ``import pkg.helpers as h``
                if len(mod) == 1 and (a.asname or "." not in a.name):
                    m.module_sigs[local] = {k: v[1] for k, v in mods[mod[0]].own.items()}
                    m.imported.update({f"{local}.{k}": (mod[0], k) for k in mods[mod[0]].own})
                mod = by_name.get(base[:-1], []) if base else []
                if len(mod) == 1 and a.name in mods[mod[0]].own:  # ``from .helpers import f``
                    m.sigs.setdefault(local, mods[mod[0]].own[a.name][1])
                    m.imported.setdefault(local, (mod[0], a.name))
    analyses = {
        p: [(fn, _Function(m, fn.body, _params(fn), False)) for fn in m.functions]
        for p, m in mods.items()
    }
    _purity(mods, analyses)
    # what reaches each function's results, to the least fixpoint: a parameter reaches when a
    # live statement reads it, through the calls of the functions summarised so far
    converged = False
    for _ in range(30):  # then every parameter is taken to reach
        changed = False
        for p, m in mods.items():
            m.uses.clear()
            m.dropped = []
            for fn, f in analyses[p]:
                entry = m.own.get(fn.name)
                if entry is None or entry[0] is not fn:
                    continue
                sig = entry[1]
                live = {n.removesuffix(KEYS) for n in f.run(fn.body)}  # keys: the whole
                reach = sig.all if f.bail or sig.stub else live & sig.all
                if not reach <= sig.reach:
                    sig.reach |= reach
                    changed = True
        if not changed:
            converged = True
            break
    else:
        for m in mods.values():
            for _, sig in m.own.values():
                sig.reach = sig.all
    out: dict[str, set[int]] = {}
    for p, m in mods.items():
        if not converged:
            m.uses.clear()
            m.dropped = []
        inert: set[int] = set()
        for fn, f in analyses[p]:
            if f.bail:
                continue
            if not converged or m.own.get(fn.name, (None,))[0] is not fn:
                f.run(fn.body)  # a summarised function's last run is with the final summaries
            inert |= _dead_in(fn.body, f.live)
        top = _Function(m, m.tree.body, set(), True)
        if not top.bail:
            top.run(m.tree.body)
            inert |= _dead_in(m.tree.body, top.live, module=True)
        out[p] = inert
        if dropped is not None:
            dropped[p] = m.dropped
    return out


def _imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """The module's imports in ``ast.walk``'s order, expressions not walked (none holds one)."""
    todo: deque[ast.AST] = deque([tree])
    while todo:
        n = todo.popleft()
        if isinstance(n, ast.Import | ast.ImportFrom):
            yield n
        todo.extend(c for c in children(n) if isinstance(c, _BLOCKS))


_BLOCKS = (ast.stmt, ast.excepthandler, ast.match_case)


def _purity(
    mods: dict[str, ModuleFacts],
    analyses: dict[str, list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, _Function]]],
) -> None:
    """What calling each function does, to a fixpoint over the submission: it acts (on the
    world: a write, a print, a global, anything it calls that does), or it only changes some of
    its parameters (``rng.normal()`` on the generator it is given, through the functions it
    calls too), or it only computes. Sets each module's ``pure_fns`` and ``mutators``, its own
    functions' and those it imports from the submission; a name defined twice is pure only if
    each one is."""
    entries: dict[str, dict[str, list[tuple[_Function, Sig]]]] = {p: {} for p in mods}
    for p, found in analyses.items():
        for fn, f in found:
            own = mods[p].own.get(fn.name)
            sig = own[1] if own is not None and own[0] is fn else Sig(fn)
            sig.acts, sig.mutates = f.acts or bool(fn.decorator_list), set(f.mutates)
            entries[p].setdefault(fn.name, []).append((f, sig))

    def callees(p: str, call: ast.Call) -> list[Sig]:
        name = dotted(call.func)
        if name not in entries[p] and name in mods[p].imported:
            p, name = mods[p].imported[name]
        return [sig for _, sig in entries[p].get(name, [])]

    changed = True
    while changed:
        changed = False
        for p, by_name in entries.items():
            for f, sig in (e for found in by_name.values() for e in found):
                before = (sig.acts, len(sig.mutates))
                for call in f.calls if not sig.acts else ():
                    targets = callees(p, call)
                    sig.acts = sig.acts or not targets or any(t.acts for t in targets)
                    for target in targets:
                        if target is not sig and not sig.acts:
                            _passes_on(f, sig, call, target)
                if (sig.acts, len(sig.mutates)) != before:
                    changed = True
    for p, m in mods.items():
        named = dict(entries[p])
        for local, (src, name) in m.imported.items():
            named.setdefault(local, entries[src].get(name, []))
        for name, found in named.items():
            if found and all(not s.acts and not s.mutates for _, s in found):
                m.pure_fns.add(name)
            elif len(found) == 1 and not found[0][1].acts:
                m.mutators[name] = found[0][1]


def _passes_on(f: _Function, sig: Sig, call: ast.Call, target: Sig) -> None:
    """``f`` calls ``target``, which changes some of its parameters: ``f`` changes its own
    parameters that it passes there, and acts when it passes what is neither its own creation
    nor its parameter."""
    bound = target.bound(call)
    for param in target.mutates:
        value = bound.get(param) if bound is not None else call
        if value is None:
            continue
        owner = store_base(value)
        if owner is not None and owner in f.params and owner not in f.nonlocal_:
            sig.mutates.add(owner)
        elif not (owner is not None and owner in f.fresh) and not is_fresh(value):
            sig.acts = True


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
