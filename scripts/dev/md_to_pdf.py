"""Render a small markdown paper as a plain text PDF (fpdf2), for the bundled demo papers.

Handles what the demo papers use: a `# Title`, `## Section` headings, paragraphs with **bold**
and `code` spans, `- ` lists, pipe tables and fenced code blocks. The text stays extractable
(pypdf), and the output is byte-for-byte reproducible (fixed creation date).

Usage:
    python scripts/dev/md_to_pdf.py                      # regenerate the bundled PDF paper(s)
    python scripts/dev/md_to_pdf.py SOURCE.md OUT.pdf
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from pathlib import Path

from fpdf import FPDF

REPO = Path(__file__).resolve().parents[2]
#: Markdown sources kept here whose only rendered form in the repo is a PDF.
BUNDLED = {
    Path(__file__).with_name("kmeans-pp.paper.md"): REPO
    / "resources"
    / "papers"
    / "kmeans-pp"
    / "paper.pdf",
}
FIXED_DATE = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
BODY = ("Helvetica", 10.5)
CODE = ("Courier", 9.5)
LINE_H = 5.2
#: The core PDF fonts are Latin-1 only: map the few other characters a paper tends to contain.
REPLACEMENTS = {
    "\u2192": "->",
    "\u2190": "<-",
    "\u2264": "<=",
    "\u2265": ">=",
    "\u2212": "-",
    "\u2013": "-",
    "\u2014": " - ",
    "\u2018": "'",
    "\u2019": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u2026": "...",
}


def latin1(text: str) -> str:
    for src, dst in REPLACEMENTS.items():
        text = text.replace(src, dst)
    try:
        text.encode("latin-1")
    except UnicodeEncodeError as exc:
        bad = text[exc.start : exc.end]
        raise SystemExit(f"character {bad!r} cannot be rendered with the core PDF fonts") from None
    return text


def spans(text: str) -> list[tuple[str, str]]:
    """Split a paragraph into (style, text) runs: '' plain, 'B' bold, 'code'."""
    runs: list[tuple[str, str]] = []
    for i, part in enumerate(re.split(r"`([^`]*)`", text)):
        if i % 2:
            runs.append(("code", part))
            continue
        for j, sub in enumerate(re.split(r"\*\*(.+?)\*\*", part)):
            if sub:
                runs.append(("B" if j % 2 else "", sub))
    return runs


class PaperPDF(FPDF):
    def footer(self) -> None:
        self.set_y(-12)
        self.set_font(BODY[0], "", 8)
        self.cell(0, 6, str(self.page_no()), align="C")

    def paragraph(self, text: str, indent: float = 0.0, bullet: bool = False) -> None:
        left = self.l_margin
        if indent:
            self.set_left_margin(left + indent)
            self.set_x(left + indent)
        if bullet:
            self.set_font(BODY[0], "", BODY[1])
            self.set_x(left + indent - 4)
            self.write(LINE_H, "-")
            self.set_x(left + indent)
        for style, run in spans(text):
            if style == "code":
                self.set_font(CODE[0], "", CODE[1])
            else:
                self.set_font(BODY[0], style, BODY[1])
            self.write(LINE_H, latin1(run))
        self.ln(LINE_H)
        if indent:
            self.set_left_margin(left)
        self.ln(1.5)

    def heading(self, text: str, level: int) -> None:
        size = 16 if level == 1 else 12.5
        self.ln(2 if level == 1 else 3)
        self.set_font(BODY[0], "B", size)
        # Keep the title on one line where a smaller font allows: text extraction then gives it whole.
        while level == 1 and size > 11 and self.get_string_width(latin1(text)) > self.epw:
            size -= 0.5
            self.set_font(BODY[0], "B", size)
        self.multi_cell(0, size * 0.5, latin1(text), align="C" if level == 1 else "L")
        self.ln(2)

    def code_block(self, lines: list[str]) -> None:
        self.set_font(CODE[0], "", CODE[1])
        for line in lines:
            self.multi_cell(0, LINE_H - 0.6, latin1(line) or " ")
        self.ln(2)

    def pipe_table(self, rows: list[list[str]]) -> None:
        self.set_font(BODY[0], "", 9)
        with self.table(text_align="LEFT", line_height=LINE_H) as table:
            for cells in rows:
                row = table.row()
                for cell in cells:
                    row.cell(latin1(cell.replace("`", "")))
        self.ln(3)


def _table_rows(lines: list[str]) -> list[list[str]]:
    rows = []
    for line in lines:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if all(re.fullmatch(r":?-{3,}:?", c) for c in cells):
            continue
        rows.append(cells)
    return rows


def render(markdown: str) -> bytes:
    """The PDF bytes of a markdown paper."""
    pdf = PaperPDF(format="A4")
    pdf.set_creation_date(FIXED_DATE)
    pdf.set_margins(22, 20, 22)
    pdf.set_auto_page_break(True, margin=18)
    pdf.add_page()
    lines = markdown.splitlines()
    title = next((ln[2:].strip() for ln in lines if ln.startswith("# ")), "")
    pdf.set_title(latin1(title))
    i = 0
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            pdf.paragraph(" ".join(s.strip() for s in paragraph))
            paragraph.clear()

    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("```"):
            flush()
            block = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                block.append(lines[i])
                i += 1
            pdf.code_block(block)
        elif m := re.match(r"^(#{1,3})\s+(.*)", line):
            flush()
            pdf.heading(m.group(2).strip(), len(m.group(1)))
        elif stripped.startswith("|"):
            flush()
            block = []
            while i < len(lines) and lines[i].strip().startswith("|"):
                block.append(lines[i])
                i += 1
            pdf.pipe_table(_table_rows(block))
            continue
        elif stripped.startswith("- "):
            flush()
            item = [stripped[2:]]
            while (
                i + 1 < len(lines)
                and lines[i + 1].startswith("  ")
                and not lines[i + 1].strip().startswith("- ")
            ):
                i += 1
                item.append(lines[i].strip())
            pdf.paragraph(" ".join(item), indent=6, bullet=True)
        elif not stripped:
            flush()
        else:
            paragraph.append(line)
        i += 1
    flush()
    return bytes(pdf.output())


def convert(source: Path, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_bytes(render(source.read_text(encoding="utf-8")))
    tmp.replace(out)
    print(f"{source} -> {out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", type=Path, help="markdown paper")
    parser.add_argument("out", nargs="?", type=Path, help="PDF to write")
    args = parser.parse_args(argv)
    if (args.source is None) != (args.out is None):
        parser.error("give both SOURCE and OUT, or neither to regenerate the bundled papers")
    pairs = [(args.source, args.out)] if args.source else list(BUNDLED.items())
    for source, out in pairs:
        convert(source, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
