"""D3, a dataset, baseline or metric removed from the code and config."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from typing import Any

from sabench.drift.mutants import (
    SIMPLE_STMTS,
    Mutant,
    PyFile,
    Submission,
    apply_edits,
    body_lists,
    is_docstring,
    name_matches,
    node_name,
    parses,
)


def removal_edits(pf: PyFile, keys: Sequence[str]) -> list[tuple[int, int, str]]:
    """Edits that remove every element, entry, definition or statement naming one of ``keys``."""
    spans: list[tuple[int, int, str]] = []
    emptied: dict[int, set[int]] = {}  # body list -> its statements removed so far

    def drop_stmt(stmt: ast.stmt) -> None:
        body = next((b for b in body_lists(pf.parents.get(id(stmt), pf.tree)) if stmt in b), None)
        last = stmt.end_lineno or stmt.lineno
        a, b = pf.line_span(stmt.lineno, last)
        line_text = pf.text[a:b]
        # only whole-line statements are removed (not `a = 1; b = 2`)
        if pf.text[a : pf.offset(stmt.lineno, stmt.col_offset)].strip():
            return
        if pf.text[pf.offset(last, stmt.end_col_offset or 0) : b].strip().split("#")[0].strip():
            return
        if body is not None:
            emptied.setdefault(id(body), set()).add(id(stmt))
            if len(emptied[id(body)]) == len(body):
                indent = line_text[: len(line_text) - len(line_text.lstrip())]
                spans.append((a, b, f"{indent}pass\n"))
                return
        spans.append((a, b, ""))

    for node in ast.walk(pf.tree):
        name = node_name(node)
        if not name or not name_matches(name, keys):
            continue
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            drop_stmt(node)
            continue
        parent = pf.parents.get(id(node))
        if isinstance(parent, ast.List | ast.Tuple | ast.Set) and node in parent.elts:
            elts = parent.elts
            i = elts.index(node)
            a, b = pf.span(node)
            if len(elts) == 1:
                spans.append((a, b, ""))
            elif i + 1 < len(elts):
                spans.append((a, pf.span(elts[i + 1])[0], ""))
            else:
                spans.append((pf.span(elts[i - 1])[1], b, ""))
            continue
        if isinstance(parent, ast.Dict) and node in parent.keys:
            i = parent.keys.index(node)
            a = pf.span(node)[0]
            b = pf.span(parent.values[i])[1]
            if i + 1 < len(parent.keys) and parent.keys[i + 1] is not None:
                b = pf.span(parent.keys[i + 1])[0]
            elif i > 0:
                a = pf.span(parent.values[i - 1])[1]
            spans.append((a, b, ""))
            continue
        stmt = pf.statement_of(node) if not isinstance(node, ast.alias) else None
        if isinstance(node, ast.alias):
            stmt = pf.statement_of(pf.parents.get(id(node)) or node)
        if stmt is None or isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue  # a parameter or decorator: the definition stays
        if is_docstring(stmt):
            continue  # documentation stays: the code no longer does what it says
        if isinstance(stmt, (*SIMPLE_STMTS, ast.Import, ast.ImportFrom, ast.Assert)):
            drop_stmt(stmt)
    # outermost spans win: drop spans nested in others
    spans = sorted(set(spans), key=lambda s: (s[0], -s[1]))
    kept: list[tuple[int, int, str]] = []
    for s in spans:
        if kept and s[0] < kept[-1][1]:
            continue
        kept.append(s)
    return kept


def _json_without(data: Any, keys: Sequence[str]) -> Any:
    if isinstance(data, dict):
        return {
            k: _json_without(v, keys)
            for k, v in data.items()
            if not name_matches(str(k), keys)
            and not (isinstance(v, str) and name_matches(v, keys) and len(v) < 80)
        }
    if isinstance(data, list):
        return [
            _json_without(v, keys)
            for v in data
            if not (isinstance(v, str) and name_matches(v, keys) and len(v) < 80)
        ]
    return data


def _config_without(path: str, text: str, keys: Sequence[str]) -> str:
    """A config file without the entries naming ``keys``: JSON rewritten, other formats by line
    blocks (the line and the more-indented lines under it)."""
    if path.endswith(".json"):
        try:
            data = json.loads(text)
        except ValueError:
            return text
        new = _json_without(data, keys)
        return text if new == data else json.dumps(new, indent=2) + "\n"
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    skip_indent: int | None = None
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if skip_indent is not None:
            if line.strip() and indent > skip_indent:
                continue
            skip_indent = None
        code = line.split("#", 1)[0]
        if code.strip() and any(name_matches(w, keys) for w in re.findall(r"[\w.\-+]+", code)):
            skip_indent = indent
            continue
        out.append(line)
    return "".join(out)


def removal_mutant(sub: Submission, sau: dict[str, Any], claim: Any) -> Mutant | None:
    """D3: the first named item of the claim that the code holds, removed from code and config."""
    from sabench.judges.static import entity_keys

    for name in [*claim.names, *claim.entities]:
        keys = [k for k in entity_keys(name) if len(k) >= 3]
        if not keys:
            continue
        files: dict[str, str] = {}
        first: tuple[str, int] | None = None
        for path in sub.code_files:
            pf = sub.py[path]
            edits = removal_edits(pf, keys)
            new = apply_edits(pf.text, edits) if edits else None
            if new is not None and new != pf.text and parses(path, new, pf.text):
                files[path] = new
                if first is None:
                    first = (path, pf.text.count("\n", 0, min(e[0] for e in edits)) + 1)
        if not files:
            continue  # the name must be removed from code, not only from config
        for path in sub.config_files:
            new = _config_without(path, sub.texts[path], keys)
            if new != sub.texts[path]:
                files[path] = new
        assert first is not None
        return Mutant(
            str(sau["sau_id"]),
            str(sau["dimension"]),
            "removal",
            first[0],
            first[1],
            f"removed `{name}` from {len(files)} file(s)",
            files,
        )
    return None
