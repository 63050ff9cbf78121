"""The report in a real browser: headless Chromium (Debian's ``chromium``, installed here as root
when missing) opens the summary from file://, follows the agent x paper matrix to a run page and
finds its SAUs, the paper's sentence and the cited code; the pages' script runs (the filter, the
paper page's two columns) and nothing is logged to the console."""

from __future__ import annotations

import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin

import pytest
from test_report import QUOTE, rich_tree

from sabench.report import make_report

pytestmark = pytest.mark.browser
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


@pytest.fixture(scope="session")
def chromium() -> str:
    """Chromium's binary; apt-get installs Debian's package when missing and running as root."""
    found = next(filter(None, map(shutil.which, BROWSERS)), None)
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip(
            "headless Chromium is not installed and this is not root with apt-get: "
            "apt-get install chromium"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    lock = ["-o", "DPkg::Lock::Timeout=600"]
    for argv in (
        ["apt-get", *lock, "update", "-qq"],
        ["apt-get", *lock, "install", "-y", "-qq", "--no-install-recommends", "chromium"],
    ):
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800)
        if done.returncode:
            pytest.skip(f"{' '.join(argv)} failed: {done.stderr.strip()[-400:]}")
    found = shutil.which("chromium")
    if not found:
        pytest.skip("apt-get installed chromium but it is not on PATH")
    return found


def browse(chromium: str, url: str, profile: Path, *action: str) -> tuple[str, list[str]]:
    """Load ``url`` headless; the DOM after its scripts ran (or ``action``'s output) and every
    console message the page logged (Chromium's ``CONSOLE`` log lines)."""
    argv = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--enable-logging=stderr",
        "--v=0",
        f"--user-data-dir={profile}",
        *(action or ("--dump-dom",)),
        url,
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, [line for line in done.stderr.splitlines() if ":CONSOLE" in line]


