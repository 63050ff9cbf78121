"""Drift injection: mutants of a submission with one known drift each, tied to the SAU it breaks.

From a submission and its SAUs, each mutant changes the code an SAU points at in one way:

=============  =====  ======================================================================
drift type     dim.   what changes
=============  =====  ======================================================================
``value``      D1     a numeric literal of a setting named like the claim's value (``lr = 0.05``
                      -> ``0.005``; integers doubled), wherever that setting holds the value
``operator``   D2     the outermost operator of the statement that computes the claim's formula
                      (``+``<->``-``, ``*``<->``/``, ``**``/``@`` -> ``*``)
``removal``    D3     a named dataset, baseline or metric removed from the code and config: list
                      and dict entries, the statements and definitions that name it
``swap``       D4     the statements of two consecutive steps of the claim swapped in the body
                      that runs them
``stub``       any    the body of the function that implements the claim replaced by a TODO
                      stub (``raise NotImplementedError``)
=============  =====  ======================================================================

Where the code is comes from the submission's index (:mod:`sabench.index`: named values, functions)
and its Python AST, by general rules (no per-paper lists). A claim's values, formulas, names and steps
are parsed by the static judge's claim parser. For a claim in prose the statement is found by its
terms, or, when another benchmark's judge cited lines for it (SA-Bench's evidence), within those
lines. Edits are splices of the original text at AST positions, so everything else (comments,
layout, other files) stays byte-identical; a mutant whose Python no longer parses is dropped.

Every judge then scores the original and each mutant. Per judge and drift type: **recall** is the
share of mutants whose broken SAU scores lower than on the original; the **false-alarm rate** is the
share of the other SAUs of the run whose score changed. Standalone::

    python -m sabench.drift SUBMISSION --saus saus.parquet --out drift.parquet
"""

from __future__ import annotations

import ast
import json
import math
import re
import shutil
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from sabench.index import CodeIndex

#: Drift types and the dimension of the SAUs they are injected for (None: any dimension).
DRIFT_TYPES: dict[str, str | None] = {
    "value": "D1",
    "operator": "D2",
    "removal": "D3",
    "swap": "D4",
    "stub": None,
}
DRIFT_COLUMNS = [
    "agent",
    "paper",
    "seed",
    "judge",
    "sau_id",
    "dimension",
    "drift_type",
    "file",
    "line",
    "description",
    "base_score",
    "mutant_score",
    "base_verdict",
    "mutant_verdict",
    "dropped",
    "n_other",
    "n_other_changed",
]
DRIFT_SUMMARY_COLUMNS = [
    "judge",
    "drift_type",
    "n_mutants",
    "recall",
    "recall_if_credited",
    "false_alarm_rate",
    "mean_drop",
]
_OPERATOR_SWAP: dict[type, tuple[type, str]] = {
    ast.Add: (ast.Sub, "-"),
    ast.Sub: (ast.Add, "+"),
    ast.Mult: (ast.Div, "/"),
    ast.Div: (ast.Mult, "*"),
    ast.FloorDiv: (ast.Mult, "*"),
    ast.Pow: (ast.Mult, "*"),
    ast.MatMult: (ast.Mult, "*"),
    ast.Mod: (ast.Mult, "*"),
}
_OP_TEXT = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Pow: "**",
    ast.MatMult: "@",
    ast.Mod: "%",
}
_SIMPLE_STMTS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr)
STUB_BODY = "# TODO: implement\nraise NotImplementedError"
#: A prose claim is tied to a statement only when the statement (with its function's name) holds
#: this share of the claim's weighted terms, and at least two of them.
PROSE_TIE_SHARE = 0.3


@dataclass
class Mutant:
    """One known drift: which SAU it breaks, where, and the new text of every changed file."""

    sau_id: str
    dimension: str
    drift_type: str
    file: str
    line: int
    description: str
    files: dict[str, str] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# Source files: text, AST and positions
# --------------------------------------------------------------------------------------------


