"""Syntax colouring of the cited code: a few regular expressions per language, offline."""

from __future__ import annotations

import re
from pathlib import Path

from sabench.report_site.formatting import escape

_HIGHLIGHT_MAX_BYTES = 400_000

_PY_WORDS = (
    "False None True and as assert async await break class continue def del elif else except "
    "finally for from global if import in is lambda nonlocal not or pass raise return try while "
    "with yield match case self"
)
_SH_WORDS = (
    "if then else elif fi for while until do done case esac function in export local return set "
    "exit cd echo source"
)
_C_WORDS = (
    "auto break case catch class const continue default do else enum export extends false final "
    "finally fn for func function go if impl import in interface let match mut new nil null "
    "package private protected public return static struct switch this throw true try type "
    "typedef use var void while"
)
_STRINGS = r'"(?:\\.|[^"\\\n])*"|' + r"'(?:\\.|[^'\\\n])*'"
_NUMBER = r"(?P<tn>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?\b)"


def _lexer(comment: str, strings: str, words: str) -> re.Pattern[str]:
    keys = "|".join(words.split())
    parts = [f"(?P<tc>{comment})" if comment else "", f"(?P<ts>{strings})"]
    # keywords and numbers start at a word boundary, tested once for both (a fifth faster)
    parts.append(rf"\b(?:(?P<tk>(?:{keys})\b)|{_NUMBER})" if keys else rf"\b{_NUMBER}")
    return re.compile("|".join(p for p in parts if p))


_TRIPLE = r'"""[\s\S]*?"""|' + r"'''[\s\S]*?'''"
_PY = _lexer(r"#[^\n]*", _TRIPLE + "|" + _STRINGS, _PY_WORDS)
_HASH = _lexer(r"#[^\n]*", _STRINGS, _SH_WORDS)
_C = _lexer(r"//[^\n]*|/\*[\s\S]*?\*/", _STRINGS + r"|`[^`]*`", _C_WORDS)
_DATA = _lexer(r"#[^\n]*", _STRINGS, "true false null yes no")
_LEXERS = {
    **dict.fromkeys((".py", ".pyi", ".pyx"), _PY),
    **dict.fromkeys((".sh", ".bash", ".r", ".jl", ".pl", ".rb", ".mk"), _HASH),
    **dict.fromkeys(
        (".c", ".h", ".cc", ".cpp", ".hpp", ".cu", ".js", ".ts", ".java", ".go", ".rs"), _C
    ),
    **dict.fromkeys((".yaml", ".yml", ".toml", ".cfg", ".ini", ".json", ".txt"), _DATA),
}


def highlight_lines(name: str, text: str) -> list[str]:
    """``text`` as one HTML string per line with comments, strings, keywords and numbers in
    spans (classes tc, ts, tk, tn). A few regular expressions, not a parser: fast enough for
    thousands of files, offline, and every character of the file is shown escaped."""
    suffix = Path(name).suffix.lower()
    lexer = _LEXERS.get(suffix)
    if name in ("Makefile", "Dockerfile", "Snakefile") or suffix == ".smk":
        lexer = _HASH if name != "Snakefile" and suffix != ".smk" else _PY
    if lexer is None or len(text) > _HIGHLIGHT_MAX_BYTES:
        return [escape(line) for line in text.split("\n")]
    # the text is escaped once, then lexed (escaping adds no quote, '#', '/' or digit, so the
    # tokens are the same); one chunk per token, split into lines once: a token that spans lines
    # is a span per line (none for an empty line), so that every line stands alone
    text = escape(text)
    chunks: list[str] = []
    at = 0
    for match in lexer.finditer(text):
        start = match.start()
        if start > at:
            chunks.append(text[at:start])
        value, cls = match.group(), match.lastgroup
        if "\n" in value:
            chunks.append(
                "\n".join(f'<span class="{cls}">{p}</span>' if p else "" for p in value.split("\n"))
            )
        else:
            chunks.append(f'<span class="{cls}">{value}</span>')
        at = match.end()
    chunks.append(text[at:])
    return "".join(chunks).split("\n")
