"""Any dimension, a split changed: where a claim states a data split (``80/10/10``, ``a 20%
held-out test set``, ``800/200``), the values of the submission that implement it (``test_size=0.2``,
``train_ratio: 0.8``, ``random_split(ds, [0.8, 0.2])``, ``int(0.8 * n)``, ``n_val = 200``) moved:
every held-out share grows by half (0.2 -> 0.3, 0.1 -> 0.15, 200 -> 300) and a training share
stated beside it gives up as much (0.8 -> 0.7), so the parts still add up where the code states
them all."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sabench.drift.mutants import (
    Mutant,
    PyFile,
    Submission,
    apply_edits,
    cited_lines,
    node_name,
    parses,
)
from sabench.drift.values import NUMBER_TOKEN

#: words that say a claim is about a data split
CLAIM_RE = re.compile(
    r"\bsplit(?:s|ting)?\b|\bheld[- ]?out\b|\bhold[- ]?out\b|\bpartition(?:s|ed)?\b"
    r"|\b(?:train(?:ing)?|val(?:idation)?|test|dev)\s*[/:]\s*(?:val(?:idation)?|test|dev)\b"
    r"|\b(?:training|train|validation|val|test|calibration|dev)\s+"
    r"(?:set|fraction|portion|ratio|share|subset|proportion|size|examples|samples)\b"
    r"|\b(?:test_size|train_size|val_split|validation_split|train_ratio|split_ratio)\b",
    re.I,
)
#: how far from a split word a number of the claim may stand to be one of the split's values
WINDOW = 80
#: ``80/10/10``, ``80:20``, ``800/200``: the parts of a split (not ``1/3/5/8`` clicks: 2-3 parts)
_RATIO_RE = re.compile(r"(?<![\w./:])(\d+(?:\.\d+)?)((?:\s*[/:]\s*\d+(?:\.\d+)?){1,2})(?![\w./:%])")
_CLAUSE_RE = re.compile(r"[;\n]|\.(?=\s|$)")

_TRAIN = frozenset({"train", "training", "trn"})
_HELD = frozenset(
    {"val", "valid", "validation", "dev", "test", "testing", "holdout", "heldout", "held"}
    | {"calib", "calibration", "cal"}
)
_SPLIT = frozenset({"split", "splits"})
_QTY = frozenset(
    {"size", "sizes", "ratio", "ratios", "frac", "fraction", "fractions", "pct", "percent"}
    | {"percentage", "portion", "proportion", "prop", "share", "n", "num", "number", "count"}
    | {"samples", "examples", "len", "length", "idx", "index", "end", "cut", "point", "amount"}
)
#: names with these words hold something else (a batch of the test set, the number of splits)
_NOT_SPLIT = frozenset(
    {"batch", "crop", "image", "img", "patch", "kernel", "hidden", "embed", "vocab", "window"}
    | {"chunk", "step", "steps", "epoch", "epochs", "lr", "resolution", "res", "seq", "token"}
    | {"tokens", "buffer", "beam", "micro", "grad", "accum", "seed", "state", "workers", "k"}
    | {"folds", "fold", "freq", "interval", "every", "log", "print", "save", "max", "min"}
)
_COUNTS = frozenset({"n", "num", "number", "count"})
_PCT = frozenset({"pct", "percent", "percentage"})
_ROUNDERS = frozenset({"int", "round", "floor", "ceil"})


def _words(name: str) -> set[str]:
    out: set[str] = set()
    for chunk in re.split(r"[^0-9A-Za-z]+", name):
        for part in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", chunk):
            out.add(part.lower())
    return out


def split_role(name: str) -> str | None:
    """What a setting's name says of its split value: ``train`` (a training share), ``held`` (a
    validation, test or calibration share), ``""`` (a split, side unnamed: ``split_idx``,
    ``random_split``), None when the name is no split's (``batch_size``, ``n_splits``)."""
    words = _words(name)
    if words & _NOT_SPLIT:
        return None
    train, held, qty, spl = words & _TRAIN, words & _HELD, words & _QTY, words & _SPLIT
    if not ((train or held) and (qty or spl)) and not (spl and not words & _COUNTS):
        return None
    if train and not held:
        return "train"
    return "held" if held and not train else ""