class _PyFile:
    """A Python file of the submission with its AST and character offsets of AST positions."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))
        self.tree = ast.parse(text)
        self.parents: dict[int, ast.AST] = {}
        self.functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.functions.append(node)

    def offset(self, lineno: int, col: int) -> int:
        """Character offset of an AST (line, UTF-8 byte column) position."""
        line = self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""
        return self.starts[lineno - 1] + len(line.encode("utf-8")[:col].decode("utf-8", "ignore"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (
            self.offset(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            self.offset(node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
        )

    def segment(self, node: ast.AST) -> str:
        a, b = self.span(node)
        return self.text[a:b]

    def line_span(self, first: int, last: int) -> tuple[int, int]:
        """Whole lines ``first..last`` (1-based, inclusive), newline included."""
        return self.starts[first - 1], self.starts[min(last, len(self.lines))]

    def enclosing(self, node: ast.AST, kinds: tuple[type, ...]) -> ast.AST | None:
        cur = self.parents.get(id(node))
        while cur is not None and not isinstance(cur, kinds):
            cur = self.parents.get(id(cur))
        return cur

    def statement_of(self, node: ast.AST) -> ast.stmt | None:
        cur: ast.AST | None = node
        while cur is not None and not isinstance(cur, ast.stmt):
            cur = self.parents.get(id(cur))
        return cur

    def function_at(self, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        best = None
        for fn in self.functions:
            if fn.lineno <= line <= (fn.end_lineno or fn.lineno) and (
                best is None or fn.lineno >= best.lineno
            ):
                best = fn
        return best


def _apply(text: str, edits: Sequence[tuple[int, int, str]]) -> str | None:
    """Splice non-overlapping ``(start, end, replacement)`` edits; None when two overlap."""
    out = text
    last = math.inf
    for start, end, repl in sorted(set(edits), key=lambda e: (e[0], e[1]), reverse=True):
        if end > last:
            return None
        out = out[:start] + repl + out[end:]
        last = start
    return out


def _parses(path: str, text: str) -> bool:
    if not path.endswith(".py"):
        return True
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return False
    return True


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _body_lists(node: ast.AST) -> Iterable[list[ast.stmt]]:
    for name in ("body", "orelse", "finalbody"):
        value = getattr(node, name, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            yield value
    for handler in getattr(node, "handlers", []) or []:
        yield handler.body
    for case in getattr(node, "cases", []) or []:
        yield case.body


# --------------------------------------------------------------------------------------------
# The submission as the mutator sees it
# --------------------------------------------------------------------------------------------


class Submission:
    """The index of a submission plus the AST of its Python code files."""

    def __init__(self, root: Path, index: CodeIndex | None = None) -> None:
        from sabench.index import CODE, CONFIG, build_index

        self.root = Path(root)
        self.index = index if index is not None else build_index(self.root)
        self.texts: dict[str, str] = {}
        self.py: dict[str, _PyFile] = {}
        self.code_files: list[str] = []
        self.config_files: list[str] = []
        for sf in self.index.files:
            if sf.kind not in (CODE, CONFIG):
                continue
            try:
                text = (self.root / sf.path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            self.texts[sf.path] = text
            if sf.kind == CODE and sf.language == "python":
                try:
                    self.py[sf.path] = _PyFile(sf.path, text)
                except (SyntaxError, ValueError, RecursionError):
                    continue
                self.code_files.append(sf.path)
            elif sf.kind == CONFIG or sf.language in ("yaml", "json", "toml", "ini", "shell"):
                self.config_files.append(sf.path)

    def stubbed(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        body = [s for s in fn.body if not _is_docstring(s)]
        if not body:
            return True
        return len(body) == 1 and (
            isinstance(body[0], ast.Pass | ast.Raise)
            or (isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant))
        )


# --------------------------------------------------------------------------------------------
# D1: a value changed
# --------------------------------------------------------------------------------------------


def _new_value(token: str, value: float) -> str:
    """Another plausible value: floats divided by 10, integers doubled (0 -> 1)."""
    is_int = re.fullmatch(r"[-+]?\d[\d_]*", token.strip()) is not None
    if is_int:
        return str(int(value) * 2 if value != 0 else 1)
    if value == 0:
        return "0.5"
    new = value / 10.0
    return repr(float(f"{new:.10g}"))


def _close(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))


_NUM_TOKEN = re.compile(r"(?<![\w.])[-+]?(?:\d[\d_]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w.])")


def _value_edits(sub: Submission, path: str, line: int, value: float) -> list[tuple[int, int, str]]:
    """Edits replacing the literal(s) equal to ``value`` on one line of a file."""
    if path in sub.py:
        pf = sub.py[path]
        out = []
        for node in ast.walk(pf.tree):
            if (
                isinstance(node, ast.Constant)
                and type(node.value) in (int, float)
                and node.lineno == line
                and _close(abs(float(node.value)), abs(value))
            ):
                a, b = pf.span(node)
                out.append((a, b, _new_value(pf.text[a:b], abs(float(node.value)))))
        return out
    text = sub.texts.get(path)
    if text is None:
        return []
    lines = text.splitlines(keepends=True)
    if not 0 < line <= len(lines):
        return []
    start = sum(len(x) for x in lines[: line - 1])
    out = []
    for m in _NUM_TOKEN.finditer(lines[line - 1]):
        try:
            v = float(m.group(0).replace("_", ""))
        except ValueError:
            continue
        if _close(abs(v), abs(value)):
            token = m.group(0).lstrip("+-")
            a = start + m.end() - len(token)
            out.append((a, start + m.end(), _new_value(token, abs(v))))
    return out


def value_mutant(sub: Submission, sau: dict[str, Any], claim: Any) -> Mutant | None:
    """D1: the first of the claim's values held by a setting named like the claim."""
    from sabench.index import text_terms

    claim_terms = set(text_terms(claim.text))
    for num in claim.numbers:
        for value in num.candidates():
            facts = [
                f
                for f in sub.index.facts
                if f.file in sub.texts
                and any(_close(abs(value), abs(v)) for v in f.numbers)
                and any(len(t) > 1 and not t.isdigit() and t in claim_terms for t in f.terms)
            ]
            edits: dict[str, list[tuple[int, int, str]]] = {}
            for fact in facts:
                edits.setdefault(fact.file, []).extend(
                    _value_edits(sub, fact.file, fact.line, value)
                )
            files = {}
            for path, file_edits in edits.items():
                new = _apply(sub.texts[path], file_edits) if file_edits else None
                if new is not None and new != sub.texts[path] and _parses(path, new):
                    files[path] = new
            if files:
                first = next(f for f in facts if f.file in files)
                new_token = next(e[2] for e in edits[first.file])
                return Mutant(
                    str(sau["sau_id"]),
                    str(sau["dimension"]),
                    "value",
                    first.file,
                    first.line,
                    f"`{first.name}` {num.text} -> {new_token} ({len(files)} file(s))",
                    files,
                )
    return None


