"""Evidence search over the index: where a claim's terms and names occur in a submission, and the
best small windows of code that cover them."""

from __future__ import annotations

import ast
import bisect
import re
from collections import defaultdict
from dataclasses import dataclass, field

from sabench.index import (
    CODE,
    CONFIG,
    CodeIndex,
    Fact,
    Function,
    chunk_info,
    squash,
    text_terms,
)
from sabench.index.python_facts import PLACEHOLDER_RE
from sabench.judges.static.claims import entity_keys
from sabench.judges.static.params import RULES

#: class names of interfaces, whose stub methods subclasses implement
_INTERFACE_RE = re.compile(r"^(Base|Abstract)|(Base|Interface|Mixin|Protocol|ABC)$")
#: a value that reads a setting: ``args.lr``, ``cfg["lr"]``, ``lr``
_READ_RE = re.compile(r"(?:^|\.)([A-Za-z_]\w*)$|\[['\"](\w+)['\"]\]$")
#: an assignment of a class instance: ``TopKRouter(`` or ``nn.TopKRouter(``
_INSTANCE_RE = re.compile(r"(?:\w+\.)*([A-Z]\w*)\(")


#: methods that build or run their class: its docstring describes them
_CLASS_BODY_METHODS = frozenset({"__init__", "__post_init__", "forward", "__call__"})


def owner_class(fn: Function) -> str:
    """The name of the class a method is defined in (``""`` for a function)."""
    return fn.qualname.rpartition(".")[0].rpartition(".")[2]


@dataclass
class Presence:
    """Where a term or name occurs: best credit in code/config (0..1), and whether docs/tests have it."""

    credit: float
    docs: bool
    sites: list[tuple[int, int]]
    hits: list[tuple[int, int, float]] = field(default_factory=list)  # code sites with credit


@dataclass
class Window:
    fid: int
    start: int
    end: int
    score: float
    stub: bool


def _held(counts: list[int], weight: float, credit: tuple[float, float, float]) -> float:
    """A term's credit in a window from the count of its hits there of each kind (module-level
    comment or dead code, comment of running code, code): its best kind's."""
    for kind in (2, 1, 0):
        if counts[kind]:
            return weight * credit[kind]
    return 0.0


