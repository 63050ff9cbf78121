"""The paper's markdown as the report shows it: headings, paragraphs, lists, tables and code blocks,
with code spans, bold and italics inside them, and each SAU's quote marked where the paper says it.

The papers are ingested as ``paper.md`` (written by people, or converted from a PDF): a small,
known subset of markdown, rendered here rather than by a library the pinned environment lacks.
Everything is escaped first; only the markup below becomes tags.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sabench.report_site.formatting import escape

#: A quote to mark: (the text as the paper writes it, the mark's anchor id, its title).
Quote = tuple[str, str, str]

_OPEN, _CLOSE = "\ue000", "\ue001"  # where a mark opens and closes, until the markup is done
_CODE = re.compile(r"`([^`]+)`")
_CODE_SLOT = re.compile("\ue002(\\d+)\ue003")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])")
_HEADING = re.compile(r"(#{1,6})\s+(.*)")
_ITEM = re.compile(r"\s*(?:[-*+]|(\d+)[.)])\s+(.*)")
_FENCE = re.compile(r"\s*(```|~~~)")


def inline(text: str, marks: Sequence[tuple[int, int, str]] = ()) -> str:
    """One line of markdown as HTML: code spans, ``**bold**``, ``*italics*``; each mark
    ``(start, end, opening tag)`` wraps ``text[start:end]`` (positions in ``text``) and closes
    with ``</mark>``. Code spans are taken first, so nothing inside them is markup."""
    pieces, tags, last = [], [], 0
    for start, end, tag in sorted(marks):
        pieces += [text[last:start], _OPEN, text[start:end], _CLOSE]
        tags.append(tag)
        last = end
    pieces.append(text[last:])
    html = escape("".join(pieces))
    codes: list[str] = []

    def code(m: re.Match[str]) -> str:
        codes.append(f"<code>{m.group(1)}</code>")
        return f"\ue002{len(codes) - 1}\ue003"

    html = _ITALIC.sub(r"<em>\1</em>", _BOLD.sub(r"<strong>\1</strong>", _CODE.sub(code, html)))
    html = _CODE_SLOT.sub(lambda m: codes[int(m.group(1))], html)
    opening = iter(tags)
    return re.sub(_OPEN, lambda _: next(opening), html).replace(_CLOSE, "</mark>")


class Marker:
    """Marks each SAU's quote once on the page, where it is first found (case and spacing
    aside), and never two quotes over each other."""

    def __init__(self, quotes: Sequence[Quote]) -> None:
        self.quotes = [(" ".join(q.split()).lower(), a, t) for q, a, t in quotes if len(q) >= 3]
        self.placed: set[str] = set()

    def render(self, text: str) -> str:
        """``text`` (one paragraph, list item or table cell) as HTML, its quotes marked."""
        flat = " ".join(text.split())
        lower, spans = flat.lower(), []
        for quote, anchor, title in self.quotes:
            if anchor in self.placed:
                continue
            at = lower.find(quote)
            end = at + len(quote)
            if at >= 0 and all(end <= a or at >= b for a, b, _ in spans):
                tag = f'<mark id="{escape(anchor)}" title="{escape(title)}">'
                spans.append((at, end, tag))
                self.placed.add(anchor)
        return inline(flat, spans)


def _table(lines: list[str], marker: Marker) -> str:
    rows = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines]
    rows = [r for r in rows if not all(re.fullmatch(r":?-{2,}:?", c) for c in r if c)]
    if not rows:
        return ""
    head = "".join(f"<th>{marker.render(c)}</th>" for c in rows[0])
    body = "".join(
        "<tr>" + "".join(f"<td>{marker.render(c)}</td>" for c in row) + "</tr>" for row in rows[1:]
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _list(lines: list[str], marker: Marker) -> str:
    items: list[str] = []
    first = _ITEM.match(lines[0])
    ordered = bool(first and first.group(1))
    for line in lines:
        item = _ITEM.match(line)
        if item:
            items.append(item.group(2))
        else:  # a continuation line of the item above
            items[-1] += " " + line.strip()
    tag = "ol" if ordered else "ul"
    return f"<{tag}>" + "".join(f"<li>{marker.render(i)}</li>" for i in items) + f"</{tag}>"


def _blocks(text: str) -> list[tuple[str, list[str]]]:
    """``("code", lines)`` for each fenced block, ``("text", lines)`` for each run of lines
    between blank lines."""
    blocks: list[tuple[str, list[str]]] = []
    current: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1) == fence:
                blocks.append(("code", current))
                current, fence = [], None
            else:
                current.append(line)
        elif opened:
            if current:
                blocks.append(("text", current))
            current, fence = [], opened.group(1)
        elif line.strip():
            current.append(line)
        elif current:
            blocks.append(("text", current))
            current = []
    if current:
        blocks.append(("code" if fence is not None else "text", current))
    return blocks


def render(text: str, quotes: Sequence[Quote] = ()) -> str:
    """A paper's markdown as HTML blocks, each quote of ``quotes`` marked where first found."""
    marker, out = Marker(quotes), []
    for kind, lines in _blocks(text):
        if kind == "code":
            out.append(f"<pre><code>{escape(chr(10).join(lines))}</code></pre>")
            continue
        while lines and (heading := _HEADING.match(lines[0].strip())):
            level = min(len(heading.group(1)) + 1, 6)
            out.append(f"<h{level}>{inline(heading.group(2).strip())}</h{level}>")
            lines = lines[1:]
        if not lines:
            continue
        if all(ln.lstrip().startswith("|") for ln in lines):
            out.append(_table(lines, marker))
        elif _ITEM.match(lines[0]):
            out.append(_list(lines, marker))
        else:
            out.append(f"<p>{marker.render(' '.join(lines))}</p>")
    return "\n".join(out)