# --------------------------------------------------------------------------------------------
# What the claim states
# --------------------------------------------------------------------------------------------


@dataclass
class SplitClaim:
    """The values of a claimed split: shares (0-1), part sizes, and the totals of the sizes
    stated as one ratio (``800/200``: 1000)."""

    shares: set[float]
    sizes: set[int]
    totals: set[int]

    def matches(self, site: Site) -> bool:
        """Whether a site holds a value of the split: a share or a size the claim states, or
        the rest of a held-out share where the site holds the training side (``20% held out``:
        ``train_ratio = 0.8``)."""
        if site.size:
            return int(site.value) in self.sizes
        share = site.share
        if not 0 < share < 1:
            return False
        pool = set(self.shares)
        if site.role == "train" or (site.role == "" and share >= 0.5):
            pool |= {1 - s for s in self.shares}
        return any(abs(share - s) < 1e-9 for s in pool)


def claimed_split(text: str) -> SplitClaim | None:
    """The split a claim states, from the numbers within ``WINDOW`` characters of a split word in
    the same clause: ratios (``80/10/10``, ``80:20``; ``800/200`` gives sizes and shares),
    percentages and fractions; sizes written apart (``1000 calibration and 3952 test examples``)
    where two sides of the split have one. None without a split word or without such a number: a
    lone count (``1000 calibration examples``) is a value, not a split."""
    from sabench.values import extract_numbers

    hits = [m.start() for m in CLAIM_RE.finditer(text)]
    if not hits:
        return None
    bounds = [0, *(m.end() for m in _CLAUSE_RE.finditer(text)), len(text) + 1]

    def clause(pos: int) -> int:
        return next(i for i, b in enumerate(bounds) if b > pos)

    def near(start: int, end: int) -> bool:
        return any(
            clause(h) == clause(start) and (start - WINDOW <= h <= end + WINDOW) for h in hits
        )

    out = SplitClaim(set(), set(), set())
    taken: list[tuple[int, int]] = []
    for m in _RATIO_RE.finditer(text):
        if not near(m.start(), m.end()):
            continue
        parts = [float(m.group(1)), *(float(x) for x in re.findall(r"\d+(?:\.\d+)?", m.group(2)))]
        total = sum(parts)
        if abs(total - 100) < 1e-6:
            out.shares.update(p / 100 for p in parts)
        elif abs(total - 1) < 1e-6:
            out.shares.update(parts)
        elif all(p == int(p) and p >= 2 for p in parts):
            out.sizes.update(int(p) for p in parts)
            out.totals.add(int(total))
            out.shares.update(p / total for p in parts)
        else:
            continue
        taken.append((m.start(), m.end()))
    apart: dict[str, set[int]] = {}
    for n in extract_numbers(text):
        if any(a <= n.start < b for a, b in taken) or not near(n.start, n.end):
            continue
        if 0 < n.value < 1:  # 0.2, 20%
            out.shares.add(n.value)
        elif n.value == int(n.value) and n.value >= 2 and not 1950 <= n.value <= 2035:
            side = _words(text[max(0, n.start - 30) : n.end + 20]) & (_TRAIN | _HELD)
            for w in side:
                apart.setdefault(w, set()).add(int(n.value))
    if len(apart) >= 2:
        out.sizes.update(v for vs in apart.values() for v in vs)
    return out if out.shares or out.sizes else None


# --------------------------------------------------------------------------------------------
# Where the code states a split
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Site:
    """One number of the code that states a split share or size."""

    path: str
    start: int
    end: int
    line: int
    value: float
    is_int: bool
    role: str
    name: str
    group: tuple[Any, ...]
    pct: bool = False

    @property
    def share(self) -> float:
        return self.value / 100 if self.pct else self.value

    @property
    def size(self) -> bool:
        """A count of examples (an integer literal not named as a percentage)."""
        return self.is_int and not self.pct and self.value >= 2


