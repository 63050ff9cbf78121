"""Rendering: the jinja2 templates filled with the page contexts, written as one folder."""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from sabench.io import atomic_path, write_text
from sabench.report_site.extras import (
    diff_context,
    file_context,
    paper_text_context,
    search_index,
    write_downloads,
)
from sabench.report_site.formatting import slug
from sabench.report_site.fragments import (
    ROOT,
    escape,
    judges_html,
    judgment_html,
    paper_row_html,
    sau_data,
    sau_html,
    verdict_html,
)
from sabench.report_site.model import Site
from sabench.report_site.pages import (
    agent_context,
    disagreements_context,
    paper_context,
    run_context,
)
from sabench.report_site.sources import Sources
from sabench.report_site.summary import scores_with_sau_counts, summary_context
from sabench.wording import noun, plural

TEMPLATES = Path(__file__).parent.parent / "templates" / "report"
SITE = "site"


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
    env.filters["plural"] = plural
    env.filters["noun"] = noun
    # called directly by the templates (the pages' most repeated pieces: a macro call costs more)
    env.globals.update(
        judgment_html=judgment_html,
        judges_html=judges_html,
        verdict_html=verdict_html,
        sau_data=sau_data,
        sau_html=sau_html,
        paper_row_html=paper_row_html,
    )
    return env


#: What forked workers render from (set before the pool forks, see build_site).
_WORK: dict[str, Any] = {}


#: The file page rendered once per depth with these marks, filled in per file (a grid has
#: thousands of files: the template language would be most of their time).
_FILE_MARKS = {
    k: f"\ue001{k}\ue001"
    for k in ("agent", "paper", "seed", "file", "code", "n_lines", "run_href", "paper_href",
              "agent_href", "diff_href")
}  # fmt: skip


def _file_page(render: Callable[..., str], root: str, context: dict[str, Any]) -> str:
    shells: dict[str, str] = _WORK.setdefault("file_shells", {})
    if root not in shells:
        marks = _FILE_MARKS
        shells[root] = render(
            "file.html.j2",
            root,
            **{k: marks[k] for k in marks if k not in ("agent", "paper", "seed")},
            run=(marks["agent"], marks["paper"], marks["seed"]),
        )
    text = shells[root]
    run = context["run"]
    values = {**context, "agent": run[0], "paper": run[1], "seed": run[2]}
    for key, mark in _FILE_MARKS.items():
        value = str(values[key])
        text = text.replace(mark, value if key == "code" else escape(value))
    return text


def _paper_pages(paper: str) -> None:
    """Write one paper's pages (its runs, its page, its disagreements). One
    paper at a time, so that a judgment's cell and excerpts are built once for its three pages."""
    site: Site = _WORK["site"]
    render, page = _WORK["render"], _WORK["page"]
    for run in site.runs_of_paper.get(paper, []):
        page(site.run_href(run), render("run.html.j2", "../../../", **run_context(site, run)))
        for file in site.sources.files(run):
            href = site.file_href(run, file)
            context = file_context(site, run, file)
            if context is not None:
                page(href, _file_page(render, "../" * href.count("/"), context))
    page(site.paper_href(paper), render("paper.html.j2", "../", **paper_context(site, paper)))
    context = disagreements_context(site, paper, _WORK["disagreements"].get(paper, []))
    page(site.disagreements_href(paper), render("disagreements.html.j2", "../", **context))
    text = paper_text_context(site, paper)
    page(site.paper_text_href(paper), render("paper_text.html.j2", "../", **text))
    page(site.diff_href(paper), render("diff.html.j2", "../", **diff_context(site, paper)))


def build_site(
    tables: dict[str, pd.DataFrame],
    out_dir: Path,
    results: Path | None,
    images: Sequence[Path] | Callable[[], Sequence[Path]] = (),
    config_hash: str | None = None,
    workers: int = 1,
    descriptions: dict[str, str] | None = None,
    table_files: dict[str, Path] | None = None,
) -> tuple[Path, Path]:
    """Write ``out_dir/site/`` (every page, atomically as one folder) and ``out_dir/index.html``.
    With ``workers`` > 1 the papers' pages are rendered by as many forked processes (the bulk of
    the time: a run page shows every cited span); the pages are the same. ``images`` may be a
    function that gives them: it is called when the summary, which shows them, is written.
    ``descriptions``: each agent's description (the agents file's); ``table_files``: the Parquet
    file of each table, copied into ``site/data/`` as it is (else the frame is written there)."""
    out_dir = Path(out_dir)
    env = _env()
    site = Site(tables, Sources(results), descriptions)
    summary = summary_context(site, [], config_hash)
    nav = {"agents": summary["agents"], "papers": summary["papers"]}

    css = (TEMPLATES / "report.css").read_text(encoding="utf-8")
    js = (TEMPLATES / "report.js").read_text(encoding="utf-8")

    headers: dict[str, str] = {}

    def render(name: str, root: str, inline: dict[str, str] | None = None, **context: Any) -> str:
        if root not in headers:  # the same for every page as deep as this one
            headers[root] = env.get_template("header.html.j2").render(root=root, nav=nav)
        text = env.get_template(name).render(
            root=root, header=headers[root], inline=inline, **context
        )
        # HTML built once for several pages links from the site root (fragments.ROOT)
        return text.replace(ROOT, root) if ROOT in text else text

    target = out_dir / SITE
    with atomic_path(target, directory=True) as tmp:
        folders: set[Path] = set()

        def page(rel: str, text: str) -> None:
            path = tmp / rel
            if path.parent not in folders:
                path.parent.mkdir(parents=True, exist_ok=True)
                folders.add(path.parent)
            path.write_text(text, encoding="utf-8")

        page("assets/report.css", css)
        page("assets/report.js", js)
        page("assets/search-index.js", search_index(site))
        # the agents' scores with the n the page shows beside each (not the table file's copy)
        downloads = dict(tables)
        if tables.get("scores_by_agent") is not None:
            downloads["scores_by_agent"] = scores_with_sau_counts(site)
        files = {k: v for k, v in (table_files or {}).items() if k != "scores_by_agent"}
        summary["downloads"] = write_downloads(downloads, tmp / "data", files)
        page("legend.html", render("legend.html.j2", "", **summary))
        for agent in site.agents:
            page(
                site.agent_href(agent), render("agent.html.j2", "../", **agent_context(site, agent))
            )
        page("disagreements.html", render("disagreements_index.html.j2", "", **summary))
        _WORK.update(site=site, render=render, page=page, disagreements=site.disagreements())
        try:
            if workers > 1 and len(site.papers) > 1:
                import multiprocessing

                with multiprocessing.get_context("fork").Pool(workers) as pool:
                    for _ in pool.imap_unordered(_paper_pages, site.papers):
                        pass
            else:
                for paper in site.papers:
                    _paper_pages(paper)
        finally:
            _WORK.clear()
        summary["images"] = [
            (Path(p).stem.replace("_", " "), base64.b64encode(Path(p).read_bytes()).decode())
            for p in (images() if callable(images) else images)
        ]
        page("index.html", render("summary.html.j2", "", **summary))
    index = out_dir / "index.html"
    # self-contained but for its links into site/: snakemake --report embeds it alone
    inline = {"css": css, "js": js}
    write_text(index, render("summary.html.j2", f"{SITE}/", inline, **summary))
    return index, target
