"""Rendering: the jinja2 templates filled with the page contexts, written as one folder."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from sabench.io import atomic_path, write_text
from sabench.report_site.formatting import slug
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
