"""What a reader needs to read the report right (issue 39, second round): each n says of how many
SAUs, seeds do not inflate it, the cited code takes the page's width, a run without a submission
says so, and counts of one are singular."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from test_aggregate import GRID, PAPERS, _make_missing_source, build_tree
from test_report import rich_tree

from sabench import aggregate as agg
from sabench.report import make_report
from sabench.report_site.build import TEMPLATES, _env
from sabench.report_site.model import Site
from sabench.report_site.sources import Sources
from sabench.report_site.summary import score_pivot
from sabench.wording import noun, plural


def only_some(tables: dict[str, pd.DataFrame], judge: str, saus: set[str]) -> dict:
    """The tables with ``judge`` judging only ``saus`` (as the exec judge judges only the SAUs
    with a check), its scores recomputed."""
    from sabench.scoring import run_scores

    j = tables["judgments"]
    keep = (j["judge"] != judge) | j["sau_id"].isin(saus)
    judgments = j[keep].reset_index(drop=True)
    return {**tables, "judgments": judgments, "scores_by_run": run_scores(judgments)}


def test_a_score_says_judged_of_all_and_counts_an_sau_once(tmp_path: Path) -> None:
    """reference judges 4 of the 6 SAUs of A's papers (P1 twice, in two seeds): "4 of 6", not
    the 6 judgments summed over the runs."""
    root = build_tree(tmp_path / "results", reference=True)
    tables = only_some(
        agg.aggregate(root, GRID, list(PAPERS), root / "tables"),
        "reference",
        {"a2", "b1", "c1", "d2"},
    )
    site = Site(tables, Sources(None))
    pivot = score_pivot(site)
    cells = dict(zip(
        [(j, d) for j in pivot["judges"] for d in pivot["dims"]],
        next(r["cells"] for r in pivot["rows"] if r["agent"] == "A"),
        strict=True,
    ))  # fmt: skip
    assert (
        cells[("reference", "overall")]["n_saus"],
        cells[("reference", "overall")]["n_total"],
    ) == (4, 6)
    assert (cells[("reference", "D1")]["n_saus"], cells[("reference", "D1")]["n_total"]) == (2, 3)
    assert (cells[("static", "overall")]["n_saus"], cells[("static", "overall")]["n_total"]) == (
        6,
        6,
    )
    assert site.n_of(site.runs_of_agent["A"], "reference", "D3") == (1, 2)
    out = tmp_path / "report"
    make_report(tables, out, root)
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "n = 2 papers · 4 of 6 SAUs" in page and "n = 2 papers · 2 of 3 SAUs" in page
    assert "n = 1 paper · 1 of 2 SAUs" in page
    # the downloaded table carries the same n as the page, for every score
    download = pd.read_csv(out / "site" / "data" / "scores_by_agent.csv")
    counts = download.set_index(["agent", "judge", "dimension"])[["n_saus", "n_saus_total"]]
    assert tuple(counts.loc[("A", "reference", "overall")]) == (4, 6)
    assert tuple(counts.loc[("A", "reference", "D3")]) == (1, 2)
    parquet = pd.read_parquet(out / "site" / "data" / "scores_by_agent.parquet")
    assert {"n_saus", "n_saus_total"} <= set(parquet.columns)
    assert "an SAU judged in several seeds counts once" in page
    agent = (out / "site" / "agents" / "A.html").read_text(encoding="utf-8")
    assert "n = 2 papers · 4 of 6 SAUs" in agent and 'title="over 2 papers; the judge' in agent
    # the matrix: A x P1 by reference, over two seeds: 2 of P1's 3 SAUs (not 4 judgments)
    matrix = page[page.index('id="matrix-reference"') :].split("</table>")[0]
    a_row = matrix[matrix.index('href="site/agents/A.html"') :].split("</tr>")[0]
    assert re.findall(r'<span class="n">n=(\d+ of \d+)</span>', a_row) == ["2 of 3", "2 of 3"]
    # a run: the SAUs scored of the paper's
    run = (out / "site" / "runs" / "A" / "P1" / "0.html").read_text(encoding="utf-8")
    assert "<td>2 of 3</td>" in run and "<td>3 of 3</td>" in run
    assert "n=2 of 3" in (out / "site" / "papers" / "P1.html").read_text(encoding="utf-8")


class Ancestry(HTMLParser):
    """For each ``pre`` of a page: the classes of the elements it lies in."""

    VOID = frozenset({"br", "img", "input", "meta", "link", "hr", "wbr", "source", "col", "area"})

    def __init__(self, html: str) -> None:
        super().__init__()
        self.stack: list[tuple[str, set[str]]] = []
        self.pres: list[set[str]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.VOID:
            return
        classes = set((dict(attrs).get("class") or "").split())
        if tag == "pre":
            self.pres.append({c for _, cs in self.stack for c in cs})
        self.stack.append((tag, classes))

    def handle_endtag(self, tag: str) -> None:
        while self.stack and self.stack.pop()[0] != tag:
            pass


def test_cited_code_takes_the_whole_width(tmp_path: Path) -> None:
    """Two judges of a2: their verdicts side by side, each one's code in a full-width row below
    them (not in a column of its own, which three judges make a third of the page)."""
    root = tmp_path / "results"
    out = tmp_path / "report"
    make_report(rich_tree(root), out, root)
    run = (out / "site" / "runs" / "A" / "P1" / "0.html").read_text(encoding="utf-8")
    a2 = run[run.index('id="sau-a2"') :].split("</section>")[0]
    assert '<div class="judges" style="--n: 2">' in a2
    pres = Ancestry(a2).pres
    assert pres and all("cited" in p and "judges" in p and "judgment" not in p for p in pres)
    assert '<div class="cited-by"><span class="jname">static</span> cites</div>' in a2
    css = (out / "site" / "assets" / "report.css").read_text(encoding="utf-8")
    assert ".judges > .cited { grid-column: 1 / -1;" in css
    # the disagreements page: the same
    per_paper = (out / "site" / "disagreements" / "P1.html").read_text(encoding="utf-8")
    pres = Ancestry(per_paper).pres
    assert pres and all("cited" in p and "judgment" not in p for p in pres)


def test_a_run_without_a_submission_says_so(tmp_path: Path) -> None:
    """A/P2/0's agent has no submission for P2 (missing_source): its grey cell, its page and the
    lists of runs say "no submission", and why, instead of a bare dash."""
    root = build_tree(tmp_path / "results")
    _make_missing_source(root, ("A", "P2", "0"))
    tables = agg.aggregate(root, GRID, list(PAPERS), root / "tables")
    out = tmp_path / "report"
    make_report(tables, out, root)
    page = (out / "index.html").read_text(encoding="utf-8")
    matrix = page[page.index('id="matrix-static"') :].split("</table>")[0]
    a_row = matrix[matrix.index('href="site/agents/A.html"') :].split("</tr>")[0]
    cells = a_row.split("<td")[1:]
    assert "no submission" not in cells[0] and "n=" in cells[0]  # P1
    assert '<span class="nosub" title="The agent has no submission for this paper' in cells[1]
    assert "coverage, not a score" in cells[1] and "source folder not found" in cells[1]
    assert "the run counts in no score" in cells[1] and "n=" not in cells[1]
    run = (out / "site" / "runs" / "A" / "P2" / "0.html").read_text(encoding="utf-8")
    assert '<p class="nosub-note"><span class="nosub"' in run and "coverage, not a score" in run
    other = (out / "site" / "runs" / "B" / "P2" / "0.html").read_text(encoding="utf-8")
    assert re.search(r'A / seed 0</a> \(<span class="nosub"', other)
    assert (
        "nosub"
        not in (out / "site" / "runs" / "A" / "P1" / "0.html")
        .read_text()
        .split("<main>")[1]
        .split('id="saus"')[0]
    )
    for listing in ("agents/A.html", "papers/P2.html"):
        text = (out / "site" / listing).read_text(encoding="utf-8")
        rows = [r for r in text.split('<tr class="f">') if 'href="../runs/A/P2/0.html"' in r]
        assert rows and '<span class="nosub" title="' in rows[0], listing
    # SA-Bench's convention (missing_source: zero): scored, and still said to have no submission
    _make_missing_source(root, ("A", "P2", "0"), missing_source="zero")
    zero = agg.aggregate(root, GRID, list(PAPERS), root / "tables")
    make_report(zero, tmp_path / "zero", root)
    run = (tmp_path / "zero" / "site" / "runs" / "A" / "P2" / "0.html").read_text()
    assert "scored as an empty submission (missing_source: zero)" in run


def test_counts_of_one_are_singular() -> None:
    assert (plural(1, "SAU"), plural(0, "SAU"), plural(2, "run")) == ("1 SAU", "0 SAUs", "2 runs")
    assert plural(1, "SAU × run", "SAUs × runs") == "1 SAU × run"
    assert noun(3, "SAU × run", "SAUs × runs") == "SAUs × runs"
    bars = '{% from "macros.html.j2" import bars %}{{ bars(list) }}'
    bar = {"judge": "exec", "score": "1.000", "width": 100, "color": "#fff"}
    render = _env().from_string(bars).render
    one = render(list=[{**bar, "n": 1, "total": 1}])
    assert 'over 1 of the paper&#39;s 1 SAU"' in one and "SAUs" not in one
    assert 'over 2 of the paper&#39;s 3 SAUs"' in render(list=[{**bar, "n": 2, "total": 3}])
    # every count of the templates goes through the filter: no hand-made plural, no "(s)"
    for template in TEMPLATES.glob("*.j2"):
        text = template.read_text(encoding="utf-8")
        assert not re.search(r'"s" if|[a-z]\(s\)', text), template.name


@pytest.mark.parametrize(
    ("template", "line_has", "context", "want"),
    [
        ("run.html.j2", "Agent transcript", {"transcript": [1]}, "(1 event)"),
        ("file.html.j2", "of the submission", {"n_lines": 1}, "1 line of the submission"),
        ("disagreements_index.html.j2", "with a verdict", {"n_both": 1, "n_judged_pairs": 1},
         "1 of the 1 SAU × run with"),
    ],
)  # fmt: skip
def test_one_is_singular_in_the_pages(
    template: str, line_has: str, context: dict, want: str
) -> None:
    line = next(ln for ln in (TEMPLATES / template).read_text().splitlines() if line_has in ln)
    text = _env().from_string(line).render(root="", run=("A", "P", "0"), diff_href="", **context)
    assert want in text, text


PAPER_MD = """# A Title

