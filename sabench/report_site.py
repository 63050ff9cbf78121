"""The drift explorer: a static site over the result tables, from a number to its evidence.

Pages (jinja2 templates in ``sabench/templates/report/``), all under ``<report>/site/``:
``index.html`` (the summary; ``<report>/index.html`` is the same page with its links into
``site/``), ``agents/<agent>.html``, ``papers/<paper>.html`` (the agents side by side),
``runs/<agent>/<paper>/<seed>.html`` (every SAU: the paper's sentence beside each judge's verdict
and the cited code), ``disagreements.html`` and ``disagreements/<paper>.html``. The tables give the
numbers; the run folders of the results root give the code, the execution log and the transcript.
It opens from ``file://``: relative links, one local stylesheet and script, no network.

Deterministic: the pages depend only on the tables, the run folders and the checkout (version,
commit), never on the clock, so a rerun on unchanged inputs rewrites identical files.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import re
import subprocess
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from sabench import __version__
from sabench.aggregate import COVERAGE_COLUMNS, INCOMPLETE_COLUMNS
from sabench.drift import DRIFT_SUMMARY_COLUMNS, drift_summary
from sabench.io import atomic_path, write_text
from sabench.scoring import AGREEMENT_COLUMNS, DIMENSION_ORDER, OVERALL
from sabench.stats import FEW_PAPERS_MARK, FEW_PAPERS_NOTE, few_papers

TEMPLATES = Path(__file__).parent / "templates" / "report"
SITE = "site"
#: Lines of code shown per cited span (and around it), of the execution log's tail, characters
#: per transcript event.
MAX_SPAN_LINES = 30
CONTEXT_LINES = 2
LOG_TAIL_LINES = 60
MAX_EVENT_CHARS = 2000
MAX_EVENTS = 400
_HIGHLIGHT_MAX_BYTES = 400_000
OK_VERDICTS = {"aligned"}
Run = tuple[str, str, str]


# --------------------------------------------------------------------------- small helpers


def slug(name: object) -> str:
    """A file name for ``name``: itself when safe, else a cleaned form plus a short hash."""
    text = str(name)
    clean = re.sub(r"[^A-Za-z0-9._-]+", "_", text).lstrip(".") or "_"
    if clean != text:
        clean += "-" + hashlib.sha256(text.encode()).hexdigest()[:8]
    return clean


def num(value: Any, digits: int = 3) -> str:
    """A number as text; missing values are an en dash."""
    if value is None or value is pd.NA:
        return "–"
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(number):
        return "–"
    if digits == 0:
        return f"{number:,.0f}"
    return f"{number:.{digits}f}"


def _text(value: Any) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def _score_color(score: float) -> str:
    """Background of a score cell: red (0) to green (1); grey without a score."""
    if score is None or math.isnan(score):
        return "#eeeeee"
    return f"hsl({round(120 * max(0.0, min(1.0, score)))}, 55%, 82%)"


def _records(frame: pd.DataFrame | None) -> list[dict[str, Any]]:
    if frame is None or frame.empty:
        return []
    return frame.astype(object).where(frame.notna(), None).to_dict("records")


def _evidence(value: Any) -> list[dict[str, Any]]:
    """The evidence column as ``[{file, start, end}]`` (Parquet gives an array of dicts)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    out = []
    for item in list(value):
        if isinstance(item, dict) and item.get("file"):
            start = int(item.get("start") or 1)
            out.append(
                {"file": str(item["file"]), "start": start, "end": int(item.get("end") or start)}
            )
    return out


def _mean(values: Iterable[float]) -> float:
    kept = [v for v in values if v is not None and not math.isnan(v)]
    return sum(kept) / len(kept) if kept else math.nan


# --------------------------------------------------------------------------- code and text


def escape(text: str) -> str:
    """HTML-escaped text; the templates insert the code and quote HTML built here as is."""
    return html.escape(text, quote=False)


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
_NUMBER = r"(?P<tn>\b\d+(?:\.\d*)?(?:[eE][+-]?\d+)?\b)"


