"""LaTeX to the paper text sabench reads (markdown headings, math kept as LaTeX, commands dropped
and their text kept, listings fenced): how the ResearchCodeBench import turns a paper's ``.tex``
into ``paper.md`` (:mod:`sabench.peer_data.researchcodebench`)."""

from __future__ import annotations

import re

_MATH = re.compile(
    r"\$\$(.+?)\$\$|\\\[(.+?)\\\]|\\begin\{((?:equation|align|alignat|gather|multline|eqnarray"
    r"|displaymath|math|flalign)\*?)\}(.+?)\\end\{\3\}|(?<!\\)\$(.+?)(?<!\\)\$|\\\((.+?)\\\)",
    re.DOTALL,
)
_VERBATIM = re.compile(
    r"\\begin\{(lstlisting|verbatim|minted)\}(?:\[[^\]]*\])?(.*?)\\end\{\1\}", re.DOTALL
)
#: What a command becomes (its last argument in the braces); unlisted ones keep their text.
_COMMANDS = {"section": "\n\n## {}\n\n", "subsection": "\n\n### {}\n\n", "paragraph": "\n\n**{}** "}
_COMMANDS |= {"subsubsection": "\n\n#### {}\n\n", "subparagraph": "\n\n**{}** ", "item": "\n- "}
_COMMANDS |= {"footnote": " ({})", "begin": "\n", "end": "\n"}
_COMMANDS |= dict.fromkeys(("ref", "eqref", "cref", "Cref", "autoref", "pageref"), "[{}]")
_DROPPED = """label cite citep citet citealp citeauthor citeyear parencite textcite nocite
    includegraphics vspace hspace bibliography bibliographystyle usepackage setlength addtolength
    newcommand renewcommand definecolor newcolumntype captionsetup hypersetup pagestyle
    thispagestyle input include newlength setcounter addcontentsline"""
_COMMANDS |= dict.fromkeys(_DROPPED.split(), "")
_SYMBOLS = {"\\\\": "\n", "\\,": " ", "\\;": " ", "\\!": "", "\\ ": " ", "\\%": "%", "\\&": "&"}
_SYMBOLS |= {"\\_": "_", "\\#": "#", "\\$": "$", "\\{": "{", "\\}": "}", "``": '"', "''": '"'}
_SPACE, _BLANK, _NAME = re.compile(r"\s*"), re.compile(r"[ \t]*"), re.compile(r"\\([A-Za-z]+)\*?")
_MACRO = re.compile(
    r"\\(?:re)?newcommand\*?\s*\{?\\([A-Za-z]+)\}?\s*(?=\{)|\\def\s*\\([A-Za-z]+)\s*(?=\{)"
)


def _group(text: str, i: int, open_: str = "{", close: str = "}") -> tuple[str, int] | None:
    """The balanced group at ``text[i]`` (spaces skipped) and the index after it."""
    j = _SPACE.match(text, i).end()  # type: ignore[union-attr]
    depth = 0
    for k in range(j, len(text)):
        if k == j and text[k] != open_:
            return None
        if text[k] in (open_, close) and text[k - 1] != "\\":
            depth += 1 if text[k] == open_ else -1
            if depth == 0:
                return text[j + 1 : k], k + 1
    return None


def _command_args(text: str, i: int) -> tuple[list[str], int]:
    """A command's ``{arg}`` groups from ``text[i]`` on (``[opt]`` ones skipped), one after the
    other: a heading never takes the next paragraph's group."""
    j = _BLANK.match(text, i).end()  # type: ignore[union-attr]
    args: list[str] = []
    while j < len(text) and text[j] in "[{":
        group = _group(text, j, *("[]" if text[j] == "[" else "{}"))
        if group is None:
            break
        args += [group[0]] if text[j] == "{" else []
        j = group[1]
    return args, (j if j > i and text[j - 1] in "]}" else i)


def _plain(text: str) -> str:
    """LaTeX text (math already set aside) as markdown-ish text."""
    out: list[str] = []
    i = 0
    while i < len(text):
        two, ch = text[i : i + 2], text[i]
        m = _NAME.match(text, i) if ch == "\\" else None
        if two in _SYMBOLS:
            out.append(_SYMBOLS[two])
            i += 2
        elif m:
            name = m.group(1)
            args, i = _command_args(text, m.end())
            arg = _plain(args[-1]).strip() if args and name not in ("begin", "end") else ""
            if (name, args[:1]) == ("begin", ["abstract"]):
                out.append("\n\n## Abstract\n\n")
            elif name in _COMMANDS:
                out.append(_COMMANDS[name].format(arg) if arg or "{" not in _COMMANDS[name] else "")
            else:  # textbf{x}, caption{x}, multicolumn{2}{c}{x}: the text is the last argument
                out.append(arg)
        else:
            out.append({"~": " ", "&": " | ", "{": "", "}": "", "\\": ""}.get(ch, ch))
            i += 1
    return "".join(out)


def _expand_macros(tex: str) -> str:
    """Argument-free macros the paper defines (``\\newcommand{\\ours}{DyT}``) replaced by their
    text: a method's name is what snippet names and passages are matched on."""
    macros = {}
    for m in _MACRO.finditer(tex):
        group = _group(tex, m.end())
        if group and len(group[0]) < 200 and "#" not in group[0]:
            macros[m.group(1) or m.group(2)] = group[0]
    if macros:
        pattern = re.compile(r"\\(" + "|".join(map(re.escape, macros)) + r")(?![A-Za-z])")
        for _ in range(2):  # a macro that uses another
            tex = pattern.sub(lambda m: macros[m.group(1)], tex)
    return tex


def latex_to_markdown(tex: str, title: str) -> str:
    """The paper's text for sabench: headings as markdown, math kept as LaTeX (``$...$``, a
    ``$$`` block per display), commands dropped and their text kept, code listings fenced."""
    tex = _expand_macros(re.sub(r"(?<!\\)%.*", "", tex))
    macro = re.search(r"\\abstract\s*(?=\{)", tex)
    abstract = _group(tex, macro.end()) if macro else None
    begin, end = tex.find("\\begin{document}"), tex.find("\\end{document}")
    body = tex[begin + 16 : end if end > begin else len(tex)] if begin >= 0 else tex
    if abstract:
        body = "\\begin{abstract}" + abstract[0] + "\\end{abstract}\n" + body
    kept: list[str] = []

    def keep(text: str) -> str:
        kept.append(text)
        return f"\x00{len(kept) - 1}\x00"

    def math(m: re.Match[str]) -> str:
        inline = m.group(5) if m.group(5) is not None else m.group(6)
        if inline is not None:
            return keep(f"${inline.strip()}$")
        inner = next(g for g in (m.group(1), m.group(2), m.group(4)) if g is not None)
        inner = re.sub(r"\\(label|nonumber|notag)\b(\{[^}]*\})?", "", inner)
        return keep(f"\n$${inner.strip()}$$\n")

    body = _VERBATIM.sub(lambda m: keep(f"\n```\n{m.group(2).strip()}\n```\n"), body)
    body = re.sub(r"\\(bibliography|printbibliography)\b.*", "", _MATH.sub(math, body), flags=re.S)
    text = re.sub(r"[ \t]+([.,;:)])", r"\1", _plain(body))  # where a citation was
    text = re.sub(r"\x00(\d+)\x00", lambda m: kept[int(m.group(1))], text)
    text = re.sub(r" *\n *", "\n", re.sub(r"[ \t]+", " ", text))
    return f"# {title}\n\n{text.strip()}\n"
