"""make_report on tables from real aggregated trees: valid, non-empty, deterministic files, and the
explorer's pages (summary, agents, papers, runs, disagreements) with the run folders' code."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from test_aggregate import GRID, PAPERS, build_tree, write_paper

from sabench import aggregate as agg
from sabench.report import IMAGES, make_report
from sabench.report_site import slug

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
REPO = Path(__file__).resolve().parents[1]
MAIN_PY = (
    "import numpy as np\n"
    "\n"
    "def fit(X, y):\n"
    "    lr = 0.5  # the paper says 0.05\n"
    "    return np.linalg.solve(X.T @ X, X.T @ y)\n"
)
PAPER_MD = (
    "# Title of P1\n\n"
    "We train with gradient descent.\n"
    "The learning rate is 0.05 and we run 200 epochs, as in prior work.\n\n"
    "## Method\n\nThe loss is the mean squared error.\n"
)
QUOTE = "The learning rate is 0.05"


def check_outputs(paths: list[Path], out: Path) -> None:
    assert [p.name for p in paths] == [*IMAGES, "index.html", "site"]
    for name in IMAGES:
        data = (out / name).read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 1000, name
    for page in (out / "index.html", out / "site" / "index.html"):
        text = page.read_text(encoding="utf-8")
        assert text.startswith("<!DOCTYPE html>") and text.count("data:image/png;base64,") == 3
    assert (out / "site" / "assets" / "report.css").stat().st_size > 1000
    assert (out / "site" / "assets" / "report.js").is_file()
    assert not [p for p in out.rglob("*") if ".tmp" in p.name]


def local_links(page: Path) -> list[str]:
    """Every relative href/src of a page (anchors and data URIs left out)."""
    text = page.read_text(encoding="utf-8")
    links = re.findall(r'(?:href|src)="([^"#]+)(?:#[^"]*)?"', text)
    return [link for link in links if not link.startswith(("data:", "http:", "https:"))]


def rich_tree(root: Path) -> dict[str, pd.DataFrame]:
    """The aggregate tree plus what the run pages read: code, a log, a transcript, the paper's
    text and quotes; A/P1/0's drifted SAU a2 cites main.py:4."""
    build_tree(root, reference=True)
    write_paper(
        root,
        "P1",
        [
            {"sau_id": "a1", "dimension": "D1", "source": "we run 200 epochs"},
            {"sau_id": "a2", "dimension": "D1", "source": QUOTE, "claim": "lr is 0.05"},
            {"sau_id": "b1", "dimension": "D2", "source": "the mean squared error"},
        ],
    )
    (root / "papers" / "P1" / "paper.md").write_text(PAPER_MD)
    for agent, paper, seed in GRID:
        folder = root / "runs" / agent / paper / seed
        (folder / "submission").mkdir(parents=True, exist_ok=True)
        (folder / "submission" / "main.py").write_text(MAIN_PY)
        (folder / "executed").mkdir(exist_ok=True)  # what the run wrote, cited by a judgment
        (folder / "executed" / "results.json").write_text(
            "{\n" + "".join(f'  "k{i}": {i},\n' for i in range(5)) + '  "rmse": 0.549\n}\n'
        )
        (folder / "execution.log").write_text(
            "".join(f"log line {i}\n" for i in range(100)) + "[sabench] status=ok exit_code=0\n"
        )
    events = [
        {"step": 0, "role": "system", "content": "You reproduce papers.", "t": 1.0},
        {"step": 1, "role": "assistant", "content": "I write main.py", "t": 2.0},
    ]
    (root / "runs" / "A" / "P1" / "0" / "transcript.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in events)
    )
    tables = agg.aggregate(root, GRID, list(PAPERS), root / "tables")
    judgments = tables["judgments"]
    drift = (
        (judgments["agent"] == "A")
        & (judgments["paper"] == "P1")
        & (judgments["seed"] == "0")
        & (judgments["sau_id"] == "a2")
        & (judgments["judge"] == "static")
    )
    assert drift.sum() == 1
    judgments.loc[drift, "reasoning"] = "Value mismatch: the paper's 0.05 is 0.5 (main.py:4)."
    judgments["evidence"] = [
        [
            {"file": "main.py", "start": 4, "end": 4},
            {"file": "gone.py", "start": 1, "end": 2},
            {"file": "results.json", "start": 7, "end": 7},
        ]
        if hit
        else ev
        for ev, hit in zip(judgments["evidence"], drift, strict=True)
    ]
    return tables