class SubmissionContext:
    """One submission's index plus caches shared by all its claims."""

    def __init__(self, index: CodeIndex) -> None:
        self.index = index
        self.term_cache: dict[str, Presence] = {}
        self.key_cache: dict[str, Presence] = {}
        self.sorted_terms = sorted(index.term_chunks)
        self.code_fids = {i for i, f in enumerate(index.files) if f.kind in (CODE, CONFIG)}
        self.has_code = any(index.files[i].lines for i in self.code_fids)
        # innermost function of every code line: for stub checks and comment credit
        self.func_at: dict[int, list[int]] = {}
        fid_of = {f.path: i for i, f in enumerate(index.files)}
        self.fid_of = fid_of
        for fi, fn in sorted(
            enumerate(index.functions), key=lambda x: (x[1].start, -(x[1].end - x[1].start))
        ):
            fid = fid_of.get(fn.file)
            if fid is None:
                continue
            arr = self.func_at.setdefault(fid, [-1] * (len(index.files[fid].lines) + 2))
            for ln in range(fn.start, min(fn.end, len(arr) - 1) + 1):
                arr[ln] = fi
        self.by_name: dict[str, list[Function]] = defaultdict(list)
        #: name -> where the code computes it (formulas.defining_expressions)
        self.defining: dict[str, list[tuple[ast.expr, int, int]]] = {}
        #: (file, first line) of a function -> its statements' formulas written in steps, by line
        #: (formulas.stepwise_statements)
        self.stepwise: dict[tuple[str, int], dict[int, list[str]]] = {}
        #: (file, first line, last line) -> the function parsed (formulas.function_tree)
        self.function_trees: dict[tuple[str, int, int], ast.Module | None] = {}
        #: names the code binds to one number, and that number (formulas.bound_numbers)
        self.bound: dict[str, float] | None = None
        for fn in index.functions:
            self.by_name[fn.name].append(fn)
        self.facts_by_value: dict[float, list[Fact]] = defaultdict(list)
        for fact in index.facts:
            fid = fid_of.get(fact.file)
            if fid is not None and (fid, fact.line) in index.unread:
                continue  # a value nothing reads (see CodeIndex.mark_unread) names nothing
            for v in fact.numbers:
                self.facts_by_value[rounded_value(v)].append(fact)
        self._credits: dict[int, list[float]] = {}
        self.callers: dict[str, list[int]] = defaultdict(list)
        for fi, fn in enumerate(index.functions):
            for callee, _ in fn.calls:
                self.callers[callee].append(fi)
        #: a class's methods that run when it is called (``Loss()(x)``, ``self.loss(x)``)
        self.call_methods: dict[str, list[Function]] = defaultdict(list)
        #: a class's constructor, which receives what ``Model(lr=...)`` passes
        self.constructors: dict[str, list[Function]] = defaultdict(list)
        for fn in index.functions:
            owner = owner_class(fn)
            if owner and fn.name in ("forward", "__call__"):
                self.call_methods[owner].append(fn)
            elif owner and fn.name == "__init__":
                self.constructors[owner].append(fn)
        #: keyword arguments by the name their value reads (``T=args.T`` under ``T``)
        self.passed: dict[str, list[Fact]] = defaultdict(list)
        for fact in index.facts:
            m = _READ_RE.search(fact.value) if fact.kind == "kwarg" and fact.context else None
            if m:
                self.passed[m.group(1) or m.group(2)].append(fact)
        # ``self.router = TopKRouter(...)``: a call of ``self.router`` runs TopKRouter's methods
        for fact in index.facts:
            m = _INSTANCE_RE.match(fact.value) if fact.kind == "assign" else None
            attr = fact.name.rpartition(".")[2]
            if m and attr not in self.call_methods and m.group(1) in self.call_methods:
                self.call_methods[attr] = self.call_methods[m.group(1)]
        #: code functions with the terms of their names and docstrings; interface stubs left out
        self.described = self._described()
        self.main_scopes = self._main_scopes()
        self.reachable = self._reachable()
        self._fn_keys: list[tuple[Function, set[str]]] | None = None
        #: named settings that may contradict a claim's value (see :mod:`.numbers`)
        self.settings = [
            f
            for f in index.facts
            if len(f.numbers) == 1
            and fid_of.get(f.file) in self.code_fids
            and any(not t.isdigit() for t in f.terms)
            and not (f.kind == "kwarg" and len([t for t in f.terms if not t.isdigit()]) < 2)
            and not self._counter(f)
        ]
        #: the settings by the first three letters of each word of their names (a name matches a
        #: claim's word when one is the other's prefix: they share those letters)
        self.settings_by_prefix: dict[str, list[Fact]] = defaultdict(list)
        self.settings_order = {f: i for i, f in enumerate(self.settings)}
        for f in self.settings:
            for t in {t[:3] for t in f.terms if not t.isdigit()}:
                self.settings_by_prefix[t].append(f)
        #: tuples and lists of numbers by the last word of their names (``betas=(0.9, 0.999)``
        #: under ``beta``): what a claim's "β1" and "β2" name by position
        self.tuple_settings: dict[str, list[Fact]] = defaultdict(list)
        for f in index.facts:
            if len(f.numbers) > 1 and f.terms and f.value.lstrip()[:1] in ("(", "["):
                self.tuple_settings[f.terms[-1]].append(f)

    def _counter(self, fact: Fact) -> bool:
        """A zero assigned in a function body (``n_iter = 0``, ``self.step = 0``) starts a counter
        or an accumulator; it sets nothing a claim's value could contradict."""
        fid = self.fid_of.get(fact.file)
        return (
            fact.kind == "assign"
            and fact.numbers == (0.0,)
            and fid is not None
            and self.function_at(fid, fact.line) is not None
        )

    def _described(self) -> list[tuple[Function, frozenset[str]]]:
        """The code's functions with what their names and docstrings say, less the stubs that are
        interfaces, not missing work: a method of a base class (``BaseModel``, ``AbstractLoss``,
        ``...Mixin``), or a stub whose name another function implements and whose lines have no
        TODO/placeholder words."""
        implemented = {fn.name for fn in self.index.functions if not fn.stub}
        out = []
        for fn in self.index.functions:
            fid = self.fid_of.get(fn.file)
            if fid not in self.code_fids:
                continue
            if fn.stub:
                owner = owner_class(fn)
                if owner and _INTERFACE_RE.search(owner):
                    continue
                lines = self.index.files[fid].lines[fn.start - 1 : fn.end]
                if fn.name in implemented and not PLACEHOLDER_RE.search("\n".join(lines)):
                    continue
            out.append((fn, self.described_terms(fn)))
        return out

    def described_terms(self, fn: Function) -> frozenset[str]:
        """What a function's name and docstring say; a constructor or the ``forward`` /
        ``__call__`` of a class says what its class's docstring says too (the class is what they
        build and run)."""
        doc = fn.docstring
        if fn.name in _CLASS_BODY_METHODS:
            owner = fn.qualname.rpartition(".")[0]
            doc = f"{doc} {self.index.class_docs.get((fn.file, owner), '')}"
        return frozenset(text_terms(f"{fn.qualname} {doc}"))

    def _main_scopes(self) -> list[Function]:
        """``if __name__ == "__main__":`` blocks as pseudo-functions (their calls, in order)."""
        out = []
        for path, (start, end) in self.index.main_blocks.items():
            calls = [
                (c, ln) for c, ln in self.index.module_calls.get(path, []) if start <= ln <= end
            ]
            out.append(
                Function(
                    "__main__", f"{path}:__main__", path, start, end, False, calls, "", start + 1
                )
            )
        return out

    def _entry_files(self) -> list[str]:
        """Scripts that reproduce.sh (or any shell script) runs; else every file with a main block."""
        return self.index.script_files() or list(self.index.main_blocks)

    def _reachable(self) -> set[str]:
        """Names of the repo functions that the entry points call, directly or not."""
        todo = [c for path in self._entry_files() for c, _ in self.index.module_calls.get(path, [])]
        seen: set[str] = set()
        while todo:
            name = todo.pop()
            if name in seen or name not in self.by_name:
                continue
            seen.add(name)
            for fn in self.by_name[name]:
                todo.extend(c for c, _ in fn.calls)
        return seen

    # --- presence -----------------------------------------------------------------------
    def function_at(self, fid: int, line: int) -> Function | None:
        arr = self.func_at.get(fid)
        if arr is None or line >= len(arr) or arr[line] < 0:
            return None
        return self.index.functions[arr[line]]

    def credits(self, fid: int) -> list[float]:
        """Credit of every line of a file (1-based): code 1, code in a stub 0.5, a comment or
        docstring in a real function ``comment_credit``, elsewhere ``loose_comment_credit``;
        docs/tests 0."""
        arr = self._credits.get(fid)
        if arr is None:
            n = len(self.index.files[fid].lines)
            arr = [0.0] * (n + 2)
            if fid in self.code_fids:
                comment = self.index.files[fid].comment
                unread, dead = self.index.unread, self.index.dead
                funcs = self.func_at.get(fid)
                fns = self.index.functions
                cc, lc = RULES["comment_credit"], RULES["loose_comment_credit"]
                for ln in range(1, n + 1):
                    fi = funcs[ln] if funcs is not None else -1
                    stub = fi >= 0 and fns[fi].stub
                    if comment[ln - 1] or (fid, ln) in unread:  # unread: declared, not used
                        live_function = fi >= 0 and not stub and (fid, ln) not in dead
                        arr[ln] = cc if live_function else lc
                    else:
                        arr[ln] = 0.5 if stub else 1.0
            self._credits[fid] = arr
        return arr

    def site_credit(self, fid: int, line: int) -> float:
        arr = self.credits(fid)
        return arr[line] if 0 < line < len(arr) else 0.0

    def _presence(self, sites: list[tuple[int, int]]) -> Presence:
        best = 0.0
        docs = False
        hits: list[tuple[int, int, float]] = []
        code = self.code_fids
        if self.index.directed:  # text addressed to the judge is never evidence
            sites = [s for s in sites if s not in self.index.directed]
        for fid, ln in sites:
            if fid in code:
                c = self.credits(fid)[ln]
                hits.append((fid, ln, c))
                if c > best:
                    best = c
            else:
                docs = True
        return Presence(best, docs, sites, hits)

    def term(self, t: str) -> Presence:
        p = self.term_cache.get(t)
        if p is None:
            p = self._presence(self.index.term_sites(t))
            if p.credit == 0.0 and len(t) >= 4:
                alt = self._abbreviation_sites(t)
                if alt:
                    q = self._presence(alt)
                    pc = RULES["prefix_credit"]
                    p = Presence(
                        q.credit * pc,
                        p.docs or q.docs,
                        alt,
                        [(f, ln, c * pc) for f, ln, c in q.hits],
                    )
            self.term_cache[t] = p
        return p

    def _abbreviation_sites(self, t: str) -> list[tuple[int, int]]:
        """Sites of code terms that abbreviate ``t`` (``min`` for ``minimum``) or extend it."""
        out: list[tuple[int, int]] = []
        for k in range(len(t) - 1, 2, -1):
            if k < 0.4 * len(t):
                break
            if t[:k] in self.index.term_chunks:
                out.extend(self.index.term_sites(t[:k]))
                break
        i = bisect.bisect_left(self.sorted_terms, t)
        n = 0
        while i < len(self.sorted_terms) and self.sorted_terms[i].startswith(t) and n < 5:
            if self.sorted_terms[i] != t:
                out.extend(self.index.term_sites(self.sorted_terms[i]))
            i += 1
            n += 1
        return out

    def key(self, name: str) -> Presence:
        p = self.key_cache.get(name)
        if p is None:
            sites: list[tuple[int, int]] = []
            for k in entity_keys(name):
                sites.extend(self.index.key_sites(k))
                if sites:
                    break
            p = self._presence(sites)
            self.key_cache[name] = p
        return p

    # --- windows ------------------------------------------------------------------------
    def windows(self, terms: dict[str, float]) -> list[Window]:
        """Best small windows of code by weighted distinct-term coverage, highest first.

        A term counts fully when a window has it on a code line, ``comment_credit`` when only in
        comments of running code or in a stub, ``loose_comment_credit`` when only in module-level
        comments or code nothing runs (a module docstring restating the paper is not where the
        claim is computed); terms on more than ``window_cap`` lines say nothing about where a
        claim is."""
        per_file: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
        names = list(terms)
        cap = int(RULES["window_cap"])
        loose = RULES["loose_comment_credit"]
        for ti, t in enumerate(names):
            hits = self.term(t).hits
            if len(hits) > cap:
                continue
            for fid, ln, c in hits:
                kind = 2 if c >= 1.0 else 1 if c > loose else 0
                if kind == 0 and (fn := self.function_at(fid, ln)) is not None and fn.stub:
                    kind = 1  # a stub's docstring locates its window, for the near-stub rule
                per_file[fid].append((ln, ti, kind))
        w = int(RULES["window_lines"])
        weights = [terms[t] for t in names]
        # a term's credit in a window by its best kind of line there: code, a comment of running
        # code or a stub's line, a module-level comment or code nothing runs
        credit = (loose, RULES["comment_credit"], 1.0)
        out: list[tuple[float, int, Window]] = []
        # Files in order of the most a window of theirs could score (their distinct terms); a file
        # that cannot beat the fifth best window so far is skipped. Ties keep the file order.
        bounds = []
        for order, (fid, hits) in enumerate(per_file.items()):
            seen: dict[int, int] = {}
            for _, ti, kind in hits:
                seen[ti] = max(seen.get(ti, 0), kind)
            bound = sum(weights[ti] * credit[k] for ti, k in seen.items())
            bounds.append((-bound, order, fid))
        bounds.sort()
        for neg_bound, order, fid in bounds:
            if len(out) >= 5 and -neg_bound < -sorted(x[0] for x in out)[4] - 1e-9:
                break
            hits = per_file[fid]
            hits.sort()
            counts = [[0, 0, 0] for _ in names]
            best, b_lo, b_hi = 0.0, 0, 0
            lo = 0
            score = 0.0
            for ln, ti, kind in hits:
                before = _held(counts[ti], weights[ti], credit)
                counts[ti][kind] += 1
                score += _held(counts[ti], weights[ti], credit) - before
                while hits[lo][0] < ln - w:
                    _, l_ti, l_kind = hits[lo]
                    before = _held(counts[l_ti], weights[l_ti], credit)
                    counts[l_ti][l_kind] -= 1
                    score += _held(counts[l_ti], weights[l_ti], credit) - before
                    lo += 1
                if score > best:
                    best, b_lo, b_hi = score, hits[lo][0], ln
            if best > 0:
                fn = self.function_at(fid, b_lo)
                stub = fn is not None and fn.stub and b_hi <= fn.end
                out.append((-best, order, Window(fid, b_lo, b_hi, best, stub)))
        out.sort(key=lambda x: (x[0], x[1]))
        return [x[2] for x in out[:5]]

    # --- functions ----------------------------------------------------------------------
    def flows_into_stub(self, fact: Fact) -> Function | None:
        """The stub a setting's value is passed to, when every call that passes it by keyword
        (``Model(T=args.T)``) is a repo function or class whose code is a stub: the value is
        configured and handed over, and nothing computes with it. None when any call is real
        (or a library's), or none passes it."""
        found = None
        for kw in self.passed.get(fact.setting, ()):
            callee = kw.context[-1]
            defs = self.by_name.get(callee) or self.constructors.get(callee)
            if not defs or not all(f.stub for f in defs):
                return None
            found = found or defs[0]
        return found

    def stub_callees(self, fid: int, start: int, end: int) -> list[Function]:
        """Repo functions called from lines ``start..end`` whose every definition is a stub:
        the evidence is the code a window runs, not only the words it holds. A call of a class
        resolves to its ``forward`` / ``__call__``; a window in another method of a class (its
        ``__init__`` setting up the layers) runs through the class's ``forward`` / ``__call__``."""
        fn = self.function_at(fid, start)
        calls = (
            fn.calls
            if fn is not None
            else self.index.module_calls.get(self.index.files[fid].path, [])
        )
        out: list[Function] = []
        method = fn or self.function_at(fid, end)  # a window from a ``class`` line into a method
        owner = owner_class(method) if method is not None else ""
        runs = self.call_methods.get(owner, []) if owner else []
        if (
            runs
            and fn not in runs
            and all(f.stub for f in runs)
            and not _INTERFACE_RE.search(owner)
        ):
            out.append(runs[0])
        for name, line in calls:
            if not start <= line <= end:
                continue
            defs = [
                f
                for f in self.by_name.get(name) or self.call_methods.get(name) or ()
                if self.fid_of.get(f.file) in self.code_fids
            ]
            if defs and all(f.stub for f in defs) and defs[0] not in out:
                out.append(defs[0])
        return out

    def class_line(self, fn: Function) -> int | None:
        """The ``class`` line of a method's class (the nearest one above it), None for a function:
        a class header names what its methods implement."""
        owner = owner_class(fn)
        fid = self.fid_of.get(fn.file)
        if not owner or fid is None:
            return None
        lines = self.index.files[fid].lines
        pattern = re.compile(rf"\s*class\s+{re.escape(owner)}\b")
        return next((k for k in range(fn.start - 1, 0, -1) if pattern.match(lines[k - 1])), None)

    def functions_for(self, name: str) -> list[Function]:
        """Functions a claim's name refers to: ``r2`` -> ``r2_score``, ``k-means++`` -> ``kmeans_pp``."""
        if self._fn_keys is None:
            self._fn_keys = [
                (fn, {*chunk_info(fn.name)[1], squash(fn.name)})
                for fn in self.index.functions
                if self.fid_of.get(fn.file) in self.code_fids
            ]
        for k in entity_keys(name):  # most specific spelling first
            out = [fn for fn, keys in self._fn_keys if k in keys]
            if out:
                return out
        return []


def rounded_value(v: float) -> float:
    return float(f"{v:.9g}")
