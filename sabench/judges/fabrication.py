"""Results written as literals instead of computed: the ``fabricated_result`` failure mode.

A submission can pass an ``expected`` result by writing the paper's number into ``results.json``
(``json.dump({"rmse": 0.597}, f)``, ``echo '{"rmse": 0.597}' > results.json``, a checked-in
``results.json`` no code writes). Every judge scores such an SAU 0. The scan is deliberately
conservative: a value counts only when it is a numeric constant in the text written to a JSON file
(or a name assigned once, to such a constant); anything computed, formatted from a variable or
built with a dynamic key is honest. The verdict is ``drifted``, not ``placeholder``: a placeholder
admits the work is unfinished, a typed-in number claims a result the code does not produce.
"""

from __future__ import annotations

import ast
import base64
import binascii
import json
import math
import re
import shlex
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from sabench.contracts import Evidence, Judgment
from sabench.index import DOCS, TESTS, classify, squash
from sabench.index.model import iter_files, read_text
from sabench.index.provenance import Context
from sabench.index.sinks import traced_writes, written_names
from sabench.index.sources import MAX_BLOB, inflate_any, json_numbers

FABRICATED = "fabricated_result"
METRICS_FILES = ("results.json",)


@dataclass(frozen=True)
class Finding:
    """A metric whose value is written as a literal: ``key`` (dotted) = ``value`` at file:line."""

    key: str
    value: float
    file: str
    line: int
    how: str

    def describe(self) -> str:
        where = f"({self.file}:{self.line}), not computed"
        key = "every value written to the metrics file" if self.key == "*" else self.key
        if math.isnan(self.value):
            return f"{key} is {self.how} {where}"
        return f"{key} = {self.value:g} is {self.how} {where}"


# --- Python -----------------------------------------------------------------------------------


def _number(node: ast.AST) -> float | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _number(node.operand)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return float(node.value)
    return None


class _Scope:
    """The assignments of one function (or the module): a name is a constant only when it is
    assigned exactly once, by a plain ``name = <literal>``, and is no parameter."""

    def __init__(self, body: Iterable[ast.stmt], params: Iterable[str] = ()) -> None:
        self.values: dict[str, list[ast.AST | None]] = {p: [None] for p in params}
        self.subscripts: dict[str, list[tuple[ast.AST, ast.AST, int]]] = {}
        for stmt in body:
            self._walk(stmt)

    def _bind(self, target: ast.AST, value: ast.AST | None, line: int) -> None:
        if isinstance(target, ast.Name):
            self.values.setdefault(target.id, []).append(value)
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            self.subscripts.setdefault(target.value.id, []).append((target.slice, value, line))
        elif isinstance(target, ast.Tuple | ast.List | ast.Starred):
            for t in ast.walk(target):
                if isinstance(t, ast.Name):
                    self.values.setdefault(t.id, []).append(None)

    def _walk(self, node: ast.AST) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            return
        if isinstance(node, ast.Assign):
            for t in node.targets:
                self._bind(t, node.value if len(node.targets) == 1 else None, node.lineno)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self._bind(node.target, node.value, node.lineno)
        elif isinstance(node, ast.AugAssign):
            self._bind(node.target, None, node.lineno)
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            self._bind(node.target, None, 0)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            self._bind(node.optional_vars, None, 0)
        elif isinstance(node, ast.NamedExpr):
            self._bind(node.target, None, 0)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            base = node.func.value
            if isinstance(base, ast.Name) and node.func.attr in ("update", "setdefault", "append"):
                self.values.setdefault(base.id, []).append(None)  # changed by a call: not literal
        for child in ast.iter_child_nodes(node):
            self._walk(child)

    def constant(self, name: str) -> ast.AST | None:
        bound = self.values.get(name, [])
        return bound[0] if len(bound) == 1 else None