@pytest.fixture()
def full_tables(tmp_path: Path) -> dict[str, pd.DataFrame]:
    root = build_tree(tmp_path / "results", reference=True)
    return agg.aggregate(root, GRID, list(PAPERS), root / "tables")


@pytest.fixture()
def rich(tmp_path: Path) -> tuple[Path, Path]:
    """(results root, report folder) of the rich tree's report."""
    root = tmp_path / "results"
    tables = rich_tree(root)
    out = tmp_path / "report"
    check_outputs(make_report(tables, out, root, config_hash="cafe1234"), out)
    return root, out


def test_report_writes_pngs_and_html(full_tables: dict, tmp_path: Path) -> None:
    out = tmp_path / "report"
    paths = make_report(full_tables, out)
    check_outputs(paths, out)
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "Agreement with the reference judge" in page and "<td>static</td>" in page
    # one page per agent, paper and run of the tables; every local link of every page resolves
    site = out / "site"
    assert {p.stem for p in (site / "agents").glob("*.html")} == {"A", "B"}
    assert {p.stem for p in (site / "papers").glob("*.html")} == set(PAPERS)
    runs = {
        tuple(p.relative_to(site / "runs").with_suffix("").parts)
        for p in site.rglob("runs/**/*.html")
    }
    assert runs == set(GRID)
    pages = [out / "index.html", *site.rglob("*.html")]
    for page in pages:
        for link in local_links(page):
            assert (page.parent / link).resolve().is_file(), (page, link)


def test_report_is_deterministic(tmp_path: Path) -> None:
    """Two builds give the same bytes, also when the second renders its pages in 2 processes."""
    root = tmp_path / "results"
    tables = rich_tree(root)
    make_report(tables, tmp_path / "a", root)
    make_report(tables, tmp_path / "b", root, workers=2)
    files = sorted(
        p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file()
    )
    assert len(files) > 15
    assert files == sorted(
        p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file()
    )
    for rel in files:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel
    # a rebuild into the same folder drops the pages of runs no longer in the tables
    fewer = {**tables, "runs": tables["runs"][tables["runs"]["agent"] == "A"]}
    fewer["judgments"] = tables["judgments"][tables["judgments"]["agent"] == "A"]
    fewer["scores_by_run"] = tables["scores_by_run"][tables["scores_by_run"]["agent"] == "A"]
    make_report(fewer, tmp_path / "a", root)
    assert not (tmp_path / "a" / "site" / "runs" / "B").exists()


def test_report_one_agent_one_paper(tmp_path: Path) -> None:
    root = build_tree(tmp_path / "r", grid=[("B", "P2", "0")])
    tables = agg.aggregate(root, [("B", "P2", "0")], ["P2"], root / "tables")
    out = tmp_path / "report"
    check_outputs(make_report(tables, out, root), out)


def test_report_on_empty_tables(tmp_path: Path) -> None:
    root = tmp_path / "r"
    build_tree(root, grid=[])
    tables = agg.aggregate(root, [], list(PAPERS), root / "tables")
    assert tables["scores_by_agent"].empty
    for given in (tables, {}):
        out = tmp_path / f"report-{len(given)}"
        check_outputs(make_report(given, out), out)
        assert "(no scores)" in (out / "index.html").read_text(encoding="utf-8")


