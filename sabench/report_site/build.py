"""Rendering: the jinja2 templates filled with the page contexts, written as one folder."""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from sabench.io import atomic_path, write_text
from sabench.report_site.formatting import slug
from sabench.report_site.fragments import judgment_html
from sabench.report_site.model import Site
from sabench.report_site.pages import (
    agent_context,
    disagreements_context,
    paper_context,
    run_context,
)
from sabench.report_site.sources import Sources
from sabench.report_site.summary import summary_context

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
    env.globals["judgment_html"] = judgment_html
    return env


#: What forked workers render from (set before the pool forks, see build_site).
_WORK: dict[str, Any] = {}


def _paper_pages(paper: str) -> None:
    """Write one paper's pages (its runs, its page, its disagreements). One
    paper at a time, so that a judgment's cell and excerpts are built once for its three pages."""
    site: Site = _WORK["site"]
    render, page = _WORK["render"], _WORK["page"]
    for run in site.runs_of_paper.get(paper, []):
        page(site.run_href(run), render("run.html.j2", "../../../", **run_context(site, run)))
    page(site.paper_href(paper), render("paper.html.j2", "../", **paper_context(site, paper)))
    context = disagreements_context(site, paper, _WORK["disagreements"].get(paper, []))
    page(site.disagreements_href(paper), render("disagreements.html.j2", "../", **context))


def build_site(
    tables: dict[str, pd.DataFrame],
    out_dir: Path,
    results: Path | None,
    images: Sequence[Path] | Callable[[], Sequence[Path]] = (),
    config_hash: str | None = None,
    workers: int = 1,
) -> tuple[Path, Path]:
    """Write ``out_dir/site/`` (every page, atomically as one folder) and ``out_dir/index.html``.
    With ``workers`` > 1 the papers' pages are rendered by as many forked processes (the bulk of
    the time: a run page shows every cited span); the pages are the same. ``images`` may be a
    function that gives them: it is called when the summary, which shows them, is written."""
    out_dir = Path(out_dir)
    env = _env()
    site = Site(tables, Sources(results))
    summary = summary_context(site, [], config_hash)
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