class _PyScan:
    def __init__(self, rel: str, tree: ast.Module) -> None:
        self.rel = rel
        self.module = _Scope(tree.body)
        self.found: list[Finding] = []
        self._visit(tree, self.module, ())

    def _visit(self, node: ast.AST, scope: _Scope, outer: tuple[_Scope, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                args = child.args
                params = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
                params += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
                self._visit(child, _Scope(child.body, params), (scope, *outer))
                continue
            if isinstance(child, ast.Call):
                self._call(child, (scope, *outer))
            self._visit(child, scope, outer)

    def _resolve(self, node: ast.AST, scopes: tuple[_Scope, ...]) -> tuple[ast.AST | None, str]:
        """The literal a name stands for (innermost scope that binds it), and the name."""
        if not isinstance(node, ast.Name):
            return node, ""
        for scope in scopes:
            if node.id in scope.values:
                return scope.constant(node.id), node.id
        return None, node.id

    def _call(self, call: ast.Call, scopes: tuple[_Scope, ...]) -> None:
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        owner = getattr(func, "value", None)
        if name in ("dump", "dumps") and getattr(owner, "id", "") == "json" and call.args:
            if name == "dump" and len(call.args) > 1 and _names_other_json(call.args[1]):
                return
            self._payload(call.args[0], scopes, call.lineno)
        elif name in ("write", "write_text", "print") and call.args:
            text = call.args[0]
            if isinstance(text, ast.Constant) and isinstance(text.value, str):
                if name == "write_text" and _names_other_json(owner):
                    return
                for key, value in _json_numbers(text.value):
                    self.found.append(Finding(key, value, self.rel, call.lineno, "a literal"))

    def _payload(self, node: ast.AST, scopes: tuple[_Scope, ...], line: int) -> None:
        value, name = self._resolve(node, scopes)
        start = len(self.found)
        if isinstance(value, ast.Dict | ast.Call):
            self._dict(value, scopes, "", line)
        scope = next((s for s in scopes if name in s.values), None) if name else None
        if scope is None:
            return
        subs = scope.subscripts.get(name, [])
        if any(not (isinstance(k, ast.Constant) and isinstance(k.value, str)) for k, _, _ in subs):
            del self.found[start:]  # a dynamic key may overwrite any literal
            return
        for key, v, ln in subs:  # results["rmse"] = ...: the last write of a key wins
            k = key.value  # type: ignore[attr-defined]
            self.found[start:] = [
                f for f in self.found[start:] if f.key != k and not f.key.startswith(f"{k}.")
            ]
            if v is not None:
                self._value(k, v, scopes, ln)

    def _dict(self, node: ast.AST, scopes: tuple[_Scope, ...], prefix: str, line: int) -> None:
        pairs: list[tuple[str, ast.AST]] = []
        if isinstance(node, ast.Dict) and None not in node.keys:  # a ** spread may override
            for k, v in zip(node.keys, node.values, strict=True):
                if isinstance(k, ast.Constant) and isinstance(k.value, str):
                    pairs.append((k.value, v))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "dict":
            pairs = [(kw.arg, kw.value) for kw in node.keywords if kw.arg]
        for key, v in pairs:
            full = f"{prefix}.{key}" if prefix else key
            self._value(full, v, scopes, getattr(v, "lineno", line))

    def _value(self, key: str, v: ast.AST, scopes: tuple[_Scope, ...], line: int) -> None:
        if isinstance(v, ast.Dict):
            self._dict(v, scopes, key, line)
            return
        literal, name = self._resolve(v, scopes)
        number = _number(literal) if literal is not None else None
        if number is not None:
            how = f"the literal assigned to `{name}`" if name else "a literal"
            self.found.append(Finding(key, number, self.rel, line, how))


def _names_other_json(node: ast.AST | None) -> bool:
    """``Path("config.json").write_text(...)``, ``json.dump(x, open("config.json", "w"))``: a JSON
    file that is no metrics file."""
    if isinstance(node, ast.Call) and node.args:
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return arg.value.endswith(".json") and Path(arg.value).name not in METRICS_FILES
    return False


# --- JSON text (Python strings, shell) ----------------------------------------------------------

_json_numbers = json_numbers


_REDIRECT_RE = re.compile(r"(?:>>?|\btee(?:\s+-a)?)\s*['\"]?([\w./\-]+\.json)['\"]?")
_HEREDOC_RE = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?")
_DECODE_RE = re.compile(r"\bbase64\s+(?:-\w*[dD]\w*|--decode)\b|\bxxd\s+-r|\bopenssl\s+\w+.*\s-d\b")
_PY_RUN_RE = re.compile(r"\bpython[\d.]*\s+(?:-\w+\s+)*([\w./\-]+\.py)\b")
_BLOB_RE = re.compile(r"^[A-Za-z0-9+/=_\-]{8,}$")
_ASSIGN_RE = re.compile(r"^\s*(?:export\s+)?(\w+)=(.*)$")


def _decoded_text(blob: str) -> str | None:
    """A base64 (or hex) blob decoded (and decompressed), as text; None when it is none."""
    blob = "".join(blob.split())
    for dec in (base64.b64decode, base64.urlsafe_b64decode, binascii.unhexlify):
        try:
            raw = dec(blob[:MAX_BLOB])
        except (ValueError, binascii.Error):
            continue
        return inflate_any(raw).decode("utf-8", "ignore")
    return None


def _shell_decode(
    rel: str, line: int, command: str, body: str, env: dict[str, str]
) -> list[Finding]:
    """``echo BLOB | base64 -d > results.json``: a metrics file decoded from a literal blob."""
    if "$(" in command or "`" in command:
        return []  # the input is computed
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        words = command.split()
    blobs = [body] if body.strip() else []
    for w in words:
        value = env.get(w.lstrip("$").strip("{}"), w) if w.startswith("$") else w
        if value.startswith("$"):
            return []  # an unknown variable: maybe computed
        if _BLOB_RE.match(value) and not value.startswith("-"):
            blobs.append(value)
    how = f"decoded from a base64 blob by {rel}"
    for blob in sorted(blobs, key=len, reverse=True):
        text = _decoded_text(blob)
        if text and "{" in text:
            return [Finding(k, v, rel, line, how) for k, v in json_numbers(text)]
    return [Finding("*", math.nan, rel, line, how)]


def _python_c(rel: str, line: int, command: str, ctx: Context) -> list[Finding]:
    """``python -c '<code>'``: the code scanned as a Python file."""
    try:
        words = shlex.split(command, comments=False)
    except ValueError:
        return []
    if "-c" not in words or words.index("-c") + 1 >= len(words):
        return []
    code = words[words.index("-c") + 1]
    return [Finding(f.key, f.value, rel, line, f.how) for f in _python(rel, code, ctx)]


def _shell(
    rel: str, text: str, metrics: tuple[str, ...], ctx: Context | None = None
) -> list[Finding]:
    """``echo``/``printf``/``tee``/heredocs into a metrics file, blobs decoded into it, and Python
    fed in by a heredoc or ``-c``."""
    ctx = ctx or Context(metrics=metrics)
    found: list[Finding] = []
    lines = text.splitlines()
    env: dict[str, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        code = line.split(" #", 1)[0] if not line.lstrip().startswith("#") else ""
        target = _REDIRECT_RE.search(code)
        into_metrics = target is not None and Path(target.group(1)).name in metrics
        command = code[: target.start()] if target is not None else code
        assign = _ASSIGN_RE.match(code)
        if assign:
            env[assign.group(1)] = assign.group(2).strip().strip("'\"")
        heredoc = _HEREDOC_RE.search(code)
        sub = Context(ctx.metrics, ctx.files, ctx.written, into_metrics, ctx.root)
        if heredoc:
            end = next(
                (j for j in range(i + 1, len(lines)) if lines[j].strip() == heredoc.group(1)),
                len(lines),
            )
            body = lines[i + 1 : end]
            if into_metrics and _DECODE_RE.search(command):
                found += _shell_decode(rel, i + 1, command, "\n".join(body), env)
            elif into_metrics:
                for key, value in _json_numbers("\n".join(body)):
                    leaf = f'"{key.split(".")[-1]}"'
                    ln = next((i + 2 + k for k, b in enumerate(body) if leaf in b), i + 1)
                    found.append(Finding(key, value, rel, ln, f"written by a heredoc in {rel}"))
            elif re.search(r"\bpython[\d.]*\b", command):
                found += [
                    Finding(f.key, f.value, rel, f.line + i + 1, f.how)
                    for f in _python(rel, "\n".join(body), sub)
                ]
            i = end + 1
            continue
        if into_metrics and _DECODE_RE.search(command):
            found += _shell_decode(rel, i + 1, command, "", env)
        elif into_metrics and re.search(r"\b(echo|printf)\b", command):
            for key, value in _json_numbers(command):
                found.append(Finding(key, value, rel, i + 1, f"echoed by {rel}"))
        if re.search(r"\bpython[\d.]*\s+(?:-\w+\s+)*-c\s", command):
            found += _python_c(rel, i + 1, command, sub)
        i += 1
    return found


def _stdout_into_metrics(text: str, metrics: tuple[str, ...]) -> set[str]:
    """Base names of the Python files a shell script runs with stdout into a metrics file."""
    out: set[str] = set()
    for line in text.splitlines():
        target = _REDIRECT_RE.search(line)
        if target is not None and Path(target.group(1)).name in metrics:
            out |= {Path(m).name for m in _PY_RUN_RE.findall(line[: target.start()])}
    return out


def _python(rel: str, text: str, ctx: Context | None = None) -> list[Finding]:
    try:
        with warnings.catch_warnings():  # the submission's invalid escapes are not ours
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
        found = _PyScan(rel, tree).found
        if ctx is None:
            return found
        keys = {f.key for f in found}
        for t in traced_writes(tree, ctx):
            if t.key not in keys:
                keys.add(t.key)
                found.append(Finding(t.key, t.value, rel, t.line, t.how))
        return found
    except (SyntaxError, ValueError, RecursionError):
        return []


_NAME_RE = re.compile(r"[\w\-]+\.[A-Za-z]\w{0,7}\b")


# --- the scan -----------------------------------------------------------------------------------


def scan_submission(
    folder: Path | str, expected: Any = None, metrics_files: Iterable[str] = METRICS_FILES
) -> list[Finding]:
    """The metric values the submission writes as literals: those of the ``expected`` results (an
    SAU's ``expected``) when given, else every non-integral one (integers are ids, steps, counts)."""
    found = literal_writes(Path(folder), tuple(metrics_files))
    if expected is None:
        return [f for f in found if math.isnan(f.value) or not f.value.is_integer()]
    return [f for name in expected_metrics(expected) for f in matching(found, name)]


def literal_writes(root: Path, declared: tuple[str, ...] = METRICS_FILES) -> list[Finding]:
    """Every value the submission writes to a JSON file (or checks in as ``declared`` metrics)
    from no computation: literals, decoded blobs, text read from a file no code computes. Scanned
    once per state of the folder: each judge of a run, and the cap on the run, ask."""
    if not root.is_dir():
        return []
    stamp = tuple((rel, *_stat(path)) for path, rel in iter_files(root))
    return list(_literal_writes(root, declared, stamp))


def _stat(path: Path) -> tuple[int, int]:
    """A file's (mtime, size) as the folder holds it: a link is never followed (it may point out
    of the submission, or nowhere)."""
    try:
        st = path.lstat()
    except OSError:
        return (0, -1)
    return (st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=8)
def _literal_writes(
    root: Path, declared: tuple[str, ...], stamp: tuple[tuple[str, int, int], ...]
) -> tuple[Finding, ...]:
    metrics = tuple(Path(m).name for m in declared)
    found: list[Finding] = []
    checked_in: list[tuple[str, str]] = []
    mentioned = False
    files: set[str] = set()
    written = _WrittenNames()
    code: list[tuple[str, str, str]] = []  # (rel, lang, text)
    for path, rel in iter_files(root):
        files.add(rel)
        kind, lang = classify(rel)
        if kind == TESTS:
            continue
        text = read_text(path)
        if text is None:
            continue
        if rel in declared:
            checked_in.append((rel, text))
            continue
        if kind != DOCS and any(m in text for m in metrics):
            mentioned = True  # some code or config names the file: it is written, not typed in
        if lang == "python":
            code.append((rel, "python", text))
            written.python.append(text)
        elif lang == "shell" or path.name == "reproduce.sh":
            code.append((rel, "shell", text))
        if lang != "python" and kind != DOCS:  # a script or config may name a file it writes
            written.other.append(text)
    stdout = {
        n
        for rel, lang, text in code
        if lang == "shell"
        for n in _stdout_into_metrics(text, metrics)
    }
    base = Context(metrics, frozenset(files), written, False, root)
    for rel, lang, text in code:
        if lang == "python":
            piped = Path(rel).name in stdout
            found += _python(rel, text, Context(metrics, base.files, base.written, piped, root))
        else:
            found += _shell(rel, text, metrics, base)
    if not mentioned:  # a metrics file no code writes: its numbers were typed in
        for rel, text in checked_in:
            lines = text.splitlines()
            for key, value in _json_numbers(text):
                leaf = json.dumps(key.split(".")[-1])
                ln = next((n for n, t in enumerate(lines, 1) if leaf in t), 1)
                found.append(Finding(key, value, rel, ln, "checked in, written by no code"))
    return tuple(found)


class _WrittenNames:
    """Base names of the files some code of the submission may write (a file read from is a
    source only when none does): found when first asked, since few submissions ever ask."""

    def __init__(self) -> None:
        self.python: list[str] = []
        self.other: list[str] = []
        self._names: set[str] | None = None

    def __contains__(self, name: object) -> bool:
        if self._names is None:
            self._names = {n for text in self.other for n in _NAME_RE.findall(text)}
            for text in self.python:
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        self._names |= written_names(ast.parse(text))
                except (SyntaxError, ValueError, RecursionError):
                    continue
        return name in self._names


def expected_metrics(raw: Any) -> list[str]:
    """The metric names of an SAU's ``expected`` (JSON text, a mapping or a list of them)."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return []
    items = raw if isinstance(raw, list) else [raw]
    return [str(i["metric"]) for i in items if isinstance(i, Mapping) and i.get("metric")]


def matching(findings: Iterable[Finding], metric: str) -> list[Finding]:
    """The findings that write ``metric`` (as the execution record names it); a finding of the
    whole metrics file (key ``*``) writes every metric."""
    key = metric.rsplit(":", 1)[-1] if ":" in metric else metric
    return [f for f in findings if f.key in ("*", key) or squash(f.key) == squash(key)]


def fabricated_by_sau(
    folder: Path | str,
    saus: Iterable[Mapping[str, Any]],
    metrics_files: Iterable[str] = METRICS_FILES,
) -> dict[str, list[Finding]]:
    """SAU id -> the literals written for its expected results (SAUs without any are absent)."""
    todo = [(s, expected_metrics(s.get("expected"))) for s in saus]
    todo = [(s, m) for s, m in todo if m]
    if not todo:
        return {}
    findings = literal_writes(Path(folder), tuple(metrics_files))
    out: dict[str, list[Finding]] = {}
    for sau, names in todo:
        hits = [f for name in names for f in matching(findings, name)]
        if hits:
            out[str(sau.get("sau_id") or sau.get("id") or "")] = hits
    return out


def reasoning(findings: list[Finding]) -> str:
    """One sentence naming the fabricated results."""
    return "Fabricated result: " + "; ".join(f.describe() for f in findings[:3]) + "."


def fabricated_judgment(judgment: Judgment, findings: list[Finding]) -> Judgment:
    """The judgment of an SAU whose expected result is fabricated: 0, whatever the judge said."""
    judgment.verdict, judgment.score, judgment.failure_mode = "drifted", 0.0, FABRICATED
    judgment.evidence = [Evidence(f.file, f.line, f.line) for f in findings[:3]]
    judgment.reasoning = f"{reasoning(findings)} (the judge said: {judgment.reasoning})"
    return judgment