**Abstract.** We study `ridge` regression.

## 2 Method

**Model.** We predict `y_hat = X @ w`. The learning rate is 0.05 in every run.

- first item
- second *item*,
  continued

| a | b |
|---|---|
| 1 | 2 |

```
x = 1  # **not bold**
```

## 3 Results

The learning rate was 0.05, we found, and the rest was noise.
"""


def test_a_place_shows_the_papers_sentence_and_the_paper_reads_as_text(tmp_path: Path) -> None:
    """An SAU whose source names a heading ("2 Method") shows and marks the sentence of that
    section that says its claim, not "## 2 Method"; the paper's page renders its markdown
    (emphasis, code, lists, tables, code blocks) instead of showing it raw."""
    from sabench.report_site.extras import paper_text_context

    results = tmp_path / "results"
    (results / "papers" / "P1").mkdir(parents=True)
    (results / "papers" / "P1" / "paper.md").write_text(PAPER_MD, encoding="utf-8")
    row = {"paper": "P1", "sau_id": "s1", "dimension": "D1", "source": "2 Method"}
    row["claim"] = "The learning rate is 0.05."
    site = Site({"saus": pd.DataFrame([row])}, Sources(results))
    sentence = "The learning rate is 0.05 in every run."
    assert site.quote("P1", row) == sentence  # its section's, though Results says it too
    assert site.sau_rows("P1", [])[0]["quote"] == sentence
    context = site.sources.context("P1", sentence)
    assert context is not None
    assert context.startswith("<strong>Model.</strong> We predict <code>y_hat = X @ w</code>.")
    assert context.endswith(f"<mark>{sentence}</mark>")
    html = paper_text_context(site, "P1")["html"]
    assert (
        "<p><strong>Model.</strong> We predict <code>y_hat = X @ w</code>. "
        f'<mark id="sau-s1" title="s1">{sentence}</mark></p>'
    ) in html
    assert "<h3>2 Method</h3>" in html
    assert "<ul><li>first item</li><li>second <em>item</em>, continued</li></ul>" in html
    assert "<thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td>1</td><td>2</td>" in html
    assert "<pre><code>x = 1  # **not bold**</code></pre>" in html
    prose = html.replace("<pre><code>x = 1  # **not bold**</code></pre>", "")
    assert "**" not in prose and "`" not in prose and "##" not in prose and "|" not in prose
    # a place no sentence says (no words of the claim in it) shows the place, as before
    assert site.quote("P1", {**row, "claim": "Momentum is zero."}) == "2 Method"
