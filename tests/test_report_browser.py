"""The report in a real browser: headless Chromium (Debian's ``chromium``, installed here as root
when missing) opens the summary from file://, follows the agent x paper matrix to a run page and
finds its SAUs, the paper's sentence and the cited code; the pages' script runs (the filter, the
paper page's two columns) and nothing is logged to the console. The last tests drive the pages
as a reader does (:class:`Tab`: clicks, key presses, downloads)."""

from __future__ import annotations

import fcntl
import json
import os
import select
import subprocess
import time
from collections.abc import Callable
from csv import reader
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import pandas as pd
import pytest
from system_packages import debian_binary
from test_report import QUOTE, rich_tree

from sabench.report import make_report

pytestmark = pytest.mark.browser
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


@pytest.fixture(scope="session")
def chromium() -> str:
    """Chromium's binary; apt-get installs Debian's package when missing and running as root."""
    return debian_binary(BROWSERS, "chromium")


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


# --------------------------------------------------------------------------- driven by a reader:
# clicks, key presses and downloads over Chromium's DevTools protocol


class Tab:
    """A headless Chromium page driven over the DevTools protocol on a pipe
    (``--remote-debugging-pipe``: Chromium reads fd 3 and writes fd 4, messages end in NUL), so
    no driver package is needed: real mouse clicks and key presses, the page's console messages
    and exceptions, and downloads saved into ``downloads``."""

    def __init__(self, chromium: str, profile: Path, downloads: Path) -> None:
        to_chrome, self._out = os.pipe()
        self._in, from_chrome = os.pipe()
        # the child's ends out of the way of 3 and 4 (pipe() may have given those), then dup2'd
        ends = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (to_chrome, from_chrome)]
        os.close(to_chrome)
        os.close(from_chrome)

        def onto_3_and_4() -> None:
            os.dup2(ends[0], 3)
            os.dup2(ends[1], 4)

        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--window-size=1200,900", "--remote-debugging-pipe", f"--user-data-dir={profile}",
             "about:blank"],
            preexec_fn=onto_3_and_4, close_fds=False,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        for fd in ends:
            os.close(fd)
        self._buf, self._id, self._session = b"", 0, ""
        self.events: list[dict[str, Any]] = []
        targets = self.send("Target.getTargets", session=False)["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        attached = self.send(
            "Target.attachToTarget", {"targetId": page["targetId"], "flatten": True}, False
        )
        self._session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")
        downloads.mkdir(parents=True, exist_ok=True)
        self.send(
            "Browser.setDownloadBehavior",
            {"behavior": "allow", "downloadPath": str(downloads), "eventsEnabled": True},
            session=False,
        )

    def send(self, method: str, params: dict | None = None, session: bool = True) -> Any:
        self._id += 1
        message: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self._session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        reply = self._wait(lambda m: m.get("id") == self._id)
        assert "error" not in reply, (method, reply["error"])
        return reply["result"]

    def _wait(self, match: Callable[[dict[str, Any]], bool], timeout: float = 60) -> dict:
        end = time.monotonic() + timeout
        while True:
            while b"\0" in self._buf:
                raw, self._buf = self._buf.split(b"\0", 1)
                message = json.loads(raw)
                if match(message):
                    return message  # type: ignore[no-any-return]
                self.events.append(message)
            ready, _, _ = select.select([self._in], [], [], max(0.0, end - time.monotonic()))
            assert ready, "Chromium did not answer"
            chunk = os.read(self._in, 1 << 20)
            assert chunk, "Chromium exited"
            self._buf += chunk

    def event(self, method: str, match: Callable[[dict], bool] = lambda p: True) -> dict:
        """The params of the first ``method`` event (seen already or to come) that ``match``es."""
        for i, message in enumerate(self.events):
            if message.get("method") == method and match(message["params"]):
                return self.events.pop(i)["params"]  # type: ignore[no-any-return]
        return self._wait(lambda m: m.get("method") == method and match(m["params"]))["params"]

    def open(self, url: str) -> None:
        self.events.clear()
        self.send("Page.navigate", {"url": url})
        self.event("Page.loadEventFired")

    def js(self, expression: str) -> Any:
        """The value of ``expression`` in the page."""
        result = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def click(self, selector: str) -> None:
        """A mouse click in the middle of the element, scrolled into view first."""
        x, y = self.js(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " e.scrollIntoView({block: 'center'}); const b = e.getBoundingClientRect();"
            " return [b.x + b.width / 2, b.y + b.height / 2]; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.send(
                "Input.dispatchMouseEvent",
                {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1},
            )

    def press(self, selector: str, key: str, times: int = 1) -> None:
        """``key`` (e.g. ``ArrowDown``) pressed ``times`` with the element focused."""
        codes = {"ArrowDown": 40, "ArrowUp": 38}
        self.js(f"document.querySelector({json.dumps(selector)}).focus()")
        for _ in range(times):
            for kind in ("keyDown", "keyUp"):
                self.send(
                    "Input.dispatchKeyEvent",
                    {"type": kind, "key": key, "code": key, "windowsVirtualKeyCode": codes[key]},
                )

    def download(self, selector: str) -> Path:
        """Click a download link; the file it saved."""
        self.click(selector)
        done = self.event(
            "Browser.downloadProgress", lambda p: p["state"] in ("completed", "canceled")
        )
        assert done["state"] == "completed", done
        return Path(done["filePath"])

    def console(self) -> list[str]:
        """What the page logged to the console or threw, and the errors Chromium logged."""
        out = []
        for message in self.events:
            method, params = message.get("method"), message.get("params", {})
            if method == "Runtime.consoleAPICalled":
                out.append(
                    " ".join(str(a.get("value", a.get("description"))) for a in params["args"])
                )
            elif method == "Runtime.exceptionThrown":
                out.append(str(params["exceptionDetails"]))
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                out.append(params["entry"]["text"])
        return out

    def close(self) -> None:
        try:
            self.send("Browser.close", session=False)
            self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            os.close(self._in)
            os.close(self._out)