# --------------------------------------------------------------------------------------------
# D2: an operator changed
# --------------------------------------------------------------------------------------------


def _statements(sub: Submission) -> Iterable[tuple[_PyFile, ast.stmt]]:
    for path in sub.code_files:
        pf = sub.py[path]
        for node in ast.walk(pf.tree):
            if isinstance(node, _SIMPLE_STMTS) and any(
                isinstance(n, ast.BinOp) for n in ast.walk(node)
            ):
                yield pf, node


def _prose_tie(
    sub: Submission,
    claim: Any,
    candidates: Iterable[tuple[_PyFile, ast.stmt]],
) -> tuple[_PyFile, ast.stmt] | None:
    """The statement (with its function's name) holding most of the claim's weighted terms."""
    from sabench.index import text_terms

    weights = claim.terms
    total = sum(weights.values()) or 1.0
    best: tuple[float, int, _PyFile, ast.stmt] | None = None
    for pf, stmt in candidates:
        fn = pf.function_at(stmt.lineno)
        terms = set(text_terms(pf.segment(stmt)))
        if fn is not None:
            terms |= set(text_terms(fn.name))
        hit = [t for t in weights if t in terms]
        score = sum(weights[t] for t in hit) / total
        if len(hit) >= 2 and score >= PROSE_TIE_SHARE and (best is None or score > best[0]):
            best = (score, -stmt.lineno, pf, stmt)
    return (best[2], best[3]) if best else None


def _formula_tie(sub: Submission, formula: str) -> tuple[_PyFile, ast.stmt] | None:
    """The statement whose operands and operators contain most of a backticked formula's."""
    from sabench.judges.static import formula_tokens

    target = formula_tokens(formula)
    names = {k: v for k, v in target.items() if k.startswith("n:")}
    ops = {k: v for k, v in target.items() if not k.startswith("n:")}
    if len(names) < 1:
        return None
    n_names, n_ops = sum(names.values()), sum(ops.values()) or 1
    best: tuple[tuple[float, float], _PyFile, ast.stmt] | None = None
    for pf, stmt in _statements(sub):
        toks = formula_tokens(pf.segment(stmt).split("#", 1)[0])
        n_cont = sum(min(c, toks.get(t, 0)) for t, c in names.items()) / n_names
        o_cont = sum(min(c, toks.get(t, 0)) for t, c in ops.items()) / n_ops
        if n_cont < 0.75:
            continue
        key = (n_cont + o_cont, -abs(sum(toks.values()) - sum(target.values())))
        if best is None or key > best[0]:
            best = (key, pf, stmt)
    return (best[1], best[2]) if best else None


