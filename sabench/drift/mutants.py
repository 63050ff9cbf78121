"""What a mutant is and the submission it is made from: the Python file model (text, AST,
character offsets) and the edit helpers every drift type shares."""

from __future__ import annotations

import ast
import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from sabench.index.python_facts import parse_recovering

if TYPE_CHECKING:
    from sabench.index import CodeIndex

#: Drift types and the dimension of the SAUs they are injected for (None: any dimension).
DRIFT_TYPES: dict[str, str | None] = {
    "value": "D1",
    "operator": "D2",
    "removal": "D3",
    "swap": "D4",
    "normalisation": None,
    "split": None,
    "stub": None,
}
SIMPLE_STMTS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr)


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


class PyFile:
    """A Python file of the submission with its AST and character offsets of AST positions."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))
        recovered = parse_recovering(text)
        if recovered is None:
            raise SyntaxError(f"{path} does not parse")
        self.tree = recovered[0]
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


def apply_edits(text: str, edits: Sequence[tuple[int, int, str]]) -> str | None:
    """Splice non-overlapping ``(start, end, replacement)`` edits; None when two overlap."""
    out = text
    last = math.inf
    for start, end, repl in sorted(set(edits), key=lambda e: (e[0], e[1]), reverse=True):
        if end > last:
            return None
        out = out[:start] + repl + out[end:]
        last = start
    return out


def cited_lines(cited: Sequence[tuple[str, int, int]], path: str, pf: PyFile) -> set[int]:
    """The lines another judge cited in a file, widened to the functions that hold them."""
    out: set[int] = set()
    for f, a, b in cited:
        if f != path:
            continue
        for ln in range(a, b + 1):
            out.add(ln)
            fn = pf.function_at(ln)
            if fn is not None:
                out.update(range(fn.lineno, (fn.end_lineno or fn.lineno) + 1))
    return out


def parses(path: str, text: str, original: str) -> bool:
    """Whether a mutant's Python parses as far as the original did: all of it, or for a model's
    answer saved with its markdown or a file cut short, the same code
    (:func:`sabench.index.python_facts.parse_recovering`)."""
    if not path.endswith(".py"):
        return True
    recovered = parse_recovering(text)
    return recovered is not None and len(recovered[1]) == _text_lines(original)


@functools.lru_cache(maxsize=64)
def _text_lines(text: str) -> int:
    recovered = parse_recovering(text)
    return len(recovered[1]) if recovered is not None else -1


def is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def body_lists(node: ast.AST) -> Iterable[list[ast.stmt]]:
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
        self.py: dict[str, PyFile] = {}
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
                    self.py[sf.path] = PyFile(sf.path, text)
                except (SyntaxError, ValueError, RecursionError):
                    continue
                self.code_files.append(sf.path)
            elif sf.kind == CONFIG or sf.language in ("yaml", "json", "toml", "ini", "shell"):
                self.config_files.append(sf.path)

    def stubbed(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        body = [s for s in fn.body if not is_docstring(s)]
        if not body:
            return True
        return len(body) == 1 and (
            isinstance(body[0], ast.Pass | ast.Raise)
            or (isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant))
        )


# --------------------------------------------------------------------------------------------
# Names in code
# --------------------------------------------------------------------------------------------


def node_name(node: ast.AST) -> str | None:
    """The name a node carries (a variable, attribute, short string, definition, import or
    keyword), by which removal and swap tie code to a claim's names."""
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


def name_matches(name: str, keys: Sequence[str]) -> bool:
    """Whether a name, squashed, contains one of a claim name's keys."""
    from sabench.index import squash

    s = squash(name)
    return any(k in s for k in keys)