def _lexer(comment: str, strings: str, words: str) -> re.Pattern[str]:
    keys = "|".join(words.split())
    parts = [f"(?P<tc>{comment})" if comment else "", f"(?P<ts>{strings})"]
    if keys:
        parts.append(rf"(?P<tk>\b(?:{keys})\b)")
    parts.append(_NUMBER)
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
    lines: list[str] = [""]

    def emit(value: str, cls: str | None) -> None:
        for i, part in enumerate(value.split("\n")):
            if i:
                lines.append("")
            if part:
                lines[-1] += f'<span class="{cls}">{escape(part)}</span>' if cls else escape(part)

    at = 0
    for match in lexer.finditer(text):
        if match.start() > at:
            emit(text[at : match.start()], None)
        emit(match.group(), match.lastgroup)
        at = match.end()
    emit(text[at:], None)
    return lines


class Sources:
    """The run folders of a results root, read once each: code, logs, transcripts, papers."""

    def __init__(self, results: Path | None) -> None:
        self.results = Path(results) if results is not None else None
        self._code: dict[tuple[Run, str], list[str] | None] = {}
        self._papers: dict[str, list[str]] = {}

    def run_dir(self, run: Run) -> Path | None:
        return self.results / "runs" / run[0] / run[1] / run[2] if self.results else None

    def code_lines(self, run: Run, file: str) -> list[str] | None:
        key = (run, file)
        if key not in self._code:
            folder = self.run_dir(run)
            lines = None
            if folder is not None:
                base = (folder / "submission").resolve()
                path = (base / file).resolve()
                if path.is_relative_to(base) and path.is_file():
                    text = path.read_bytes().decode("utf-8", errors="replace")
                    lines = highlight_lines(path.name, text)
            self._code[key] = lines
        return self._code[key]

    def excerpt(self, run: Run, ev: dict[str, Any]) -> dict[str, Any]:
        """One cited span: ``file:start-end`` and its highlighted lines (or why there are none)."""
        start, end = ev["start"], max(ev["end"], ev["start"])
        where = f"{ev['file']}:{start}" + (f"-{end}" if end != start else "")
        lines = self.code_lines(run, ev["file"])
        if lines is None:
            return {"where": where, "lines": [], "note": "file not in the submission folder"}
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
        needle = " ".join(quote.split()).lower()
        if len(needle) < 3:
            return None
        for para in self._paragraphs(paper):
            at = para.lower().find(needle)
            if at < 0:
                continue
            end = at + len(needle)
            lo, hi = max(0, at - 300), min(len(para), end + 300)
            return (
                ("…" if lo else "")
                + escape(para[lo:at])
                + "<mark>"
                + escape(para[at:end])
                + "</mark>"
                + escape(para[end:hi])
                + ("…" if hi < len(para) else "")
            )
        return None

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


# --------------------------------------------------------------------------- the model


