"""The values of :mod:`sabench.index.provenance`: where a value comes from when it is no
computation, how several possible values join, and how a container merges what a call puts in it.

A dict is tracked by its entries (``items``): a key bound by a store, a literal or a merge names
where that entry comes from. A dict whose other entries are unknown (loaded, computed, changed by
an unknown key) is ``open``: its known entries still name their sources, since a merge puts them
in whatever the dict held. ``None`` is a computed value (or one of unknown source).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from sabench.index.sources import NONE, is_num

#: Provenance classes, weakest first: the strongest source names a combined value.
LITERAL, ARITH, PARSED, DECODED, READ = range(5)


@dataclass(frozen=True)
class Src:
    """A value that is no computation: where it comes from (``how``), its class, the line of its
    source, its concrete value when known, the entries of a dict built with constant keys (and
    whether it holds others, ``open``), and whether it is a number (a value of unknown type is
    reported only then)."""

    how: str
    rank: int
    line: int
    const: Any = NONE
    items: dict[str, Src | None] | None = field(default=None, compare=False)
    num: bool = False
    open: bool = False


def solid(v: Src | None) -> bool:
    """No part of the value is computed (a dict with a computed or unknown entry is not)."""
    if v is None or v.open:
        return False
    return v.items is None or all(solid(i) for i in v.items.values())


def join(vals: list[Src | None]) -> Src | None:
    """Several possible values (branches, bindings, operands): no computation only if none is."""
    if not vals or any(v is None for v in vals):
        return None
    srcs: list[Src] = [v for v in vals if v is not None]
    top = max(srcs, key=lambda s: s.rank)
    if len(srcs) == 1:
        return top
    if all(s.items is not None for s in srcs):
        return _union(srcs)
    consts = [s.const for s in srcs]
    same = all(c is not NONE and is_num(c) and c == consts[0] for c in consts)
    num = all(s.num or is_num(s.const) for s in srcs)
    return Src(top.how, top.rank, top.line, consts[0] if same else NONE, None, num)


def _union(dicts: list[Src]) -> Src:
    """One of several dicts: an entry comes from what each dict holding it binds (an open dict
    may hold any key, computed)."""
    keys = dict.fromkeys(k for d in dicts for k in d.items or {})
    items: dict[str, Src | None] = {}
    for k in keys:
        arms = [d.items[k] if d.items and k in d.items else None for d in dicts if _has(d, k)]
        items[k] = join(arms)
    return Src("a literal", LITERAL, dicts[0].line, items=items, open=any(d.open for d in dicts))


def _has(d: Src, key: str) -> bool:
    return d.open or bool(d.items and key in d.items)


def empty_dict(line: int = 0) -> Src:
    return Src("a literal", LITERAL, line, items={})


def entries(v: Src | None) -> tuple[dict[str, Src | None], bool] | None:
    """A dict value's entries and whether it holds others; None for no dict of known keys."""
    if v is None:
        return None
    if v.items is not None:
        return dict(v.items), v.open
    if isinstance(v.const, dict) and ARITH < v.rank < READ:  # a file's entries: read whole
        return {str(k): _entry(v, c) for k, c in v.const.items()}, False
    return None


def _entry(v: Src, c: Any) -> Src:
    return Src(v.how, v.rank, v.line, c, None, is_num(c))


def _base(cur: Src | None) -> tuple[dict[str, Src | None], bool]:
    """The entries a container holds before a change: a value of no known keys is open."""
    got = entries(cur)
    return got if got is not None else ({}, True)


def merge(cur: Src | None, x: Src | None) -> Src | None:
    """``cur`` updated with ``x`` (``d.update(x)``, ``d | x``, ``{**d, **x}``): ``x``'s entries
    replace ``cur``'s; an ``x`` of unknown keys may replace any entry."""
    got = entries(x)
    if got is None:
        if x is not None and cur is not None and cur.items == {} and not cur.open:
            return x  # into an empty dict: the dict is ``x``
        return None
    add, add_open = got
    items, is_open = _base(cur)
    if add_open:  # unknown entries of ``x``, computed, may replace any of ``cur``'s
        items = dict.fromkeys(items)
    items.update(add)
    return Src("a literal", LITERAL, x.line if x else 0, items=items, open=is_open or add_open)


def literal_src(value: Any, how: str, line: int) -> Src:
    """A value of literals alone (``how``): a dict's entries each a value of their own."""
    if isinstance(value, dict):
        items = {str(k): literal_src(v, how, line) for k, v in value.items()}
        return Src(how, ARITH, line, items=items)
    return Src(how, ARITH, line, value, None, is_num(value))


def put_unknown(cur: Src | None) -> Src:
    """``cur`` after a store at a key not known (``d[f"{name}.acc"] = v``): any entry may be
    overwritten and others added; entries stored after it under known keys are known again."""
    return Src("a literal", LITERAL, 0, items=dict.fromkeys(_base(cur)[0]), open=True)


def put(cur: Src | None, path: tuple[str, ...], value: Src | None) -> Src:
    """``cur`` with ``value`` stored at a key path (``d["a"]["b"] = value``)."""
    items, is_open = _base(cur)
    if len(path) > 1:
        value = put(items.get(path[0]) if path[0] in items else _fresh(is_open), path[1:], value)
    items[path[0]] = value
    return Src("a literal", LITERAL, 0, items=items, open=is_open)


def _fresh(is_open: bool) -> Src | None:
    """An entry not known to be there: an empty dict, or one of unknown entries."""
    return None if is_open else empty_dict()


def setdefault(cur: Src | None, key: str | None, x: Src | None) -> Src | None:
    """``cur.setdefault(key, x)``: ``x`` only where the key is known not to be there."""
    items, is_open = _base(cur)
    if key is None:  # an unknown key: some entry of unknown name
        return Src("a literal", LITERAL, 0, items=items, open=True)
    if key not in items and not is_open:
        items[key] = x
    return Src("a literal", LITERAL, 0, items=items, open=is_open)


def extend(cur: Src | None, x: Src | None, one: bool) -> Src | None:
    """A list ``cur`` with ``x`` appended (``one``) or its elements added: its elements come from
    what it held and from ``x``."""
    if cur is None or x is None:
        return None
    num = x.num or is_num(x.const)
    if not one and isinstance(x.const, list):
        num = num or (bool(x.const) and all(is_num(c) for c in x.const))
    elem = Src(x.how, x.rank, x.line, NONE, None, num)
    if cur.const == [] and cur.rank == LITERAL and cur.items is None:
        return elem  # into an empty list: its elements are ``x``'s
    if cur.items is not None:
        return None
    return join([replace(cur, const=NONE), elem])