def test_html_escapes_names(full_tables: dict, tmp_path: Path) -> None:
    bad = "<script>x</script>"
    tables = {
        name: frame.replace({"agent": {"A": bad}}) if "agent" in frame else frame
        for name, frame in full_tables.items()
    }
    make_report(tables, tmp_path / "out")
    pages = [tmp_path / "out" / "index.html", *(tmp_path / "out" / "site").rglob("*.html")]
    assert any(bad in str(p) or slug(bad) in str(p) for p in pages)  # its pages exist
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert "<script>x" not in text, page
    assert "&lt;script&gt;x&lt;/script&gt;" in (tmp_path / "out" / "index.html").read_text()
    assert slug(bad) != bad and "/" not in slug(bad) and not slug("..").startswith(".")


def summary(tables: dict, out: Path) -> str:
    make_report(tables, out)
    return (out / "index.html").read_text(encoding="utf-8")


def test_scores_over_few_papers_are_marked(full_tables: dict, tmp_path: Path) -> None:
    """Two papers: every score marked and the note shown; over 5 papers neither."""
    page = summary(full_tables, tmp_path / "few")
    assert '<span class="s">0.562 †</span>' in page
    assert '<span class="ci">[' in page
    assert '<p class="note">† interval over fewer than 5 papers</p>' in page
    many = full_tables["scores_by_agent"].assign(n_papers=5, few_papers=False)
    plain = summary({**full_tables, "scores_by_agent": many}, tmp_path / "many")
    assert "†" not in plain and '<span class="s">0.562</span>' in plain
    # tables written before the flag existed: the same rule, on n_papers
    old = full_tables["scores_by_agent"].drop(columns="few_papers")
    assert summary({**full_tables, "scores_by_agent": old}, tmp_path / "old") == page


def test_summary_coverage_incomplete_cost_provenance(full_tables: dict, tmp_path: Path) -> None:
    incomplete = pd.DataFrame(
        [["A", "P2", "1", "static", "judge-static", "provider", "rate limited (HTTP 429)"]],
        columns=agg.INCOMPLETE_COLUMNS,
    )
    page = summary({**full_tables, "incomplete_runs": incomplete}, tmp_path / "r")
    assert '<h2 id="coverage">Coverage</h2>' in page and "n_runs_incomplete" in page
    assert '<h2 id="incomplete">Not complete</h2>' in page
    assert "<td>rate limited (HTTP 429)</td>" in page and "<td>judge-static</td>" in page
    # cost: 3 runs of A at 10 + 5 tokens and $0.01 each (write_run's agent.json), no gateway
    assert "<td>A</td><td>3</td><td>–</td><td>30</td><td>15</td><td>0.0300</td>" in page
    # and beside its scores: what a run of A cost
    assert '<td class="cost" data-v="0.010000">0.0100</td></tr>' in page
    assert "static-v1" in page and "reference-v1" in page  # the judges' fingerprints
    assert "sabench version" in page and "git commit" in page
    assert "Not complete" not in summary(full_tables, tmp_path / "none")


def test_run_page_shows_the_drift_beside_the_paper(rich: tuple[Path, Path]) -> None:
    _, out = rich
    index = (out / "index.html").read_text(encoding="utf-8")
    assert 'href="site/runs/A/P1/0.html"' in index  # the matrix links the run
    page = (out / "site" / "runs" / "A" / "P1" / "0.html").read_text(encoding="utf-8")
    sections = re.findall(r'<section class="sau f[^"]*" id="sau-(\w+)"', page)
    assert sections == ["a1", "a2", "b1"]
    a2 = page[page.index('id="sau-a2"') :].split("</section>")[0]
    # the paper's sentence, its quote marked, beside both judges and the cited line
    assert f"<mark>{QUOTE}</mark> and we run 200 epochs" in a2
    assert "lr is 0.05" in a2 and "Value mismatch: the paper&#39;s 0.05 is 0.5" in a2
    assert '<span class="v v-drifted">drifted</span>' in a2
    assert '<span class="v v-partial">partial</span>' in a2  # the reference judge
    assert "<code>main.py:4</code>" in a2 and '<span class="hit"><span class="ln">4</span>' in a2
    assert '<span class="ctx"><span class="ln">3</span>' in a2  # the code around it, dimmed
    assert '<span class="ln">2</span>' in a2 and '<span class="ln">1</span>' not in a2
    assert re.search(r'<span class="ln">4</span>.*lr.*0\.5.*# the paper says 0\.05', a2)
    assert '<span class="tc"># the paper says 0.05</span>' in a2  # highlighted
    assert '<span class="tk">import</span> numpy <span class="tk">as</span> np' in page
    assert "gone.py:1-2" in a2 and "the run folder keeps no such file" in a2
    # a file the run wrote (executed/) is shown like the code: no "missing" note
    assert "results.json:7" in a2 and '"rmse"' in a2 and "0.549" in a2
    assert "judges disagree" in a2
    # execution: status, exit code, metrics, the log's tail (not its head); the transcript
    assert "log line 99" in page and "log line 10\n" not in page
    assert "<th>acc</th><td>0.900000</td>" in page
    assert '<details class="transcript"><summary>Agent transcript (2 events)</summary>' in page
    assert "I write main.py" in page
    other = (out / "site" / "runs" / "B" / "P1" / "0.html").read_text(encoding="utf-8")
    assert "transcript" not in other
    assert "config hash" in index and "cafe1234" in index
    assert "2025-01-01T00:00:00Z" in index  # the runs' date, from their records