def _num(node: ast.AST) -> float | None:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value > 0:
        return float(node.value)
    return None


def _target_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Subscript):
        key = node.slice
        return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None
    return node_name(node)


def _default_name(args: ast.arguments, node: ast.AST) -> str | None:
    positional = [*args.posonlyargs, *args.args]
    for arg, default in zip(
        positional[len(positional) - len(args.defaults) :], args.defaults, strict=True
    ):
        if default is node:
            return arg.arg
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if kw_default is node:
            return arg.arg
    return None


def _holder(pf: PyFile, node: ast.AST, depth: int = 0) -> tuple[str, tuple[Any, ...]] | None:
    """The name that holds a literal (keyword, target, dict key, parameter, splitting call) and
    the group of literals stated together with it (one call, dict, signature or list)."""
    parent = pf.parents.get(id(node))
    if parent is None or depth > 3:
        return None
    if isinstance(parent, ast.keyword) and parent.arg:
        call = pf.parents.get(id(parent))
        if parent.arg == "default" and isinstance(call, ast.Call):
            fname = node_name(call.func) or ""
            opt = next(
                (
                    a.value
                    for a in call.args
                    if isinstance(a, ast.Constant) and isinstance(a.value, str)
                ),
                None,
            )
            if fname == "add_argument" and opt:
                return opt, ("arg", id(call))
        return parent.arg, ("call", id(call))
    if isinstance(parent, ast.Call) and node in parent.args:
        fname = node_name(parent.func) or ""
        if fname in ("get", "pop", "setdefault") and len(parent.args) == 2:
            key = parent.args[0]
            recv = node_name(parent.func.value) if isinstance(parent.func, ast.Attribute) else ""
            words = (
                key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else ""
            )
            return f"{recv or ''}_{words}", ("get", id(parent))
        return fname, ("call", id(parent))
    if isinstance(parent, ast.Assign | ast.AnnAssign) and parent.value is node:
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        name = next((n for n in map(_target_name, targets) if n), None)
        return (name, ("assign", id(parent))) if name else None
    if isinstance(parent, ast.Dict) and node in parent.values:
        key = parent.keys[parent.values.index(node)]
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return None
        outer = _holder(pf, parent, depth + 1)
        return f"{outer[0] if outer else ''}_{key.value}", ("dict", id(parent))
    if isinstance(parent, ast.arguments):
        name = _default_name(parent, node)
        return (name, ("def", id(parent))) if name else None
    return None


def _rounded_holder(pf: PyFile, binop: ast.BinOp) -> tuple[str, tuple[Any, ...]] | None:
    """``int(0.8 * n)``, ``round(n * 0.1)``: the name the rounded count is held by, or ``slice``
    where it cuts an array (``X[: int(0.8 * n)]``)."""
    cur: ast.AST = binop
    parent = pf.parents.get(id(cur))
    rounded = False
    while isinstance(parent, ast.Call) and (node_name(parent.func) or "") in _ROUNDERS:
        rounded, cur = True, parent
        parent = pf.parents.get(id(cur))
    if not rounded:
        return None
    up: ast.AST | None = cur
    while up is not None and not isinstance(up, ast.stmt):
        if isinstance(up, ast.Slice):
            return "split_slice", ("slice", id(up))
        up = pf.parents.get(id(up))
    return _holder(pf, cur)


def _sliced_holder(pf: PyFile, bound: ast.Slice) -> tuple[str, tuple[Any, ...]] | None:
    """``train_idx = order[:800]``, ``val_idx = order[800:1000]``: a part cut at a literal
    bound, named by what it is assigned to."""
    sub = pf.parents.get(id(bound))
    if not isinstance(sub, ast.Subscript):
        return None
    held = _holder(pf, sub)
    return (held[0], ("cut", id(bound))) if held is not None else None


