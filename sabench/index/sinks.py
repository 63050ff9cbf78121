"""Where the values a Python file writes to a metrics file come from: the sinks (``json.dump``,
``write``/``write_text``, ``print`` into a redirected stdout) of :mod:`sabench.index.provenance`'s
dataflow, and the names of the files a file may write (a file read is a source only when no code
writes it)."""

from __future__ import annotations

import ast
import math

from sabench.index.provenance import Context, Flow, Scope, Traced
from sabench.index.sources import (
    LOADERS,
    NONE,
    basename,
    is_num,
    json_numbers,
    number_items,
    path_text,
    write_mode,
)
from sabench.index.values import DECODED, PARSED, READ, Src

# --- sinks ---------------------------------------------------------------------------------------


def _target(flow: Flow, node: ast.AST | None, scope: Scope) -> str:
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
    flow = Flow(tree, ctx)
    return [t for call, chain in flow.calls for t in _sink(flow, call, chain)]


def _sink(flow: Flow, call: ast.Call, chain: tuple[ast.AST, ...]) -> list[Traced]:
    q = flow.qual(call.func)
    attr = q.rsplit(".", 1)[-1]
    if not (q in ("json.dump", "print", ".write", "sys.stdout.write") or attr.startswith("write_")):
        return []
    if q == "print" and not flow.ctx.stdout_metrics and not call.keywords:
        return []
    scope = flow.scope_of(chain)
    if q == "json.dump" and len(call.args) >= 2:
        where = _file_target(flow, call.args[1], scope)
        payload, text = call.args[0], False
    elif q.startswith(".") and attr in ("write_text", "write_bytes") and call.args:
        where = _target(flow, call.func.value, scope)  # type: ignore[attr-defined]
        payload, text = call.args[0], True
    elif attr == "write" and call.args and q in (".write", "sys.stdout.write"):
        owner = call.func.value  # type: ignore[attr-defined]
        where = "stdout" if q == "sys.stdout.write" else _file_target(flow, owner, scope)
        payload, text = call.args[0], True
    elif q == "print" and call.args:
        dest = next((k.value for k in call.keywords if k.arg == "file"), None)
        where = "stdout" if dest is None else _file_target(flow, dest, scope)
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


def _file_target(flow: Flow, node: ast.AST, scope: Scope, depth: int = 0) -> str:
    """Where a file object writes (``with open(p, "w") as f``): a name bound to several opens
    writes where they all agree."""
    if isinstance(node, ast.Name):
        owner = scope.lookup(node.id)
        binds = owner.binds.get(node.id, []) if owner else []
        if not binds or depth > 8 or any(b[0] != "value" for b in binds):
            return "unknown"
        got = {_file_target(flow, b[1], b[2], depth + 1) for b in binds}
        return got.pop() if len(got) == 1 else "unknown"
    return _target(flow, node, scope)


# --- files some code writes ----------------------------------------------------------------------

_READERS = {"open", "Path", "PurePath", "PosixPath", "print", "str", "len", "repr"}
_READ_METHODS = {"read_text", "read_bytes", "exists", "is_file", "is_dir", "resolve", "stat"}


def written_names(tree: ast.Module) -> set[str]:
    """Base names of the files a Python file may write: any path handed to a call that is not a
    known read (an unknown call may write it)."""
    out: set[str] = set()
    flow = Flow(tree, Context())
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