def test_evidence_outside_the_submission_is_not_read(tmp_path: Path) -> None:
    root = tmp_path / "results"
    tables = rich_tree(root)
    (root / "secret.txt").write_text("TOP-SECRET\n")
    judgments = tables["judgments"].copy()
    judgments["evidence"] = [[{"file": "../../../../../secret.txt", "start": 1, "end": 1}]] * len(
        judgments
    )
    make_report({**tables, "judgments": judgments}, tmp_path / "out", root)
    for page in (tmp_path / "out" / "site").rglob("*.html"):
        assert "TOP-SECRET" not in page.read_text(encoding="utf-8"), page


def test_paper_page_and_disagreements(rich: tuple[Path, Path]) -> None:
    _, out = rich
    paper = (out / "site" / "papers" / "P1.html").read_text(encoding="utf-8")
    columns = re.findall(
        r'<th class="col" data-col="(\d+)"><a href="../([^"]+)">([^<]+)</a>', paper
    )
    assert [c[2] for c in columns] == ["A / seed 0", "A / seed 1", "B / seed 0"]
    assert 'data-left="0" data-right="2"' in paper  # the first seeds of two agents, side by side
    assert paper.count('id="sau-') == 3
    index = (out / "site" / "disagreements.html").read_text(encoding="utf-8")
    per_paper = (out / "site" / "disagreements" / "P1.html").read_text(encoding="utf-8")
    # static and reference differ on every SAU except those both call aligned
    assert 'href="../runs/A/P1/0.html#sau-a2"' in per_paper
    assert 'href="../runs/A/P1/1.html#sau-a1"' not in per_paper  # both: aligned, 1.0
    assert "main.py:4" in per_paper and re.search(r"<td>\d+</td>", index)