def python_sites(pf: PyFile) -> list[Site]:
    """Every literal of a Python file that states a split share or size."""
    out: list[Site] = []
    for node in ast.walk(pf.tree):
        value = _num(node)
        if value is None:
            continue
        parent = pf.parents.get(id(node))
        held: tuple[str, tuple[Any, ...]] | None
        if isinstance(parent, ast.List | ast.Tuple):
            if not 2 <= len(parent.elts) <= 4 or any(_num(e) is None for e in parent.elts):
                continue
            held = _holder(pf, parent)
            if held is not None:
                held = (held[0], ("list", id(parent)))
        elif isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Mult):
            other = parent.right if parent.left is node else parent.left
            if not 0 < value < 1 or _num(other) is not None:
                continue
            held = _rounded_holder(pf, parent)
        elif isinstance(parent, ast.Slice) and isinstance(node.value, int):  # type: ignore[attr-defined]
            held = _sliced_holder(pf, parent)
        else:
            held = _holder(pf, node)
        if held is None:
            continue
        role = split_role(held[0])
        if role is None:
            continue
        if held[1][0] == "cut":
            role = ""  # a bound is where a part ends, whichever part the slice takes
        a, b = pf.span(node)
        pct = bool(_words(held[0]) & _PCT) and 1 <= value < 100
        out.append(
            Site(
                pf.path,
                a,
                b,
                node.lineno,  # type: ignore[attr-defined]
                value,
                isinstance(node.value, int),  # type: ignore[attr-defined]
                role,
                held[0],
                (pf.path, *held[1]),
                pct,
            )
        )
    return out


def config_sites(sub: Submission) -> list[Site]:
    """The split settings of config files (YAML, JSON, INI, shell): one number per key, a list's
    numbers as one group, the keys of one section as one group."""
    out: list[Site] = []
    for fact in sub.index.facts:
        if fact.file not in sub.texts or fact.file.endswith(".py") or not fact.numbers:
            continue
        role = split_role(fact.name)
        if role is None:
            continue
        lines = sub.texts[fact.file].splitlines(keepends=True)
        if not 0 < fact.line <= len(lines):
            continue
        start = sum(len(x) for x in lines[: fact.line - 1])
        text = lines[fact.line - 1]
        key_end = text.find(fact.name.rsplit(".", 1)[-1])
        tokens = [m for m in NUMBER_TOKEN.finditer(text) if m.start() > key_end]
        wanted = list(fact.numbers)
        group = (fact.file, "list" if len(wanted) > 1 else "key", fact.line)
        for m in tokens:
            token = m.group(0).lstrip("+-")
            try:
                v = float(token.replace("_", ""))
            except ValueError:
                continue
            if not wanted or abs(v - wanted[0]) > 1e-9 or v <= 0:
                continue
            wanted.pop(0)
            a = start + m.end() - len(token)
            is_int = re.fullmatch(r"\d[\d_]*", token) is not None
            pct = bool(_words(fact.name) & _PCT) and 1 <= v < 100
            out.append(
                Site(
                    fact.file, a, start + m.end(), fact.line, v, is_int, role, fact.name, group, pct
                )
            )
    return out


# --------------------------------------------------------------------------------------------
# The new values
# --------------------------------------------------------------------------------------------


def _fmt(value: float, is_int: bool) -> str:
    if is_int:
        return str(round(value))
    return repr(float(f"{value:.10g}"))


def new_value(site: Site, stated: SplitClaim) -> str | None:
    """A part of the split moved alone: a held-out share grows by half (0.2 -> 0.3) and a
    training share gives up half of the rest (0.8 -> 0.7), so that parts stated apart still add
    up; a held-out size grows by half (200 -> 300), a training size gives up as much of its
    ratio's total (800 of 800/200 -> 700)."""
    if site.size:
        total = next((t for t in sorted(stated.totals) if t > site.value), None)
        train = site.role == "train" or (site.role == "" and total and site.value > total / 2)
        if not train:
            return _fmt(site.value * 1.5, True)
        return _fmt(site.value - 0.5 * (total - site.value), True) if total else None
    share = site.share
    if site.role == "train" or (site.role == "" and share >= 0.5):
        new = share - 0.5 * (1 - share)
    else:
        new = share * 1.5
    if not 0 < new < 1:
        return None
    return _fmt(new * 100 if site.pct else new, site.is_int and float(new * 100).is_integer())