class Site:
    """The tables indexed for the pages (one pass over each table)."""

    def __init__(self, tables: dict[str, pd.DataFrame], sources: Sources) -> None:
        self.tables = tables
        self.sources = sources
        get = lambda name: tables.get(name, pd.DataFrame())  # noqa: E731
        self.judgments = get("judgments")
        self.scores = get("scores_by_agent")
        self.by_run = get("scores_by_run")
        self.judges = sorted(
            {
                str(j)
                for f in (self.judgments, self.scores, self.by_run)
                if "judge" in f
                for j in f["judge"].dropna()
            }
        )
        self.runs: dict[Run, dict[str, Any]] = {}
        for rec in _records(get("runs")):
            self.runs[(str(rec["agent"]), str(rec["paper"]), str(rec["seed"]))] = rec
        self.saus: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for rec in _records(get("saus")):
            self.saus[str(rec["paper"])].append(rec)
        self.verdicts: dict[Run, dict[str, dict[str, dict[str, Any]]]] = defaultdict(
            lambda: defaultdict(dict)
        )
        for rec in _records(self.judgments):
            run = (str(rec["agent"]), str(rec["paper"]), str(rec["seed"]))
            rec["evidence"] = _evidence(rec.get("evidence"))
            self.verdicts[run][str(rec["sau_id"])][str(rec["judge"])] = rec
        for run in self.verdicts:
            self.runs.setdefault(run, {"agent": run[0], "paper": run[1], "seed": run[2]})
        self.run_scores: dict[Run, dict[str, dict[str, float]]] = defaultdict(
            lambda: defaultdict(dict)
        )
        for rec in _records(self.by_run):
            run = (str(rec["agent"]), str(rec["paper"]), str(rec["seed"]))
            score = rec["score"]
            self.run_scores[run][str(rec["judge"])][str(rec["dimension"])] = (
                math.nan if score is None else float(score)
            )
        all_runs = sorted(self.runs)
        self.agents = sorted({r[0] for r in all_runs})
        self.papers = sorted({r[1] for r in all_runs} | set(self.saus))
        self.runs_of_agent: dict[str, list[Run]] = defaultdict(list)
        self.runs_of_paper: dict[str, list[Run]] = defaultdict(list)
        for run in all_runs:
            self.runs_of_agent[run[0]].append(run)
            self.runs_of_paper[run[1]].append(run)
        self.titles = {str(r["paper"]): _text(r.get("title")) for r in _records(get("papers"))}

    # ----- links (relative to the site root)

    @staticmethod
    def run_href(run: Run) -> str:
        return f"runs/{slug(run[0])}/{slug(run[1])}/{slug(run[2])}.html"

    @staticmethod
    def agent_href(agent: str) -> str:
        return f"agents/{slug(agent)}.html"

    @staticmethod
    def paper_href(paper: str) -> str:
        return f"papers/{slug(paper)}.html"

    @staticmethod
    def disagreements_href(paper: str) -> str:
        return f"disagreements/{slug(paper)}.html"

    # ----- SAUs

    def sau_rows(self, paper: str, runs: Sequence[Run]) -> list[dict[str, Any]]:
        """The paper's SAUs in table order, then any judged SAU the table lacks."""
        rows = list(self.saus.get(paper, []))
        known = {str(r["sau_id"]) for r in rows}
        extra = sorted({s for run in runs for s in self.verdicts.get(run, {}) if s not in known})
        for sau_id in extra:
            dims = [
                j["dimension"] for run in runs for j in self.verdicts[run].get(sau_id, {}).values()
            ]
            rows.append(
                {"sau_id": sau_id, "dimension": dims[0] if dims else "", "claim": "", "source": ""}
            )
        order = {d: i for i, d in enumerate(DIMENSION_ORDER)}
        rows.sort(key=lambda r: (order.get(str(r.get("dimension")), 99), str(r["sau_id"])))
        for row in rows:
            row["quote"] = _text(row.get("source"))
            row["context"] = self.sources.context(paper, row["quote"]) if row["quote"] else None
        return rows

    def cell(self, run: Run, sau_id: str, judge: str, code: bool = True) -> dict[str, Any] | None:
        rec = self.verdicts.get(run, {}).get(sau_id, {}).get(judge)
        if rec is None:
            return None
        evidence = rec["evidence"]
        return {
            "verdict": _text(rec.get("verdict")) or "–",
            "score": num(rec.get("score"), 2),
            "failure_mode": _text(rec.get("failure_mode")),
            "reasoning": _text(rec.get("reasoning")),
            "evidence": [self.sources.excerpt(run, ev) for ev in evidence] if code else [],
            "refs": [
                f"{ev['file']}:{ev['start']}"
                + (f"-{ev['end']}" if ev["end"] != ev["start"] else "")
                for ev in evidence
            ],
        }

    def disagree(self, run: Run, sau_id: str) -> bool:
        """Whether the judges of this SAU of this run give different verdicts or scores."""
        recs = self.verdicts.get(run, {}).get(sau_id, {})
        if len(recs) < 2:
            return False
        keys = {(_text(r.get("verdict")), num(r.get("score"), 2)) for r in recs.values()}
        return len(keys) > 1

    def disagreements(self) -> dict[str, list[tuple[Run, str]]]:
        out: dict[str, list[tuple[Run, str]]] = defaultdict(list)
        for run in sorted(self.verdicts):
            for sau_id in sorted(self.verdicts[run]):
                if self.disagree(run, sau_id):
                    out[run[1]].append((run, sau_id))
        return out


# --------------------------------------------------------------------------- summary blocks


