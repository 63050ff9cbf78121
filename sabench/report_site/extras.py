"""The report's pages beyond the tables: a page per submission file (its lines anchored), the
paper's whole text, a paper's code diff between two runs, the search index and the tables to
download (Parquet and CSV)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd

from sabench.report_site import markdown
from sabench.report_site.formatting import slug
from sabench.report_site.model import Site
from sabench.report_site.sources import Run

#: A diff page embeds every text file of the paper's runs up to this many characters in all.
MAX_DIFF_CHARS = 6_000_000


def _script_safe(text: str) -> str:
    """JSON inside a script element: no ``<`` (no end tag or comment can open), still JSON."""
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def file_context(site: Site, run: Run, file: str) -> dict[str, Any] | None:
    """A submission file as a page: every line numbered and anchored (``#L14``; ``#L14-16``
    marks a span), highlighted like the cited code."""
    lines = site.sources.code_lines(run, file)
    if lines is None:
        return None
    code = "".join(
        f'<span class="line" id="L{n}"><a class="ln" href="#L{n}">{n}</a>{line}</span>\n'
        for n, line in enumerate(lines, 1)
    )
    return {
        "run": run,
        "file": file,
        "code": code,
        "n_lines": len(lines),
        "run_href": site.run_href(run),
        "paper_href": site.paper_href(run[1]),
        "agent_href": site.agent_href(run[0]),
        "diff_href": site.diff_href(run[1]),
    }


def paper_text_context(site: Site, paper: str) -> dict[str, Any]:
    """The paper's text (paper.md) rendered from its markdown (headings, lists, tables, code,
    emphasis), each SAU's quote marked and anchored (``#sau-<id>``): for an SAU whose source
    names a place, the paper's sentence shown for it (:meth:`Site.quote`)."""
    text = site.sources.paper_text(paper)
    quotes = [
        (site.quote(paper, r), "sau-" + slug(r["sau_id"]), str(r["sau_id"]))
        for r in site.saus.get(paper, [])
    ]
    return {
        "paper": paper,
        "title": site.titles.get(paper, ""),
        "html": markdown.render(text or "", quotes),
        "found": text is not None,
        "paper_href": site.paper_href(paper),
    }


def diff_context(site: Site, paper: str) -> dict[str, Any]:
    """Every run of the paper with its submission's text files, for the page's script to diff
    two of them (``#a=<run>&b=<run>&file=<path>``), line by line."""
    runs = site.runs_of_paper.get(paper, [])
    data, total, left_out = [], 0, []
    for run in runs:
        files: dict[str, str] = {}
        for name in site.sources.files(run):
            text = site.sources.text(run, name)
            if text is None:
                continue
            if total + len(text) > MAX_DIFF_CHARS:
                left_out.append(f"{'/'.join(run)}/{name}")
                continue
            total += len(text)
            files[name] = text
        data.append(
            {"name": f"{run[0]} / seed {run[2]}", "href": site.run_href(run), "files": files}
        )
    payload = _script_safe(json.dumps(data, ensure_ascii=False, sort_keys=True))
    return {
        "paper": paper,
        "title": site.titles.get(paper, ""),
        "runs": [(i, d["name"]) for i, d in enumerate(data)],
        "payload": payload,
        "left_out": left_out,
        "paper_href": site.paper_href(paper),
    }


def search_index(site: Site) -> str:
    """The search box's index as a script (``file://`` pages cannot fetch JSON): agents, papers,
    runs and SAUs (each paper's, linked to its paper page) as ``[kind, label, href, text]``,
    hrefs from the site root. Small at scale: one entry per SAU, not per SAU and run."""
    entries: list[list[str]] = []
    for agent in site.agents:
        entries.append(["agent", agent, site.agent_href(agent), site.descriptions.get(agent, "")])
    for paper in site.papers:
        entries.append(["paper", paper, site.paper_href(paper), site.titles.get(paper, "")])
        for row in site.saus.get(paper, []):
            sau_id = str(row["sau_id"])
            entries.append(
                [
                    "SAU",
                    sau_id,
                    f"{site.paper_href(paper)}#sau-{slug(sau_id)}",
                    " ".join(str(row.get(k) or "") for k in ("dimension", "claim", "source")),
                ]
            )
    for run in sorted(site.runs):
        entries.append(["run", f"{run[0]} / {run[1]} / seed {run[2]}", site.run_href(run), ""])
    text = json.dumps(entries, ensure_ascii=False, separators=(",", ":"))
    return "window.SABENCH_SEARCH = " + _script_safe(text) + ";\n"


def _csv_value(value: Any) -> Any:
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    if hasattr(value, "tolist"):  # numpy arrays of structs from Parquet
        return json.dumps(value.tolist(), ensure_ascii=False, sort_keys=True, default=str)
    return value


def _write_csv(frame: pd.DataFrame, path: Path) -> None:
    """``frame`` as CSV, nested values (lists, structs) as JSON; pyarrow's writer (pandas' takes
    ten times as long on the judgments of a grid)."""
    import pyarrow as pa
    from pyarrow import csv

    columns = {}
    for column in frame.columns:
        values = frame[column]
        if values.dtype == object:
            values = values.map(_csv_value)
            if values.map(lambda v: isinstance(v, str) or v is None).all():
                values = values.astype(object)
            else:
                values = values.map(lambda v: None if v is None else str(v))
        columns[str(column)] = values
    table = pa.Table.from_pandas(pd.DataFrame(columns, index=frame.index), preserve_index=False)
    csv.write_csv(table, path)


def write_downloads(
    tables: dict[str, pd.DataFrame], folder: Path, files: dict[str, Path] | None = None
) -> list[tuple[str, int, str, str]]:
    """Each table as ``<name>.parquet`` (the file itself when known, else written) and
    ``<name>.csv`` (nested values as JSON) in ``folder``; (name, rows, parquet, csv) each."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name in sorted(tables):
        frame = tables[name]
        if frame is None:
            continue
        parquet, csv = folder / f"{slug(name)}.parquet", folder / f"{slug(name)}.csv"
        source = (files or {}).get(name)
        if source is not None and Path(source).is_file():
            shutil.copyfile(source, parquet)
        else:
            frame.to_parquet(parquet, index=False)
        _write_csv(frame, csv)
        out.append((name, len(frame), parquet.name, csv.name))
    return out