def list_values(parts: list[Site]) -> dict[Site, str]:
    """The parts of one list (``random_split(ds, [0.8, 0.2])``, ``split: [0.8, 0.1, 0.1]``,
    ``[800, 200]``) move together: each part but the largest grows by half and the largest gives
    up as much, so the list keeps its total."""
    big = max(parts, key=lambda s: s.value)
    out: dict[Site, str] = {}
    moved = 0.0
    for s in parts:
        if s is big:
            continue
        grown = round(s.value * 1.5) if s.size else s.value * 1.5
        moved += grown - s.value
        out[s] = _fmt(grown, s.size)
    rest = big.value - moved
    if rest <= 0:
        return {}
    out[big] = _fmt(rest, big.size)
    return out


# --------------------------------------------------------------------------------------------
# The mutant
# --------------------------------------------------------------------------------------------


def _key(name: str) -> str:
    return re.sub(r"[^0-9a-z]", "", name.rsplit(".", 1)[-1].lower())


def _in_scope(site: Site, sub: Submission, cited: Sequence[tuple[str, int, int]]) -> bool:
    if site.path in sub.py:
        return site.line in cited_lines(cited, site.path, sub.py[site.path])
    return any(f == site.path and a <= site.line <= b for f, a, b in cited)


def split_mutant(
    sub: Submission, sau: dict[str, Any], claim: Any, cited: Sequence[tuple[str, int, int]] = ()
) -> Mutant | None:
    """The split values of the code that the claim states, moved (``new_values``). With lines
    another judge cited for the claim, the sites within them (and their functions), and the same
    settings elsewhere (a config key and the argument default of one name); without, every site
    holding a value of the claimed split. A part stated with a matched one moves with it."""
    stated = claimed_split(claim.text)
    if stated is None:
        return None
    sites = [s for path in sub.code_files for s in python_sites(sub.py[path])]
    sites += config_sites(sub)
    matched = [s for s in sites if stated.matches(s)]
    if cited:
        inside = [s for s in matched if _in_scope(s, sub, cited)]
        keys = {_key(s.name) for s in inside}
        matched = [s for s in matched if s in inside or _key(s.name) in keys]
    if not matched:
        return None
    new: dict[Site, str] = {}
    lists = {s.group for s in matched if s.group[1] == "list"}
    for group in lists:
        new.update(list_values([s for s in sites if s.group == group]))
    for s in matched:
        if s.group not in lists:
            value = new_value(s, stated)
            if value is not None:
                new[s] = value
    edits: dict[str, list[tuple[int, int, str]]] = {}
    for s, text in new.items():
        if sub.texts[s.path][s.start : s.end] != text:
            edits.setdefault(s.path, []).append((s.start, s.end, text))
    files = {}
    for path, file_edits in edits.items():
        changed = apply_edits(sub.texts[path], file_edits)
        if (
            changed is not None
            and changed != sub.texts[path]
            and parses(path, changed, sub.texts[path])
        ):
            files[path] = changed
    if not files:
        return None
    done = sorted((s for s in new if s.path in files), key=lambda s: (s.path, s.start))
    first = done[0]
    where = ", ".join(
        f"`{s.name}` {sub.texts[s.path][s.start : s.end]} -> {new[s]} ({s.path}:{s.line})"
        for s in done[:4]
    )
    more = f" and {len(done) - 4} more" if len(done) > 4 else ""
    return Mutant(
        str(sau["sau_id"]),
        str(sau["dimension"]),
        "split",
        first.path,
        first.line,
        f"split moved: {where}{more}",
        files,
    )
