"""D1, a value changed: the numeric literal of a setting named like the claim's value."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import Any

from sabench.drift.mutants import Mutant, Submission, apply_edits, parses


def changed_literal(token: str, value: float) -> str:
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


#: a number as config files and shell scripts write it
NUMBER_TOKEN = re.compile(r"(?<![\w.])[-+]?(?:\d[\d_]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w.])")


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
                out.append((a, b, changed_literal(pf.text[a:b], abs(float(node.value)))))
        return out
    text = sub.texts.get(path)
    if text is None:
        return []
    lines = text.splitlines(keepends=True)
    if not 0 < line <= len(lines):
        return []
    start = sum(len(x) for x in lines[: line - 1])
    out = []
    for m in NUMBER_TOKEN.finditer(lines[line - 1]):
        try:
            v = float(m.group(0).replace("_", ""))
        except ValueError:
            continue
        if _close(abs(v), abs(value)):
            token = m.group(0).lstrip("+-")
            a = start + m.end() - len(token)
            out.append((a, start + m.end(), changed_literal(token, abs(v))))
    return out


def _on_cited(fact: Any, cited: Sequence[tuple[str, int, int]]) -> bool:
    return any(fact.file == f and a <= fact.line <= b for f, a, b in cited)


def value_mutant(
    sub: Submission, sau: dict[str, Any], claim: Any, cited: Sequence[tuple[str, int, int]] = ()
) -> Mutant | None:
    """D1: the first of the claim's values held by a setting named like the claim, everywhere that
    setting holds it. With lines another judge cited for the claim, only a setting on those lines
    and its copies under the same name in any case (a YAML key, its argparse default, a
    constant): a setting that merely shares a word with the claim is often another one (``dim=0``
    of a concatenation for a claim about dimensions), and changing it breaks nothing the claim
    says."""
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
            if cited:
                names = {f.setting.lower() for f in facts if _on_cited(f, cited)}
                facts = [f for f in facts if f.setting.lower() in names]
            edits: dict[str, list[tuple[int, int, str]]] = {}
            for fact in facts:
                edits.setdefault(fact.file, []).extend(
                    _value_edits(sub, fact.file, fact.line, value)
                )
            files = {}
            for path, file_edits in edits.items():
                new = apply_edits(sub.texts[path], file_edits) if file_edits else None
                if (
                    new is not None
                    and new != sub.texts[path]
                    and parses(path, new, sub.texts[path])
                ):
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