def locate_statement(
    sub: Submission, claim: Any, cited: Sequence[tuple[str, int, int]] = ()
) -> tuple[_PyFile, ast.stmt] | None:
    """The statement that computes the claim: its backticked formula, else (prose) the statement
    with the claim's terms, among the lines another judge cited when there are any."""
    for formula in claim.formulas:
        found = _formula_tie(sub, formula)
        if found is not None:
            return found
    if cited:
        inside = [
            (pf, s)
            for pf, s in _statements(sub)
            if any(
                pf.path == f and s.lineno <= b and (s.end_lineno or s.lineno) >= a
                for f, a, b in cited
            )
        ]
        found = _prose_tie(sub, claim, inside)
        if found is not None:
            return found
    if not claim.formulas:
        return _prose_tie(sub, claim, _statements(sub))
    return None


def operator_mutant(
    sub: Submission, sau: dict[str, Any], claim: Any, cited: Sequence = ()
) -> Mutant | None:
    """D2: the outermost arithmetic operator of the claim's statement swapped."""
    found = locate_statement(sub, claim, cited)
    if found is None:
        return None
    pf, stmt = found
    for node in ast.walk(stmt):
        if not isinstance(node, ast.BinOp) or type(node.op) not in _OPERATOR_SWAP:
            continue
        gap_start = pf.span(node.left)[1]
        gap_end = pf.span(node.right)[0]
        gap = pf.text[gap_start:gap_end]
        symbol = _OP_TEXT[type(node.op)]
        pos = gap.find(symbol)
        while pos >= 0 and symbol in ("*", "/") and gap[pos : pos + 2] in ("**", "//"):
            pos = gap.find(symbol, pos + 2)
        if pos < 0:
            continue
        new_symbol = _OPERATOR_SWAP[type(node.op)][1]
        a = gap_start + pos
        new = _apply(pf.text, [(a, a + len(symbol), new_symbol)])
        if new is None or not _parses(pf.path, new):
            continue
        line = pf.text.count("\n", 0, a) + 1
        return Mutant(
            str(sau["sau_id"]),
            str(sau["dimension"]),
            "operator",
            pf.path,
            line,
            f"`{symbol}` -> `{new_symbol}` in `{pf.segment(stmt).strip()[:80]}`",
            {pf.path: new},
        )
    return None


# --------------------------------------------------------------------------------------------
# D3: a dataset, baseline or metric removed
# --------------------------------------------------------------------------------------------


def _node_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 80:
        return node.value
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.name
    if isinstance(node, ast.alias):
        return node.asname or node.name
    if isinstance(node, ast.keyword):
        return node.arg
    return None


def _matches(name: str, keys: Sequence[str]) -> bool:
    from sabench.index import squash

    s = squash(name)
    return any(k in s for k in keys)