def _pivot(site: Site) -> dict[str, Any]:
    """agent x judge x dimension: score with its interval, † where it rests on few papers."""
    scores = site.scores
    if scores.empty:
        return {"dims": [], "judges": [], "rows": [], "marked": False}
    flags = (
        scores["few_papers"] if "few_papers" in scores else scores["n_papers"].map(few_papers)
    ).astype(bool)
    dims = [d for d in DIMENSION_ORDER if d in set(scores["dimension"])]
    judges = sorted(scores["judge"].astype(str).unique())
    cells: dict[tuple[str, str, str], dict[str, Any]] = {}
    marked = False
    for rec, flag in zip(_records(scores), flags, strict=True):
        score = rec["score"]
        has = score is not None and not math.isnan(score)
        mark = bool(flag) and has
        marked |= mark
        cells[(str(rec["agent"]), str(rec["judge"]), str(rec["dimension"]))] = {
            "score": num(score) + (f" {FEW_PAPERS_MARK}" if mark else ""),
            "ci": f"[{num(rec['ci_low'], 2)}, {num(rec['ci_high'], 2)}]" if has else "",
            "n_papers": rec["n_papers"],
            "color": _score_color(math.nan if score is None else float(score)),
        }
    rows = []
    for agent in sorted(scores["agent"].astype(str).unique()):
        rows.append(
            {
                "agent": agent,
                "cells": [cells.get((agent, j, d)) for j in judges for d in dims],
            }
        )
    return {"dims": dims, "judges": judges, "rows": rows, "marked": marked}


def _matrix(site: Site) -> list[dict[str, Any]]:
    """Per judge: agent x paper, the overall score averaged over seeds, linked to the runs."""
    out = []
    for judge in site.judges:
        rows = []
        for agent in site.agents:
            cells = []
            for paper in site.papers:
                runs = [r for r in site.runs_of_agent[agent] if r[1] == paper]
                values = [
                    site.run_scores.get(r, {}).get(judge, {}).get(OVERALL, math.nan) for r in runs
                ]
                score = _mean(values)
                cells.append(
                    {
                        "score": num(score, 2) if runs else "",
                        "color": _score_color(score),
                        "runs": [
                            (r[2], site.run_href(r), num(v, 2))
                            for r, v in zip(runs, values, strict=True)
                        ],
                    }
                )
            rows.append({"agent": agent, "href": site.agent_href(agent), "cells": cells})
        out.append({"judge": judge, "rows": rows})
    return out


def _sum(frame: pd.DataFrame, column: str) -> float:
    return (
        float(pd.to_numeric(frame[column], errors="coerce").fillna(0).sum())
        if column in frame
        else 0.0
    )


def _costs(site: Site) -> dict[str, list[dict[str, str]]]:
    runs = site.tables.get("runs", pd.DataFrame())
    agents = []
    if not runs.empty:
        for agent, sub in runs.groupby("agent", sort=True):
            wall = pd.to_numeric(sub["agent_wall_s"], errors="coerce")
            execw = pd.to_numeric(sub["execution_wall_s"], errors="coerce")
            agents.append(
                {
                    "agent": str(agent),
                    "runs": str(len(sub)),
                    "prompt_tokens": num(_sum(sub, "prompt_tokens"), 0),
                    "completion_tokens": num(_sum(sub, "completion_tokens"), 0),
                    "cost_usd": num(_sum(sub, "cost_usd"), 4),
                    "agent_wall_total": num(wall.sum(), 1),
                    "agent_wall_max": num(wall.max(), 1),
                    "exec_wall_total": num(execw.sum(), 1),
                    "exec_wall_max": num(execw.max(), 1),
                    "peak_mem_max": num(
                        pd.to_numeric(sub["peak_mem_mb"], errors="coerce").max(), 1
                    ),
                }
            )
    judges = []
    frame = site.judgments
    if not frame.empty:
        for judge, sub in frame.groupby("judge", sort=True):
            latency = pd.to_numeric(sub["latency_s"], errors="coerce")
            judges.append(
                {
                    "judge": str(judge),
                    "judgments": str(len(sub)),
                    "cached": str(int(sub["cached"].fillna(False).astype(bool).sum())),
                    "prompt_tokens": num(_sum(sub, "prompt_tokens"), 0),
                    "completion_tokens": num(_sum(sub, "completion_tokens"), 0),
                    "cost_usd": num(_sum(sub, "cost_usd"), 4),
                    "latency_total": num(latency.sum(), 1),
                }
            )
    return {"agents": agents, "judges": judges}


def _table(frame: pd.DataFrame | None, columns: Sequence[str]) -> dict[str, Any]:
    """Rows of ``columns`` as text (floats to 3 digits, missing as an en dash)."""
    rows = []
    for rec in _records(frame):
        rows.append(
            [
                num(rec.get(c)) if isinstance(rec.get(c), float) else (_text(rec.get(c)) or "–")
                for c in columns
            ]
        )
    return {"columns": list(columns), "rows": rows}