@pytest.fixture()
def tab(chromium: str, tmp_path: Path) -> Any:
    page = Tab(chromium, tmp_path / "profile", tmp_path / "downloads")
    yield page
    page.close()


def test_console_of_a_driven_tab_is_caught(tab: Tab, tmp_path: Path) -> None:
    """The driven tab's console check can fail too."""
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><body><script>notDefined();</script></body></html>")
    tab.open(page.as_uri())
    assert any("notDefined" in line for line in tab.console())


def test_a_click_sorts_a_numeric_column_up_then_down(tab: Tab, report: Path) -> None:
    """The downloads' "rows" column: numbers in numeric order (30 after 5), then the other way."""
    tab.open((report / "index.html").as_uri())
    rows = "Array.from(document.querySelectorAll('#downloads-table tbody tr'))"
    numbers = lambda: [int(v) for v in tab.js(f"{rows}.map(r => r.cells[1].textContent)")]  # noqa: E731
    shown = numbers()
    assert len(shown) > 5 and shown != sorted(shown)
    # the check means something: text order is not number order for these
    assert [str(n) for n in sorted(shown)] != sorted(str(n) for n in shown)
    header = "#downloads-table thead th:nth-child(2)"
    tab.click(header)
    assert numbers() == sorted(shown)
    assert tab.js(f"document.querySelector('{header}').getAttribute('aria-sort')") == "ascending"
    tab.click(header)
    assert numbers() == sorted(shown, reverse=True)
    assert tab.js(f"document.querySelector('{header}').getAttribute('aria-sort')") == "descending"
    assert tab.console() == []


def test_the_failure_mode_filter_and_only_drift_by_hand(tab: Tab, report: Path) -> None:
    """On A/P1/0: a1 aligned by both judges, a2 drifted (static: implementation_mismatch), b1
    partial. Pick the failure mode with the keyboard, tick "only drift" with the mouse."""
    tab.open((report / "site" / "runs" / "A" / "P1" / "0.html").as_uri())
    shown = lambda: set(  # noqa: E731
        tab.js("Array.from(document.querySelectorAll('section.sau:not([hidden])')).map(s => s.id)")
    )
    everything = {"sau-a1", "sau-a2", "sau-b1"}
    assert shown() == everything
    options = tab.js("Array.from(document.querySelectorAll('#f-fm option')).map(o => o.value)")
    steps = options.index("implementation_mismatch")
    tab.press("#f-fm", "ArrowDown", steps)
    assert tab.js("document.getElementById('f-fm').value") == "implementation_mismatch"
    assert shown() == {"sau-a2"}
    tab.press("#f-fm", "ArrowUp", steps)  # back to "any"
    assert shown() == everything
    tab.click("#only-drift")
    assert tab.js("document.getElementById('only-drift').checked") is True
    assert shown() == {"sau-a2", "sau-b1"}
    tab.click("#only-drift")
    assert shown() == everything
    assert tab.console() == []


def test_downloads_hold_the_tables(tab: Tab, report: Path) -> None:
    """Clicking the judgments links saves a CSV with the table's header and as many rows as the
    downloads table says (and the judgments table has), and a Parquet file (PAR1 at both ends)."""
    tab.open((report / "index.html").as_uri())
    said = tab.js(
        "Array.from(document.querySelectorAll('#downloads-table tbody tr'))"
        ".filter(r => r.cells[0].textContent === 'judgments')[0].cells[1].textContent"
    )
    source = pd.read_parquet(report.parent / "results" / "tables" / "judgments.parquet")
    csv = tab.download('a.download[href$="/judgments.csv"]')
    assert csv.name == "judgments.csv"
    with csv.open(encoding="utf-8", newline="") as f:
        assert next(reader(f)) == list(source.columns)
    frame = pd.read_csv(csv)
    assert len(frame) == int(said) == len(source) > 0
    parquet = tab.download('a.download[href$="/judgments.parquet"]')
    data = parquet.read_bytes()
    assert data[:4] == b"PAR1" and data[-4:] == b"PAR1"
    assert len(pd.read_parquet(parquet)) == len(frame)
    assert tab.console() == []


def test_cited_code_is_as_wide_as_the_sau(tab: Tab, report: Path) -> None:
    """Two judges of a2: their verdicts in two columns, each one's code across the whole SAU."""
    tab.open((report / "site" / "runs" / "A" / "P1" / "0.html").as_uri())
    tab.js("document.getElementById('sau-a2').scrollIntoView()")
    widths = tab.js(
        "(() => { const s = document.getElementById('sau-a2');"
        " const w = e => e.getBoundingClientRect().width;"
        " return {judges: w(s.querySelector('.judges')),"
        " verdicts: Array.from(s.querySelectorAll('.judges > .judgment')).map(w),"
        " code: Array.from(s.querySelectorAll('pre.code')).map(w)}; })()"
    )
    assert widths["judges"] > 800 and len(widths["verdicts"]) == 2 and widths["code"]
    assert all(v < 0.55 * widths["judges"] for v in widths["verdicts"])
    assert all(c > 0.95 * widths["judges"] for c in widths["code"]), widths