def _removal_edits(pf: _PyFile, keys: Sequence[str]) -> list[tuple[int, int, str]]:
    """Edits that remove every element, entry, definition or statement naming one of ``keys``."""
    spans: list[tuple[int, int, str]] = []
    emptied: dict[int, set[int]] = {}  # body list -> its statements removed so far

    def drop_stmt(stmt: ast.stmt) -> None:
        body = next((b for b in _body_lists(pf.parents.get(id(stmt), pf.tree)) if stmt in b), None)
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
        name = _node_name(node)
        if not name or not _matches(name, keys):
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
        if _is_docstring(stmt):
            continue  # documentation stays: the code no longer does what it says
        if isinstance(stmt, (*_SIMPLE_STMTS, ast.Import, ast.ImportFrom, ast.Assert)):
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
            if not _matches(str(k), keys)
            and not (isinstance(v, str) and _matches(v, keys) and len(v) < 80)
        }
    if isinstance(data, list):
        return [
            _json_without(v, keys)
            for v in data
            if not (isinstance(v, str) and _matches(v, keys) and len(v) < 80)
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
        if code.strip() and any(_matches(w, keys) for w in re.findall(r"[\w.\-+]+", code)):
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
            edits = _removal_edits(pf, keys)
            new = _apply(pf.text, edits) if edits else None
            if new is not None and new != pf.text and _parses(path, new):
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


# --------------------------------------------------------------------------------------------
# D4: two steps swapped
# --------------------------------------------------------------------------------------------


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _walk_code(node: ast.AST) -> Iterable[ast.AST]:
    """The nodes a statement runs: nested definitions are not entered (defining is not running)."""
    if isinstance(node, _DEFS):
        return
    stack = [node]
    while stack:
        cur = stack.pop()
        yield cur
        stack.extend(c for c in ast.iter_child_nodes(cur) if not isinstance(c, _DEFS))


def _call_names(node: ast.AST) -> list[str]:
    out = []
    for n in _walk_code(node):
        if isinstance(n, ast.Call):
            name = _node_name(n.func)
            if name:
                out.append(name)
    return out


def _step_matches(pf: _PyFile, stmt: ast.stmt, step: Any) -> bool:
    from sabench.index import chunk_info, squash, text_terms
    from sabench.judges.static import entity_keys

    if step.keys:
        keys = [k for key in step.keys for k in entity_keys(key)]
        for name in _call_names(stmt):
            ckeys = set(chunk_info(name)[1]) | {squash(name)}
            if any(k in ckeys for k in keys):
                return True
        return False
    total = sum(step.terms.values())
    if not total or isinstance(stmt, _DEFS):
        return False
    terms = set(text_terms(pf.segment(stmt)))
    return sum(w for t, w in step.terms.items() if t in terms) / total >= 0.5


def swap_mutant(sub: Submission, sau: dict[str, Any], claim: Any) -> Mutant | None:
    """D4: in the block that runs the most of the claim's steps, the statements of two consecutive
    steps swapped (the first such pair, in claim order)."""
    steps = claim.steps
    if len(steps) < 2:
        return None
    best: tuple[int, _PyFile, list[ast.stmt], list[int | None]] | None = None
    for path in sub.code_files:
        pf = sub.py[path]
        for node in ast.walk(pf.tree):
            for body in _body_lists(node):
                stmts = [s for s in body if not _is_docstring(s)]
                pos: list[int | None] = []
                for step in steps:
                    pos.append(
                        next((i for i, s in enumerate(stmts) if _step_matches(pf, s, step)), None)
                    )
                n = len({p for p in pos if p is not None})
                if n >= 2 and (best is None or n > best[0]):
                    best = (n, pf, stmts, pos)
    if best is None:
        return None
    _, pf, stmts, pos = best
    for i in range(len(steps) - 1):
        a, b = pos[i], pos[i + 1]
        if a is None or b is None or a >= b:
            continue
        sa, sb = stmts[a], stmts[b]
        if sa.lineno == sb.lineno or (sa.end_lineno or sa.lineno) >= sb.lineno:
            continue
        ra = pf.line_span(sa.lineno, sa.end_lineno or sa.lineno)
        rb = pf.line_span(sb.lineno, sb.end_lineno or sb.lineno)
        ta, tb = pf.text[ra[0] : ra[1]], pf.text[rb[0] : rb[1]]
        if not ta.endswith("\n") or not tb.endswith("\n"):
            continue
        new = _apply(pf.text, [(ra[0], ra[1], tb), (rb[0], rb[1], ta)])
        if new is None or not _parses(pf.path, new):
            continue
        return Mutant(
            str(sau["sau_id"]),
            str(sau["dimension"]),
            "swap",
            pf.path,
            sa.lineno,
            f"swapped '{steps[i].text[:40]}' ({pf.path}:{sa.lineno}) and "
            f"'{steps[i + 1].text[:40]}' ({pf.path}:{sb.lineno})",
            {pf.path: new},
        )
    return None


# --------------------------------------------------------------------------------------------
# Any dimension: the implementing function stubbed
# --------------------------------------------------------------------------------------------


def locate_function(
    sub: Submission, claim: Any, cited: Sequence[tuple[str, int, int]] = ()
) -> tuple[_PyFile, ast.FunctionDef | ast.AsyncFunctionDef] | None:
    """The function that implements the claim: one named after a name of the claim, else the one
    that holds the claim's statement."""
    from sabench.judges.static import entity_keys

    for name in [*claim.names, *claim.entities]:
        keys = [k for k in entity_keys(name) if len(k) >= 3]
        for path in sub.code_files:
            pf = sub.py[path]
            for fn in pf.functions:
                if keys and _matches(fn.name, keys) and not sub.stubbed(fn):
                    return pf, fn
    found = locate_statement(sub, claim, cited)
    if found is not None:
        pf, stmt = found
        fn = pf.function_at(stmt.lineno)
        if fn is not None and not sub.stubbed(fn):
            return pf, fn
    return None


def stub_mutant(
    sub: Submission, sau: dict[str, Any], claim: Any, cited: Sequence = ()
) -> Mutant | None:
    """Placeholder: the implementing function's body (docstring kept) replaced by a TODO stub."""
    found = locate_function(sub, claim, cited)
    if found is None:
        return None
    pf, fn = found
    body = [s for s in fn.body if not _is_docstring(s)]
    first, last = body[0], body[-1]
    if first.lineno == fn.lineno:
        return None  # a one-line def
    a, b = pf.line_span(first.lineno, last.end_lineno or last.lineno)
    indent = pf.lines[first.lineno - 1][: first.col_offset]
    if indent.strip():
        return None
    stub = "".join(f"{indent}{line}\n" for line in STUB_BODY.splitlines())
    new = _apply(pf.text, [(a, b, stub)])
    if new is None or not _parses(pf.path, new):
        return None
    return Mutant(
        str(sau["sau_id"]),
        str(sau["dimension"]),
        "stub",
        pf.path,
        fn.lineno,
        f"body of `{fn.name}` ({pf.path}:{fn.lineno}-{fn.end_lineno}) replaced by a TODO stub",
        {pf.path: new},
    )


# --------------------------------------------------------------------------------------------
# Mutants of one submission
# --------------------------------------------------------------------------------------------


def make_mutants(
    submission: Path | Submission,
    saus: list[dict[str, Any]],
    *,
    eligible: Iterable[str] | None = None,
    cited: dict[str, list[tuple[str, int, int]]] | None = None,
    max_per_type: int | None = None,
    types: Iterable[str] = tuple(DRIFT_TYPES),
) -> list[Mutant]:
    """Mutants for the SAUs of ``eligible`` (default all), at most ``max_per_type`` per drift type
    (SAUs in id order). ``cited``: SAU id -> lines another judge cited for it (file, start, end)."""
    from sabench.judges.static import analyze_claim, claim_frequencies

    sub = submission if isinstance(submission, Submission) else Submission(Path(submission))
    if not sub.texts:
        return []
    wanted = None if eligible is None else set(eligible)
    cited = cited or {}
    df = claim_frequencies(saus)
    counts: dict[str, int] = {}
    out: list[Mutant] = []
    types = [t for t in DRIFT_TYPES if t in set(types)]
    for sau in sorted(saus, key=lambda s: str(s["sau_id"])):
        if wanted is not None and str(sau["sau_id"]) not in wanted:
            continue
        claim = analyze_claim(sau, df, len(saus))
        lines = cited.get(str(sau["sau_id"]), [])
        for kind in types:
            dim = DRIFT_TYPES[kind]
            if dim is not None and sau["dimension"] != dim:
                continue
            if max_per_type is not None and counts.get(kind, 0) >= max_per_type:
                continue
            try:
                if kind == "value":
                    mutant = value_mutant(sub, sau, claim)
                elif kind == "operator":
                    mutant = operator_mutant(sub, sau, claim, lines)
                elif kind == "removal":
                    mutant = removal_mutant(sub, sau, claim)
                elif kind == "swap":
                    mutant = swap_mutant(sub, sau, claim)
                else:
                    mutant = stub_mutant(sub, sau, claim, lines)
            except (ValueError, IndexError, KeyError, RecursionError, AssertionError):
                mutant = None
            if mutant is not None:
                out.append(mutant)
                counts[kind] = counts.get(kind, 0) + 1
    return out


# --------------------------------------------------------------------------------------------
# Judging mutants
# --------------------------------------------------------------------------------------------


def _scores(judgments: Iterable[Any]) -> dict[str, tuple[float, str]]:
    out = {}
    for j in judgments:
        if j.verdict == "error" or j.score is None:
            continue
        out[j.sau_id] = (float(j.score), j.verdict)
    return out


def judge_mutants(
    submission: Path,
    saus: list[dict[str, Any]],
    mutants: Sequence[Mutant],
    judges: Sequence[tuple[str, dict[str, Any]]] = (("static", {}),),
    run: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Score the original and every mutant with every judge; one row per mutant and judge."""
    from sabench.judges.run import run_judge

    run = run or {}
    rows: list[dict[str, Any]] = []
    if not mutants:
        return rows
    with tempfile.TemporaryDirectory(prefix="sabench-drift-") as tmp:
        work = Path(tmp) / "submission"
        shutil.copytree(submission, work, symlinks=True)
        for name, settings in judges:
            base = _scores(run_judge(name, settings, work, saus, None, run=run))
            for m in mutants:
                originals = {p: (work / p).read_bytes() for p in m.files}
                try:
                    for p, text in m.files.items():
                        (work / p).write_text(text, encoding="utf-8")
                    got = _scores(run_judge(name, settings, work, saus, None, run=run))
                finally:
                    for p, data in originals.items():
                        (work / p).write_bytes(data)
                if m.sau_id not in base or m.sau_id not in got:
                    continue
                others = [s for s in base if s != m.sau_id and s in got]
                changed = sum(1 for s in others if abs(got[s][0] - base[s][0]) > 1e-9)
                rows.append(
                    {
                        "agent": run.get("agent"),
                        "paper": run.get("paper"),
                        "seed": str(run.get("seed", "0")),
                        "judge": name,
                        "sau_id": m.sau_id,
                        "dimension": m.dimension,
                        "drift_type": m.drift_type,
                        "file": m.file,
                        "line": m.line,
                        "description": m.description,
                        "base_score": base[m.sau_id][0],
                        "mutant_score": got[m.sau_id][0],
                        "base_verdict": base[m.sau_id][1],
                        "mutant_verdict": got[m.sau_id][1],
                        "dropped": got[m.sau_id][0] < base[m.sau_id][0] - 1e-9,
                        "n_other": len(others),
                        "n_other_changed": changed,
                    }
                )
    return rows


def drift_frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    import pandas as pd

    frame = pd.DataFrame(list(rows), columns=DRIFT_COLUMNS)
    for col in ("line", "n_other", "n_other_changed"):
        frame[col] = frame[col].astype("int64")
    for col in ("base_score", "mutant_score"):
        frame[col] = frame[col].astype(float)
    frame["dropped"] = frame["dropped"].astype(bool)
    for col in ("agent", "paper", "seed", "judge", "sau_id", "dimension", "drift_type"):
        frame[col] = frame[col].astype("string")
    return frame


def drift_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per judge and drift type: recall, recall where the original was credited (score > 0), the
    false-alarm rate over the other SAUs, and the mean score drop of the broken SAU."""
    import pandas as pd

    rows = []
    if table.empty:
        return pd.DataFrame(columns=DRIFT_SUMMARY_COLUMNS)
    order = {t: i for i, t in enumerate(DRIFT_TYPES)}
    for (judge, kind), g in table.groupby(["judge", "drift_type"], sort=False):
        credited = g[g["base_score"] > 0]
        n_other = int(g["n_other"].sum())
        rows.append(
            {
                "judge": judge,
                "drift_type": kind,
                "n_mutants": len(g),
                "recall": float(g["dropped"].mean()),
                "recall_if_credited": float(credited["dropped"].mean())
                if len(credited)
                else math.nan,
                "false_alarm_rate": float(g["n_other_changed"].sum() / n_other)
                if n_other
                else math.nan,
                "mean_drop": float((g["base_score"] - g["mutant_score"]).mean()),
            }
        )
    out = pd.DataFrame(rows, columns=DRIFT_SUMMARY_COLUMNS)
    out["_o"] = out["drift_type"].map(lambda t: order.get(t, 99))
    return out.sort_values(["judge", "_o"]).drop(columns="_o").reset_index(drop=True)


# --------------------------------------------------------------------------------------------
# A results folder (the workflow's drift rule)
# --------------------------------------------------------------------------------------------


def _reference_rows(run_dir: Path) -> tuple[dict[str, float], dict[str, list]]:
    """Scores and cited lines of judge ``reference`` for one run, when it judged it."""
    import pandas as pd

    path = run_dir / "judge" / "reference.parquet"
    if not path.is_file():
        return {}, {}
    frame = pd.read_parquet(path)
    scores, cited = {}, {}
    for row in frame.itertuples():
        if row.score is not None and not (isinstance(row.score, float) and math.isnan(row.score)):
            scores[str(row.sau_id)] = float(row.score)
        ev = row.evidence if row.evidence is not None else []
        cited[str(row.sau_id)] = [(e["file"], int(e["start"]), int(e["end"])) for e in ev]
    return scores, cited


def drift_results(
    results: Path,
    runs: Sequence[tuple[str, str, str]],
    judges: Sequence[tuple[str, dict[str, Any]]],
    *,
    max_per_run: int = 4,
    min_reference_score: float = 0.75,
) -> pd.DataFrame:
    """Drift injection over runs of a results folder (``runs/<agent>/<paper>/<seed>/submission``).

    Where judge ``reference`` judged a run, only SAUs it scored at least ``min_reference_score``
    are mutated and its cited lines guide the search for prose claims.
    """
    from sabench.judges.run import read_saus_table

    rows: list[dict[str, Any]] = []
    saus_cache: dict[str, list[dict[str, Any]]] = {}
    for agent, paper, seed in runs:
        run_dir = Path(results) / "runs" / agent / paper / str(seed)
        submission = run_dir / "submission"
        if not submission.is_dir():
            continue
        if paper not in saus_cache:
            saus_cache[paper] = read_saus_table(Path(results) / "papers" / paper / "saus.parquet")[
                0
            ]
        saus = saus_cache[paper]
        ref_scores, cited = _reference_rows(run_dir)
        eligible = (
            [s for s, v in ref_scores.items() if v >= min_reference_score] if ref_scores else None
        )
        mutants = make_mutants(
            submission, saus, eligible=eligible, cited=cited, max_per_type=max_per_run
        )
        info = {"agent": agent, "paper": paper, "seed": str(seed)}
        rows.extend(judge_mutants(submission, saus, mutants, judges, info))
    return drift_frame(rows)


def main(argv: list[str] | None = None) -> int:
    """Drift injection on one submission, or (``--results``) on the runs of a results folder."""
    from sabench.io import write_parquet
    from sabench.steps import ArgumentParser, json_object, step

    parser = ArgumentParser(description=main.__doc__)
    parser.add_argument("submission", type=Path, nargs="?", help="a submission folder")
    parser.add_argument("--saus", type=Path, help="the paper's saus.parquet (with SUBMISSION)")
    parser.add_argument("--results", type=Path, help="a results folder (instead of SUBMISSION)")
    parser.add_argument("--runs", nargs="*", default=[], help="agent/paper/seed (with --results)")
    parser.add_argument("--judges", default="static", help="comma-separated judges")
    parser.add_argument("--settings", type=json_object, default={}, help="judge settings (JSON)")
    parser.add_argument("--max-per-run", type=int, default=4)
    parser.add_argument("--min-reference-score", type=float, default=0.75)
    parser.add_argument("--out", type=Path, required=True, help="the drift_injection Parquet")
    args = parser.parse_args(argv)
    judges = [(j, args.settings.get(j, {})) for j in args.judges.split(",") if j]
    from sabench.grid import judge_available

    for name, _ in judges:
        if not judge_available(name):
            parser.error(f"argument --judges: unknown judge {name!r}")
    with step(None, "drift") as log:
        if args.results:
            runs = [tuple(r.split("/")) for r in args.runs]
            table = drift_results(
                args.results,
                runs,  # type: ignore[arg-type]
                judges,
                max_per_run=args.max_per_run,
                min_reference_score=args.min_reference_score,
            )
        else:
            from sabench.judges.run import read_saus_table

            if args.submission is None or args.saus is None:
                parser.error("give SUBMISSION and --saus, or --results")
            saus = read_saus_table(args.saus)[0]
            mutants = make_mutants(args.submission, saus, max_per_type=args.max_per_run)
            table = drift_frame(judge_mutants(args.submission, saus, mutants, judges))
        write_parquet(args.out, table, table="drift_injection")
        summary = drift_summary(table)
        log.info("%d mutant judgments -> %s", len(table), args.out)
    print(summary.to_string(index=False) if not summary.empty else "no mutant could be tied")
    return 0


if __name__ == "__main__":
    sys.exit(main())