class Elements(HTMLParser):
    """The start tags of a DOM as (tag, attributes), in document order."""

    def __init__(self, dom: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(dom)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def find(self, tag: str, cls: str | None = None) -> list[dict[str, str | None]]:
        """The attributes of every ``tag`` (with the class ``cls``, if given)."""
        return [
            a
            for t, a in self.tags
            if t == tag and (cls is None or cls in (a.get("class") or "").split())
        ]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("browser")
    root = tmp / "results"
    tables = rich_tree(root)
    make_report(tables, tmp / "report", root)
    return tmp / "report"


def test_summary_to_the_drift_in_one_click(chromium: str, report: Path, tmp_path: Path) -> None:
    summary = (report / "index.html").as_uri()
    dom, console = browse(chromium, summary, tmp_path / "p1")
    assert console == []
    page = Elements(dom)
    assert "Scores by agent" in dom and "Agent × paper" in dom
    links = [a["href"] for a in page.find("a", cls="run-link")]
    assert "site/runs/A/P1/0.html" in links
    run_url = urljoin(summary, "site/runs/A/P1/0.html")
    dom, console = browse(chromium, run_url, tmp_path / "p2")
    assert console == []
    run = Elements(dom)
    assert [s["id"] for s in run.find("section", cls="sau")] == ["sau-a1", "sau-a2", "sau-b1"]
    a2 = dom[dom.index('id="sau-a2"') :].split("</section>")[0]
    assert f"<mark>{QUOTE}</mark>" in a2 and "main.py:4" in a2
    assert '<span class="hit"><span class="ln">4</span>' in a2 and "# the paper says 0.05" in a2
    # every stylesheet and script the pages name is there (Chromium logs no console line for them)
    for tag, attr in (("link", "href"), ("script", "src")):
        for element in run.find(tag):
            if element.get(attr):
                assert Path(urljoin(run_url, element[attr]).removeprefix("file://")).is_file()


def test_the_filter_and_the_two_columns_run(chromium: str, report: Path, tmp_path: Path) -> None:
    run_url = (report / "site" / "runs" / "A" / "P1" / "0.html").as_uri()
    dom, console = browse(chromium, run_url + "#q=lr%20is%200.05", tmp_path / "p1")
    assert console == []
    sections = {s["id"]: "hidden" in s for s in Elements(dom).find("section", cls="sau")}
    assert sections == {"sau-a1": True, "sau-a2": False, "sau-b1": True}
    assert '<span id="filter-count" aria-live="polite">1 of ' in dom
    paper_url = (report / "site" / "papers" / "P1.html").as_uri()
    dom, console = browse(chromium, paper_url, tmp_path / "p2")
    assert console == []
    heads = {h["data-col"]: "hidden" in h for h in Elements(dom).find("th", cls="col")}
    assert heads == {"0": False, "1": True, "2": False}  # A seed 0 beside B seed 0


def test_console_errors_are_caught(chromium: str, tmp_path: Path) -> None:
    """The check above can fail: a page whose script throws logs a CONSOLE line."""
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><body><script>notDefined();</script></body></html>")
    _, console = browse(chromium, page.as_uri(), tmp_path / "p")
    assert any("notDefined" in line for line in console)


def test_screenshots_of_each_page_kind(chromium: str, report: Path, tmp_path: Path) -> None:
    site = report / "site"
    for name, page in {
        "summary": report / "index.html",
        "run": site / "runs" / "A" / "P1" / "0.html",
        "paper": site / "papers" / "P1.html",
        "agent": site / "agents" / "A.html",
        "disagreements": site / "disagreements" / "P1.html",
    }.items():
        shot = tmp_path / f"{name}.png"
        browse(
            chromium,
            page.as_uri(),
            tmp_path / f"p-{name}",
            f"--screenshot={shot}",
            "--window-size=1200,900",
            "--hide-scrollbars",
        )
        data = shot.read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 10_000, name


def test_legend_counts_sorting_filters_downloads_search(
    chromium: str, report: Path, tmp_path: Path
) -> None:
    """The issue-39 controls, each set by the location's hash (the pages' script reads it)."""
    summary = (report / "index.html").as_uri()
    # the legend and the n of each score; sorting the coverage by its 'n_runs' column, descending
    dom, console = browse(chromium, summary + "#sort=coverage-table:0:desc", tmp_path / "p1")
    assert console == []
    assert 'id="legend"' in dom and "never counted as drift" in dom and "crashed_under_check" in dom
    assert "n = 2 papers · " in dom
    table = dom[dom.index('id="coverage-table"') :].split("</table>")[0]
    assert 'data-sorted="0:desc"' in table
    agents = [a for a in (r.split("</td>")[0] for r in table.split('<tr class="f"><td>')[1:])]
    assert agents == sorted(agents, reverse=True) and len(agents) > 1
    # downloads: every link leads to a file
    links = [a["href"] for a in Elements(dom).find("a", cls="download")]
    assert "site/data/judgments.csv" in links and "site/data/judgments.parquet" in links
    for link in links:
        assert Path(urljoin(summary, link).removeprefix("file://")).is_file(), link
    # the filters on a run page: static's drifted SAUs only
    run = (report / "site" / "runs" / "A" / "P1" / "0.html").as_uri()
    dom, console = browse(chromium, run + "#judge=static&verdict=drifted", tmp_path / "p2")
    assert console == []
    sections = {s["id"]: "hidden" in s for s in Elements(dom).find("section", cls="sau")}
    assert sections == {"sau-a1": True, "sau-a2": False, "sau-b1": True}
    dom, _ = browse(chromium, run + "#dim=D2", tmp_path / "p3")
    sections = {s["id"]: "hidden" in s for s in Elements(dom).find("section", cls="sau")}
    assert sections == {"sau-a1": True, "sau-a2": True, "sau-b1": False}
    # the search: its index loads on demand and lists the SAU
    dom, console = browse(chromium, run + "#search=lr%20is", tmp_path / "p4")
    assert console == []
    results = dom[dom.index('id="search-results"') :].split("</ul>")[0]
    assert 'href="../../../papers/P1.html#sau-a2"' in results and "hidden" not in results[:40]
    # a file page marks the cited lines; the diff page compares two runs' files
    whole = (report / "site" / "files" / "A" / "P1" / "0" / "main.py.html").as_uri()
    dom, console = browse(chromium, whole + "#L4-5", tmp_path / "p5")
    assert console == [] and 'class="line hit" id="L4"' in dom and 'class="line hit" id="L5"' in dom
    diff = (report / "site" / "diff" / "P1.html").as_uri()
    dom, console = browse(chromium, diff + "#a=0&b=2", tmp_path / "p6")
    assert console == [] and "main.py: 0 lines only in A / seed 0, 0 only in B / seed 0." in dom