def _confusion(frame: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for judge, sub in frame.groupby("judge", sort=True):
        grid = sub.pivot_table(
            index="reference_verdict",
            columns="judge_verdict",
            values="count",
            aggfunc="sum",
            fill_value=0,
        )
        grid = grid.reset_index().rename(columns={"reference_verdict": f"reference \\ {judge}"})
        grid.columns = [str(c) for c in grid.columns]
        out.append(_table(grid, list(grid.columns)))
    return out


def _provenance(site: Site, config_hash: str | None) -> list[tuple[str, str]]:
    stamps = site.sources.started(sorted(site.runs))
    items = [("sabench version", __version__), ("git commit", git_commit() or "not a git checkout")]
    items.append(("config hash", config_hash or "not given (standalone build)"))
    if stamps:
        items.append(
            (
                "runs started",
                stamps[0] if stamps[0] == stamps[-1] else f"{stamps[0]} … {stamps[-1]}",
            )
        )
    else:
        items.append(("runs started", "no run records under the results folder"))
    frame = site.judgments
    if not frame.empty and "judge_fingerprint" in frame:
        for judge, sub in frame.groupby("judge", sort=True):
            prints = sorted({str(p) for p in sub["judge_fingerprint"].dropna()})
            items.append((f"judge {judge} fingerprint", ", ".join(prints) or "–"))
    if site.sources.results is not None:
        items.append(("results folder", str(site.sources.results)))
    return items


def summary_context(
    site: Site, images: Sequence[tuple[str, str]], config_hash: str | None
) -> dict[str, Any]:
    tables = site.tables
    disagreements = site.disagreements()
    drift = tables.get("drift_injection", pd.DataFrame())
    agreement = tables.get("judge_agreement", pd.DataFrame())
    confusion = tables.get("judge_confusion", pd.DataFrame())
    trees = tables.get("tree_scores", pd.DataFrame())
    incomplete = tables.get("incomplete_runs", pd.DataFrame())
    return {
        "pivot": _pivot(site),
        "few_note": FEW_PAPERS_NOTE,
        "matrix": _matrix(site),
        "papers": [(p, site.paper_href(p), site.titles.get(p, "")) for p in site.papers],
        "agents": [(a, site.agent_href(a), len(site.runs_of_agent[a])) for a in site.agents],
        "coverage": _table(tables.get("coverage"), COVERAGE_COLUMNS),
        "incomplete": _table(incomplete, INCOMPLETE_COLUMNS) if not incomplete.empty else None,
        "disagreements": [
            (p, site.disagreements_href(p), len(disagreements.get(p, []))) for p in site.papers
        ],
        "n_disagreements": sum(len(v) for v in disagreements.values()),
        "multi_judge": len(site.judges) > 1,
        "costs": _costs(site),
        "agreement": _table(agreement, AGREEMENT_COLUMNS) if not agreement.empty else None,
        "confusion": _confusion(confusion) if not confusion.empty else None,
        "drift": _table(drift_summary(drift), list(DRIFT_SUMMARY_COLUMNS))
        if not drift.empty
        else None,
        "trees": _table(trees, ["agent", "paper", "seed", "judge", "score", "n_leaves_judged"])
        if not trees.empty
        else None,
        "images": images,
        "provenance": _provenance(site, config_hash),
    }


# --------------------------------------------------------------------------- pages


def _run_summary(site: Site, run: Run) -> dict[str, Any]:
    scores = site.run_scores.get(run, {})
    n_bad = sum(
        1
        for recs in site.verdicts.get(run, {}).values()
        for rec in recs.values()
        if _text(rec.get("verdict")) not in OK_VERDICTS | {"error"}
    )
    rec = site.runs.get(run, {})
    return {
        "agent": run[0],
        "paper": run[1],
        "seed": run[2],
        "href": site.run_href(run),
        "scores": [num(scores.get(j, {}).get(OVERALL, math.nan)) for j in site.judges],
        "colors": [_score_color(scores.get(j, {}).get(OVERALL, math.nan)) for j in site.judges],
        "execution": _text(rec.get("execution_status")) or "–",
        "n_bad": n_bad,
    }


def _metrics(value: Any) -> list[tuple[str, str]]:
    if not value:
        return []
    try:
        data = json.loads(value) if isinstance(value, str) else dict(value)
    except (ValueError, TypeError):
        return [("metrics", str(value))]
    if not isinstance(data, dict):
        return [("metrics", str(data))]
    return [
        (str(k), num(v, 6) if isinstance(v, int | float) else str(v))
        for k, v in sorted(data.items())
    ]


def run_context(site: Site, run: Run) -> dict[str, Any]:
    rec = site.runs.get(run, {})
    saus = []
    for row in site.sau_rows(run[1], [run]):
        sau_id = str(row["sau_id"])
        judged = {j: site.cell(run, sau_id, j) for j in site.judges}
        verdicts = {c["verdict"] for c in judged.values() if c}
        saus.append(
            {
                "id": sau_id,
                "anchor": "sau-" + slug(sau_id),
                "dimension": _text(row.get("dimension")),
                "claim": _text(row.get("claim")),
                "quote": row["quote"],
                "context": row["context"],
                "judges": [(j, judged[j]) for j in site.judges],
                "ok": bool(verdicts) and verdicts <= OK_VERDICTS,
                "disagree": site.disagree(run, sau_id),
            }
        )
    scores = site.run_scores.get(run, {})
    dims = [d for d in DIMENSION_ORDER if any(d in scores.get(j, {}) for j in site.judges)]
    agent_fields = [
        (k, _text(rec.get(k)) or "–")
        for k in ("agent_kind", "agent_status", "model", "steps", "agent_error")
    ]
    agent_fields += [
        (
            "tokens (prompt / completion)",
            f"{num(rec.get('prompt_tokens'), 0)} / {num(rec.get('completion_tokens'), 0)}",
        ),
        ("cost ($)", num(rec.get("cost_usd"), 4)),
        ("wall time (s)", num(rec.get("agent_wall_s"), 1)),
    ]
    exec_fields = [
        ("status", _text(rec.get("execution_status")) or "–"),
        ("exit code", num(rec.get("exit_code"), 0)),
        ("wall time (s)", num(rec.get("execution_wall_s"), 1)),
        ("peak memory (MB)", num(rec.get("peak_mem_mb"), 1)),
        ("backend", _text(rec.get("backend")) or "–"),
        ("isolation", _text(rec.get("isolation")) or "–"),
    ]
    others = [r for r in site.runs_of_paper[run[1]] if r != run]
    return {
        "run": run,
        "title": site.titles.get(run[1], ""),
        "agent_href": site.agent_href(run[0]),
        "paper_href": site.paper_href(run[1]),
        "judges": site.judges,
        "dims": dims,
        "scores": [
            (j, [num(scores.get(j, {}).get(d, math.nan)) for d in dims]) for j in site.judges
        ],
        "agent_fields": agent_fields,
        "exec_fields": exec_fields,
        "metrics": _metrics(rec.get("metrics")),
        "log": site.sources.log_tail(run),
        "failed": _text(rec.get("execution_status")) not in ("ok", ""),
        "log_lines": LOG_TAIL_LINES,
        "transcript": site.sources.transcript(run),
        "saus": saus,
        "bad": [s for s in saus if not s["ok"] and any(c for _, c in s["judges"])],
        "others": [(f"{r[0]} / seed {r[2]}", site.run_href(r)) for r in others],
    }


def agent_context(site: Site, agent: str) -> dict[str, Any]:
    pivot = _pivot(site)
    rows = [r for r in pivot["rows"] if r["agent"] == agent]
    return {
        "agent": agent,
        "pivot": {**pivot, "rows": rows},
        "few_note": FEW_PAPERS_NOTE,
        "judges": site.judges,
        "runs": [_run_summary(site, r) for r in site.runs_of_agent[agent]],
    }


def paper_context(site: Site, paper: str) -> dict[str, Any]:
    runs = site.runs_of_paper[paper]
    columns = [(i, f"{r[0]} / seed {r[2]}", site.run_href(r)) for i, r in enumerate(runs)]
    first_seed: dict[str, int] = {}
    for i, r in enumerate(runs):
        first_seed.setdefault(r[0], i)

    def overall(i: int) -> float:
        score = _mean(
            site.run_scores.get(runs[i], {}).get(j, {}).get(OVERALL, math.nan) for j in site.judges
        )
        return -1.0 if math.isnan(score) else score

    # side by side at first: the two best-scored agents (first seeds), where drift is the difference
    best = sorted(first_seed.values(), key=lambda i: (-overall(i), i))[:2]
    default = sorted(best) or [0]
    rows = []
    for row in site.sau_rows(paper, runs):
        sau_id = str(row["sau_id"])
        rows.append(
            {
                "id": sau_id,
                "anchor": "sau-" + slug(sau_id),
                "dimension": _text(row.get("dimension")),
                "claim": _text(row.get("claim")),
                "quote": row["quote"],
                "cells": [[(j, site.cell(r, sau_id, j)) for j in site.judges] for r in runs],
                "differ": len(
                    {
                        tuple(
                            (c or {}).get("verdict")
                            for c in (site.cell(r, sau_id, j, False) for j in site.judges)
                        )
                        for r in runs
                    }
                )
                > 1,
            }
        )
    return {
        "paper": paper,
        "title": site.titles.get(paper, ""),
        "columns": columns,
        "left": default[0],
        "right": default[1] if len(default) > 1 else default[0],
        "runs": [_run_summary(site, r) for r in runs],
        "judges": site.judges,
        "rows": rows,
        "disagreements_href": site.disagreements_href(paper),
    }


def disagreements_context(site: Site, paper: str, items: list[tuple[Run, str]]) -> dict[str, Any]:
    rows_by_id = {
        str(r["sau_id"]): r for r in site.sau_rows(paper, sorted({run for run, _ in items}))
    }
    out = []
    for run, sau_id in items:
        row = rows_by_id.get(sau_id, {})
        out.append(
            {
                "run": run,
                "href": site.run_href(run) + "#sau-" + slug(sau_id),
                "id": sau_id,
                "dimension": _text(row.get("dimension")),
                "claim": _text(row.get("claim")),
                "quote": _text(row.get("quote")),
                "judges": [(j, site.cell(run, sau_id, j)) for j in site.judges],
            }
        )
    return {
        "paper": paper,
        "title": site.titles.get(paper, ""),
        "items": out,
        "paper_href": site.paper_href(paper),
    }


# --------------------------------------------------------------------------- writing


def _env() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["slug"] = slug
    return env


def build_site(
    tables: dict[str, pd.DataFrame],
    out_dir: Path,
    results: Path | None,
    images: Sequence[Path] = (),
    config_hash: str | None = None,
) -> tuple[Path, Path]:
    """Write ``out_dir/site/`` (every page, atomically as one folder) and ``out_dir/index.html``."""
    out_dir = Path(out_dir)
    env = _env()
    site = Site(tables, Sources(results))
    inlined = [
        (Path(p).stem.replace("_", " "), base64.b64encode(Path(p).read_bytes()).decode("ascii"))
        for p in images
    ]
    summary = summary_context(site, inlined, config_hash)
    nav = {"agents": summary["agents"], "papers": summary["papers"]}

    css = (TEMPLATES / "report.css").read_text(encoding="utf-8")
    js = (TEMPLATES / "report.js").read_text(encoding="utf-8")

    def render(name: str, root: str, inline: dict[str, str] | None = None, **context: Any) -> str:
        return env.get_template(name).render(root=root, nav=nav, inline=inline, **context)

    target = out_dir / SITE
    with atomic_path(target, directory=True) as tmp:

        def page(rel: str, text: str) -> None:
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")

        page("assets/report.css", css)
        page("assets/report.js", js)
        page("index.html", render("summary.html.j2", "", **summary))
        for agent in site.agents:
            page(
                site.agent_href(agent), render("agent.html.j2", "../", **agent_context(site, agent))
            )
        for paper in site.papers:
            page(
                site.paper_href(paper), render("paper.html.j2", "../", **paper_context(site, paper))
            )
        for run in sorted(site.runs):
            page(site.run_href(run), render("run.html.j2", "../../../", **run_context(site, run)))
        disagreements = site.disagreements()
        page("disagreements.html", render("disagreements_index.html.j2", "", **summary))
        for paper in site.papers:
            context = disagreements_context(site, paper, disagreements.get(paper, []))
            page(site.disagreements_href(paper), render("disagreements.html.j2", "../", **context))
    index = out_dir / "index.html"
    # self-contained but for its links into site/: snakemake --report embeds it alone
    inline = {"css": css, "js": js}
    write_text(index, render("summary.html.j2", f"{SITE}/", inline, **summary))
    return index, target
