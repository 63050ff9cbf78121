"""Ingest a paper folder (markdown or PDF) into normalised text and ``paper.json``.

PDF text comes from pypdf (BSD-licensed; pymupdf would make the project AGPL). Markdown must be UTF-8.
The agent's view of the paper (paper.md, addendum.md, assets) is staged separately from the SAUs and
rubrics, so the folder that gets mounted into a sandbox never holds what the judges grade against.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import sys
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sabench.errors import UserError
from sabench.io import atomic_path, write_json, write_text
from sabench.steps import ArgumentParser, command, step

PAPER_FILES = ("paper.md", "paper.pdf")
#: Files of a paper folder that only judges may see; never staged into the agent's view.
JUDGE_ONLY = {
    "saus.yaml",
    "saus.yml",
    "saus.json",
    "sau.json",
    "rubric.json",
    "judge.addendum.md",
    "meta.yaml",
}
ASSET_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".svg", ".csv", ".txt", ".bib"}
MIN_CHARS = 200
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_PAGE_NUMBER = re.compile(r"^\s*(?:page\s+)?\d+\s*(?:/\s*\d+)?\s*$", re.IGNORECASE)


def find_paper_file(paper_dir: Path) -> Path:
    """The paper's text: paper.md wins over paper.pdf when both exist."""
    for name in PAPER_FILES:
        candidate = paper_dir / name
        if candidate.is_file():
            return candidate
    raise UserError(paper_dir, None, "no paper.md or paper.pdf in this paper folder")


def read_markdown(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(
            path, None, f"not UTF-8 text (byte {exc.start}); re-save it as UTF-8"
        ) from None
    except OSError as exc:
        raise UserError(path, None, f"cannot read: {exc.strerror}") from None


@contextmanager
def _quiet_pypdf() -> Iterator[None]:
    """pypdf logs what it repairs or gives up on ("EOF marker not found"): the error raised here
    says it once, and a repaired file needs no warning."""
    logger = logging.getLogger("pypdf")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def pdf_title(path: Path) -> str | None:
    """The PDF's own /Title metadata, more reliable than its first extracted line."""
    from pypdf import PdfReader

    try:
        with _quiet_pypdf():
            meta = PdfReader(path).metadata
        title = (meta.title or "").strip() if meta else ""
    except Exception:
        return None
    return title or None


def read_pdf(path: Path) -> str:
    """Extract a PDF's text page by page, dropping bare page numbers."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        with _quiet_pypdf():
            reader = PdfReader(path)
            if reader.is_encrypted:
                try:
                    if not reader.decrypt(""):
                        raise UserError(path, None, "encrypted PDF; give a decrypted copy")
                except UserError:
                    raise
                except Exception:
                    raise UserError(path, None, "encrypted PDF; give a decrypted copy") from None
            pages = [page.extract_text() or "" for page in reader.pages]
    except UserError:
        raise
    except (PdfReadError, ValueError, OSError, KeyError, TypeError) as exc:
        raise UserError(path, None, f"unreadable PDF ({type(exc).__name__}: {exc})") from None
    lines = [line for page in pages for line in page.splitlines() if not _PAGE_NUMBER.match(line)]
    return "\n".join(lines)


def normalise_text(text: str) -> str:
    """NFKC, unix newlines, no trailing spaces, at most one blank line in a row."""
    text = unicodedata.normalize("NFKC", text).replace("\r\n", "\n").replace("\r", "\n")
    text = text.replace("\x00", "")
    lines = [line.rstrip() for line in text.split("\n")]
    out: list[str] = []
    for line in lines:
        if not line and out and not out[-1]:
            continue
        out.append(line)
    return "\n".join(out).strip() + "\n"


def sections(text: str) -> list[dict[str, object]]:
    """Markdown headings (or numbered headings in PDF text) with their line numbers."""
    found: list[dict[str, object]] = []
    numbered = re.compile(r"^(\d+(?:\.\d+)*)\.?\s+([A-Z][^.!?]{1,80})$")
    for lineno, line in enumerate(text.split("\n"), start=1):
        match = _HEADING.match(line)
        if match:
            found.append({"title": match.group(2), "level": len(match.group(1)), "line": lineno})
            continue
        match = numbered.match(line.strip())
        if match and len(line) < 90:
            level = match.group(1).count(".") + 2
            found.append({"title": line.strip(), "level": level, "line": lineno})
    return found


def title_of(text: str, sects: list[dict[str, object]], fallback: str) -> str:
    for sect in sects:
        if sect["level"] == 1:
            return str(sect["title"])
    for line in text.split("\n"):
        if line.strip():
            return line.strip().lstrip("#").strip()[:200]
    return fallback


def ingest_paper(paper_dir: Path, out_md: Path, out_json: Path, agent_view: Path) -> dict:
    """Write the normalised text, its metadata and the agent's view of one paper folder."""
    paper_dir = Path(paper_dir)
    paper = paper_dir.name
    source = find_paper_file(paper_dir)
    raw = read_pdf(source) if source.suffix == ".pdf" else read_markdown(source)
    text = normalise_text(raw)
    if len(text.strip()) < MIN_CHARS:
        raise UserError(
            source, None, f"only {len(text.strip())} characters of text (need {MIN_CHARS})"
        )
    sects = sections(text)
    title = (pdf_title(source) if source.suffix == ".pdf" else None) or title_of(text, sects, paper)
    meta = {
        "paper": paper,
        "title": title,
        "sha256": hashlib.sha256(source.read_bytes()).hexdigest(),
        "text_sha256": hashlib.sha256(text.encode()).hexdigest(),
        "source_file": source.name,
        "source_format": source.suffix.lstrip("."),
        "sections": sects,
        "n_chars": len(text),
        "has_addendum": (paper_dir / "addendum.md").is_file(),
    }
    stage_agent_view(paper_dir, text, agent_view)
    write_text(out_md, text)
    write_json(out_json, meta)
    return meta


def stage_agent_view(paper_dir: Path, text: str, agent_view: Path) -> None:
    """What an agent may read: the paper text, its addendum, assets and the blacklist it must respect."""
    with atomic_path(agent_view, directory=True) as tmp:
        (tmp / "paper.md").write_text(text, encoding="utf-8")
        for name in ("paper.pdf", "addendum.md", "blacklist.txt"):
            if (paper_dir / name).is_file():
                shutil.copy2(paper_dir / name, tmp / name)
        if (tmp / "addendum.md").exists():
            read_markdown(tmp / "addendum.md")
        for sub in ("assets", "figures"):
            if (paper_dir / sub).is_dir():
                shutil.copytree(paper_dir / sub, tmp / sub)
        for item in paper_dir.iterdir():
            if (
                item.is_file()
                and item.suffix.lower() in ASSET_SUFFIXES
                and item.name not in JUDGE_ONLY | {"blacklist.txt"}
            ):
                (tmp / "assets").mkdir(exist_ok=True)
                shutil.copy2(item, tmp / "assets" / item.name)


@command
def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paper_dir", type=Path)
    parser.add_argument(
        "--out", type=Path, required=True, help="folder for paper.md, paper.json, agent_view/"
    )
    args = parser.parse_args(argv)
    meta = ingest_paper(
        args.paper_dir,
        args.out / "paper.md",
        args.out / "paper.json",
        args.out / "agent_view",
    )
    with step(None, "ingest") as log:  # the rule's log line; a user error above returns 2
        log.info(
            "%s: %r, %d chars, %d sections",
            meta["paper"],
            meta["title"],
            meta["n_chars"],
            len(meta["sections"]),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