def test_cli(rich: tuple[Path, Path], tmp_path: Path) -> None:
    root, _ = rich
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sabench.report",
            "--tables",
            str(root / "tables"),
            "--out",
            str(tmp_path / "cli"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "cli"
    check_outputs([out / n for n in (*IMAGES, "index.html", "site")], out)
    run = (out / "site" / "runs" / "A" / "P1" / "0.html").read_text(encoding="utf-8")
    assert "log line 99" in run  # the run folders, from the tables folder's parent


@pytest.mark.parametrize("template", ["summary.html.j2", "disagreements_index.html.j2"])
def test_one_sau_judgment_is_singular(template: str) -> None:
    from sabench.report_site.build import TEMPLATES, _env

    line = next(
        ln for ln in (TEMPLATES / template).read_text().splitlines() if "SAU judgment" in ln
    )
    render = _env().from_string(line).render
    assert "1 SAU judgment " in render(n_disagreements=1, root="")
    assert "2 SAU judgments " in render(n_disagreements=2, root="")
    assert "0 SAU judgments " in render(n_disagreements=0, root="")


# --------------------------------------------------------------------------- issue 39: the report
# explains itself (n with every score, a legend, code in full, downloads, search)


def test_scores_show_their_papers_and_saus(full_tables: dict, tmp_path: Path) -> None:
    """Each score of the summary and the agent pages says over how many papers and SAUs: the
    distinct SAUs scored (a seed judging P1's SAUs again adds none) of all the papers' SAUs."""
    page = summary(full_tables, tmp_path / "n")
    j = full_tables["judgments"]
    scored = j[(j["agent"] == "A") & (j["judge"] == "static") & (j["verdict"] != "error")]
    n = len(scored[["paper", "sau_id"]].drop_duplicates())
    assert n == 6 and len(scored) == 8  # two seeds of P1: 8 judgments of 6 SAUs
    assert f"n = 2 papers · {n} of 6 SAUs" in page
    agent = (tmp_path / "n" / "site" / "agents" / "A.html").read_text(encoding="utf-8")
    assert f"n = 2 papers · {n} of 6 SAUs" in agent
    # the matrix: each run's SAUs; coverage explains the runs whose score is withheld
    assert re.search(r'<span class="n">n=\d+ of \d+</span>', page)
    assert "n_runs_unscored</th>" in page and "more of their SAUs are <code>error</code>" in page


def test_legend_on_the_summary_and_a_page_of_its_own(full_tables: dict, tmp_path: Path) -> None:
    from sabench.contracts import DIMENSION_NAMES, FAILURE_MODES, VERDICTS

    page = summary(full_tables, tmp_path / "l")
    legend = (tmp_path / "l" / "site" / "legend.html").read_text(encoding="utf-8")
    for text in (page, legend):
        for dim, name in DIMENSION_NAMES.items():
            assert f"<th>{dim}</th><td><b>{name}</b>" in text
        for name in (*VERDICTS, *FAILURE_MODES):
            assert f">{name}</span></th><td>" in text, name
        assert "no description yet" not in text  # every failure mode has its meaning
        assert "never counted as drift" in text and "<th>0.75</th>" in text
    for other in (tmp_path / "l" / "site").rglob("*.html"):
        assert 'id="legend-link"' in other.read_text(encoding="utf-8"), other


def test_code_in_full_the_paper_and_a_diff(rich: tuple[Path, Path]) -> None:
    _, out = rich
    site = out / "site"
    run = (site / "runs" / "A" / "P1" / "0.html").read_text(encoding="utf-8")
    # the cited span links its file's page, the lines anchored
    assert 'href="../../../files/A/P1/0/main.py.html#L4-4"' in run
    whole = (site / "files" / "A" / "P1" / "0" / "main.py.html").read_text(encoding="utf-8")
    assert '<span class="line" id="L4"><a class="ln" href="#L4">4</a>' in whole
    assert "# the paper says 0.05" in whole and 'href="../../../../runs/A/P1/0.html"' in whole
    # the paper's text, the SAU's quote marked and anchored, linked from the run page
    text = (site / "text" / "P1.html").read_text(encoding="utf-8")
    assert f'<mark id="sau-a2" title="a2">{QUOTE}</mark>' in text
    assert 'href="../../../text/P1.html#sau-a2">in the paper</a>' in run
    # the diff page holds every run's files for the script; the run page links it
    diff = (site / "diff" / "P1.html").read_text(encoding="utf-8")
    payload = re.search(
        r'<script type="application/json" id="diff-data">(.*?)</script>', diff, re.S
    )
    assert payload is not None
    runs = json.loads(payload.group(1))
    assert [r["name"] for r in runs] == ["A / seed 0", "A / seed 1", "B / seed 0"]
    assert runs[0]["files"]["main.py"] == MAIN_PY
    assert 'href="../../../diff/P1.html#a=0&amp;b=2"' in run
    assert "grounded" in run  # whether each SAU's quote is in the paper


def test_judges_that_did_not_judge_take_no_room(tmp_path: Path) -> None:
    root = tmp_path / "results"
    tables = rich_tree(root)
    judgments = tables["judgments"]
    keep = ~((judgments["sau_id"] == "a1") & (judgments["judge"] == "reference"))
    make_report({**tables, "judgments": judgments[keep]}, tmp_path / "out", root)
    page = (tmp_path / "out" / "site" / "runs" / "A" / "P1" / "0.html").read_text()
    a1 = page[page.index('id="sau-a1"') :].split("</section>")[0]
    assert 'class="judgment nj"' not in a1 and "Not judged by reference." in a1
    assert '<div class="judges" style="--n: 1">' in a1
    assert 'data-j="static" data-v="static:aligned"' in a1  # what the filters read
    index = (tmp_path / "out" / "site" / "disagreements.html").read_text()
    # a1 of P1's three runs has one judge now: 6 of P1's 9 SAUs x runs, 12 of 15 in all
    assert "12 of the 15 SAUs × runs with a verdict" in index
    assert "judged by one judge only" in index and "<td>6</td><td>9</td></tr>" in index
    per_paper = (tmp_path / "out" / "site" / "disagreements" / "P1.html").read_text()
    assert "gave a verdict on <b>6</b> of the <b>9</b> SAUs × runs" in per_paper


def test_tables_to_download_and_the_search_index(rich: tuple[Path, Path], tmp_path: Path) -> None:
    root, _ = rich
    out = tmp_path / "cli"
    subprocess.run(
        [sys.executable, "-m", "sabench.report", "--tables", str(root / "tables"), "--out",
         str(out), "--agents", str(tmp_path / "agents.yaml")],
        check=True, cwd=REPO, capture_output=True,
    )  # fmt: skip
    data = out / "site" / "data"
    for name in ("judgments", "scores_by_agent", "coverage"):
        source = root / "tables" / f"{name}.parquet"
        csv = pd.read_csv(data / f"{name}.csv")
        assert len(csv) == len(pd.read_parquet(source)), name
        if name != "scores_by_agent":  # the file itself
            assert (data / f"{name}.parquet").read_bytes() == source.read_bytes()
    # the agents' scores: the table's, with the n beside each score on the page
    scores = pd.read_parquet(data / "scores_by_agent.parquet")
    table = pd.read_parquet(root / "tables" / "scores_by_agent.parquet")
    pd.testing.assert_frame_equal(scores.drop(columns=["n_saus", "n_saus_total"]), table)
    assert (scores["n_saus"] <= scores["n_saus_total"]).all() and scores["n_saus"].gt(0).any()
    evidence = json.loads(pd.read_csv(data / "judgments.csv")["evidence"].dropna().iloc[0])
    assert isinstance(evidence, list) and "file" in evidence[0]  # nested values as JSON
    index = (out / "index.html").read_text(encoding="utf-8")
    assert 'href="site/data/judgments.csv" download' in index
    script = (out / "site" / "assets" / "search-index.js").read_text(encoding="utf-8")
    entries = json.loads(script.removeprefix("window.SABENCH_SEARCH = ").rstrip(";\n"))
    assert entries[[e[1] for e in entries].index("a2")][:3] == [
        "SAU",
        "a2",
        "papers/P1.html#sau-a2",
    ]
    assert {"agent", "paper", "run", "SAU"} == {e[0] for e in entries}


def test_agent_descriptions_from_the_agents_file(rich: tuple[Path, Path], tmp_path: Path) -> None:
    from sabench.report import agent_descriptions

    agents = tmp_path / "agents.yaml"
    agents.write_text("A:\n  kind: replay\n  path: x/{paper}\n  description: The <first> agent.\n")
    assert agent_descriptions(agents) == {"A": "The <first> agent."}
    assert agent_descriptions(tmp_path / "missing.yaml") == {}
    root, _ = rich
    out = tmp_path / "out"
    make_report(rich_tree(tmp_path / "r2"), out, root, descriptions=agent_descriptions(agents))
    for page in (out / "index.html", out / "site" / "agents" / "A.html",
                 out / "site" / "runs" / "A" / "P1" / "0.html"):  # fmt: skip
        assert "The &lt;first&gt; agent." in page.read_text(encoding="utf-8"), page


def test_runs_that_did_not_complete_or_never_executed_say_so(tmp_path: Path) -> None:
    """A run whose agent could not start has no record and no judgments, yet a page that flags
    it (as do its agent's list and the matrix); a run never tried (not_run) has none; a run whose
    reproduce.sh never ran names no backend (its record keeps the configured one, 'auto')."""
    root = build_tree(tmp_path / "r", grid=[("B", "P2", "0")])
    tables = agg.aggregate(root, [("B", "P2", "0")], ["P2"], root / "tables")
    runs = tables["runs"].copy()
    runs["execution_status"], runs["backend"], runs["isolation"] = (
        "no_reproduce_script",
        "auto",
        "not run",
    )
    why = "the agent's command could not start in its bwrap sandbox (exit 127, not found)"
    incomplete = pd.DataFrame(
        [
            ["C", "P2", "0", None, "reproduce", "agent_setup", why],
            ["D", "P2", "0", None, "ingest", "not_run", ""],
        ],
        columns=agg.INCOMPLETE_COLUMNS,
    )
    out = tmp_path / "report"
    make_report({**tables, "runs": runs, "incomplete_runs": incomplete}, out, root)
    site = out / "site"
    flagged = (site / "runs" / "C" / "P2" / "0.html").read_text(encoding="utf-8")
    assert 'class="incomplete-note"' in flagged and "reproduce: agent_setup" in flagged
    assert (
        "could not start in its bwrap sandbox" in flagged
        and "(no judgments for this run)" in flagged
    )
    assert ">not complete</span>" in (site / "agents" / f"{slug('C')}.html").read_text("utf-8")
    assert not (site / "runs" / "D").exists(), "a run never tried has no page"
    ran = (site / "runs" / "B" / "P2" / "0.html").read_text(encoding="utf-8")
    assert "never executed: the submission has no reproduce.sh" in ran
    assert "<td>auto</td>" not in ran and 'class="incomplete-note"' not in ran


def test_a_score_over_mixed_judge_settings_is_flagged(full_tables: dict, tmp_path: Path) -> None:
    """A score averaging papers judged under different settings (coverage.mixed_settings) is
    marked in the pivot and named with its papers and settings, on the summary and on the
    agent's page; the others are not."""
    cov = full_tables["coverage"].copy()
    text = "P1 with {window: 5}; P2 with the defaults"
    cov.loc[(cov["agent"] == "A") & (cov["judge"] == "static"), "mixed_settings"] = text
    out = tmp_path / "mixed"
    page = summary({**full_tables, "coverage": cov}, out)
    assert page.count("≠ Mixed judge settings") == 1
    assert "<code>static</code> score of <b>A</b>" in page and text in page
    assert '<span class="s">0.562 † ≠</span>' in page
    agent_a = (out / "site" / "agents" / f"{slug('A')}.html").read_text(encoding="utf-8")
    agent_b = (out / "site" / "agents" / f"{slug('B')}.html").read_text(encoding="utf-8")
    assert text in agent_a and "Mixed judge settings" not in agent_b
    assert "Mixed judge settings" not in summary(full_tables, tmp_path / "one")


def test_agents_whose_papers_split_alike_share_one_warning(
    full_tables: dict, tmp_path: Path
) -> None:
    """A one-paper rejudge splits every agent's papers alike: one warning names them all."""
    cov = full_tables["coverage"].copy()
    text = "P1 with {window: 5}; P2 with the defaults"
    cov.loc[cov["judge"] == "static", "mixed_settings"] = text
    page = summary({**full_tables, "coverage": cov}, tmp_path / "split")
    assert page.count("≠ Mixed judge settings") == 1
    assert "<code>static</code> scores of <b>A, B</b> average papers" in page
    line = agg.summary_markdown({**full_tables, "coverage": cov})
    assert f"`static` of `A`, `B` ({text})" in line
