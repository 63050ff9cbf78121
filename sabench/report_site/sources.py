"""The run folders and the checkout behind the pages: the cited code beside the paper's sentence,
the execution log, the transcript, the run dates and the commit."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sabench.grounding import claim_sentence
from sabench.report_site.fragments import excerpt_html
from sabench.report_site.highlight import highlight_lines
from sabench.report_site.markdown import inline

#: Lines of code shown per cited span (and around it), of the execution log's tail, characters
#: per transcript event.
MAX_SPAN_LINES = 30
CONTEXT_LINES = 2
LOG_TAIL_LINES = 60
MAX_EVENT_CHARS = 2000
MAX_EVENTS = 400
#: Largest submission file with a page of its own (and in the paper's diff page).
MAX_FILE_BYTES = 300_000
#: A run's key: (agent, paper, seed).
Run = tuple[str, str, str]


class Sources:
    """The run folders of a results root, read once each: code, logs, transcripts, papers."""

    def __init__(self, results: Path | None) -> None:
        self.results = Path(results) if results is not None else None
        self._code: dict[tuple[Run, str], list[str] | None] = {}
        self._papers: dict[str, list[str]] = {}
        # one excerpt per cited span and one paragraph per quote: the run, paper and disagreements
        # pages show the same ones again (the templates only read them)
        self._excerpts: dict[tuple[Run, str, int, int], dict[str, Any]] = {}
        self._contexts: dict[tuple[str, str], str | None] = {}
        self._sentences: dict[tuple[str, str, str], str | None] = {}
        self._files: dict[Run, list[str]] = {}

    def run_dir(self, run: Run) -> Path | None:
        return self.results / "runs" / run[0] / run[1] / run[2] if self.results else None

    def code_lines(self, run: Run, file: str) -> list[str] | None:
        key = (run, file)
        if key not in self._code:
            folder = self.run_dir(run)
            lines = None
            # the submission's own file, else one its run wrote (results.json, logs: executed/)
            for part in ("submission", "executed") if folder is not None else ():
                base = (folder / part).resolve()
                path = (base / file).resolve()
                if path.is_relative_to(base) and path.is_file():
                    text = path.read_bytes().decode("utf-8", errors="replace")
                    lines = highlight_lines(path.name, text)
                    break
            self._code[key] = lines
        return self._code[key]

    def excerpt(self, run: Run, ev: dict[str, Any], href: str | None = None) -> dict[str, Any]:
        """One cited span: ``file:start-end`` and its highlighted lines (or why there are none),
        and ``html``, the span as the pages show it (``href``: the file's page, linked when the
        file is there)."""
        key = (run, ev["file"], ev["start"], ev["end"])
        if key not in self._excerpts:
            excerpt = self._excerpt(run, ev)
            if href and excerpt["lines"]:
                excerpt["href"] = f"{href}#L{ev['start']}-{max(ev['end'], ev['start'])}"
            excerpt["html"] = excerpt_html(excerpt)
            self._excerpts[key] = excerpt
        return self._excerpts[key]

    def _excerpt(self, run: Run, ev: dict[str, Any]) -> dict[str, Any]:
        start, end = ev["start"], max(ev["end"], ev["start"])
        where = f"{ev['file']}:{start}" + (f"-{end}" if end != start else "")
        lines = self.code_lines(run, ev["file"])
        if lines is None:
            note = "the run folder keeps no such file (the judgment names it; its text is gone)"
            return {"where": where, "lines": [], "note": note}
        if start > len(lines):
            return {"where": where, "lines": [], "note": f"the file has {len(lines)} lines"}
        last = min(end, len(lines), start + MAX_SPAN_LINES - 1)
        more = min(end, len(lines)) - last
        # the cited lines (marked) with a little of the code around them
        first, after = (
            max(1, start - CONTEXT_LINES),
            min(len(lines), last + (0 if more > 0 else CONTEXT_LINES)),
        )
        shown = [(n, lines[n - 1], start <= n <= last) for n in range(first, after + 1)]
        return {"where": where, "lines": shown, "note": f"… {more} more lines" if more > 0 else ""}

    def files(self, run: Run) -> list[str]:
        """The submission's text files (relative paths, sorted), at most MAX_FILE_BYTES each."""
        if run not in self._files:
            self._files[run] = self._list(run)
        return self._files[run]

    def _list(self, run: Run) -> list[str]:
        folder = self.run_dir(run)
        base = folder / "submission" if folder else None
        if base is None or not base.is_dir():
            return []
        out = []
        for path in sorted(base.rglob("*")):
            if path.is_file() and not path.is_symlink() and path.stat().st_size <= MAX_FILE_BYTES:
                rel = path.relative_to(base).as_posix()
                if not any(part.startswith(".") for part in rel.split("/")):
                    out.append(rel)
        return out

    def text(self, run: Run, file: str) -> str | None:
        """A submission file's text (None when it is not text)."""
        folder = self.run_dir(run)
        if folder is None:
            return None
        data = (folder / "submission" / file).read_bytes()
        if b"\0" in data[:8192]:
            return None
        return data.decode("utf-8", errors="replace")

    def paper_text(self, paper: str) -> str | None:
        path = self.results / "papers" / paper / "paper.md" if self.results else None
        return (
            path.read_text(encoding="utf-8", errors="replace") if path and path.is_file() else None
        )

    def log_tail(self, run: Run) -> str | None:
        folder = self.run_dir(run)
        path = folder / "execution.log" if folder else None
        if path is None or not path.is_file():
            return None
        text = path.read_bytes()[-200_000:].decode("utf-8", errors="replace")
        return "\n".join(text.splitlines()[-LOG_TAIL_LINES:])

    def transcript(self, run: Run) -> list[dict[str, str]] | None:
        folder = self.run_dir(run)
        path = folder / "transcript.jsonl" if folder else None
        if path is None or not path.is_file():
            return None
        events = []
        with open(path, encoding="utf-8", errors="replace") as fh:
            for i, line in enumerate(fh):
                if i >= MAX_EVENTS:
                    events.append({"head": "…", "body": f"(more events in {path.name})"})
                    break
                try:
                    event = json.loads(line)
                except ValueError:
                    event = {"text": line.rstrip("\n")}
                if not isinstance(event, dict):
                    event = {"value": event}
                head = " ".join(f"{k}={event[k]}" for k in ("step", "event", "role") if k in event)
                rest = {k: v for k, v in event.items() if k not in ("step", "event", "role", "t")}
                body = json.dumps(rest, indent=1, ensure_ascii=False, default=str)
                if len(body) > MAX_EVENT_CHARS:
                    body = body[:MAX_EVENT_CHARS] + " …"
                events.append({"head": head or f"#{i}", "body": body})
        return events

    def _paragraphs(self, paper: str) -> list[str]:
        if paper not in self._papers:
            path = self.results / "papers" / paper / "paper.md" if self.results else None
            text = (
                path.read_text(encoding="utf-8", errors="replace")
                if path and path.is_file()
                else ""
            )
            self._papers[paper] = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text)]
        return self._papers[paper]

    def context(self, paper: str, quote: str) -> str | None:
        """The paper's paragraph that holds ``quote``, with the quote marked (trimmed around it)."""
        key = (paper, quote)
        if key not in self._contexts:
            self._contexts[key] = self._context(paper, quote)
        return self._contexts[key]

    def _context(self, paper: str, quote: str) -> str | None:
        needle = " ".join(quote.split()).lower()
        if len(needle) < 3:
            return None
        for para in self._paragraphs(paper):
            at = para.lower().find(needle)
            if at < 0:
                continue
            end = at + len(needle)
            lo, hi = max(0, at - 300), min(len(para), end + 300)
            marked = inline(para[lo:hi], [(at - lo, end - lo, "<mark>")])
            return ("…" if lo else "") + marked + ("…" if hi < len(para) else "")
        return None

    def claim_sentence(self, paper: str, claim: str, place: str) -> str | None:
        """The paper's sentence for a claim whose source names ``place`` (cached per SAU)."""
        key = (paper, claim, place)
        if key not in self._sentences:
            text = self.paper_text(paper)
            self._sentences[key] = claim_sentence(claim, place, text) if text else None
        return self._sentences[key]

    def started(self, runs: Iterable[Run]) -> list[str]:
        """Every ``started_at`` of the runs' agent and execution records (the run's dates)."""
        stamps = []
        for run in runs:
            folder = self.run_dir(run)
            for name in ("agent.json", "execution.json"):
                path = folder / name if folder else None
                if path is not None and path.is_file():
                    try:
                        value = json.loads(path.read_text(encoding="utf-8")).get("started_at")
                    except (ValueError, AttributeError):
                        continue
                    if value:
                        stamps.append(str(value))
        return sorted(stamps)


def git_commit() -> str | None:
    """The commit of the checkout sabench runs from (``+dirty`` when it has changes), if any."""
    where = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        if head.returncode:
            return None
        dirty = subprocess.run(
            ["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
