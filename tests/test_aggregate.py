"""aggregate() on small results trees written as real files (Parquet + JSON) in tmp_path."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from sabench import SCHEMA_VERSION
from sabench import aggregate as agg
from sabench.contracts import JUDGMENT_COLUMNS, SAU_COLUMNS
from sabench.io import read_parquet_metadata, write_json, write_parquet

REPO = Path(__file__).resolve().parents[1]

# paper -> [(sau_id, dimension)]
PAPERS = {
    "P1": [("a1", "D1"), ("a2", "D1"), ("b1", "D2")],
    "P2": [("c1", "D1"), ("d1", "D3"), ("d2", "D3")],
}
# (agent, paper, seed) -> {sau_id: (verdict, score)}; hand-computed overall in the comment
VERDICTS: dict[tuple[str, str, str], dict[str, tuple[str, float]]] = {
    # D1 .5, D2 .5 -> .5
    ("A", "P1", "0"): {"a1": ("aligned", 1), "a2": ("drifted", 0), "b1": ("partial", 0.5)},
    # D1 1, D2 error only -> 1.0
    ("A", "P1", "1"): {"a1": ("aligned", 1), "a2": ("aligned", 1), "b1": ("error", math.nan)},
    # D1 .25, D3 .5 -> .375
    ("A", "P2", "0"): {"c1": ("partial", 0.25), "d1": ("missing", 0), "d2": ("aligned", 1)},
    # the null agent: everything missing -> 0
    ("B", "P1", "0"): {"a1": ("missing", 0), "a2": ("missing", 0), "b1": ("missing", 0)},
    # D1 0, D3 .875 -> .4375
    ("B", "P2", "0"): {"c1": ("placeholder", 0), "d1": ("aligned", 1), "d2": ("partial", 0.75)},
}
GRID = list(VERDICTS)


def sau_hash(paper: str) -> str:
    return f"hash-{paper}"


def write_paper(root: Path, paper: str, saus: list[dict] | None = None) -> None:
    """paper.json + saus.parquet (with its sau_set_hash metadata) for one paper."""
    folder = root / "papers" / paper
    write_json(
        folder / "paper.json",
        {
            "paper": paper,
            "title": f"Title of {paper}",
            "sha256": "0" * 64,
            "source_format": "md",
            "sections": ["Intro", "Method"],
            "n_chars": 1234,
        },
    )
    if saus is None:
        saus = [{"sau_id": s, "dimension": d} for s, d in PAPERS[paper]]
    rows = []
    for item in saus:
        row = dict.fromkeys(SAU_COLUMNS)
        row.update(paper=paper, claim=f"claim {item['sau_id']}", source="", weight=1.0)
        row.update(origin="curated", grounded=True)
        row.update(item)
        rows.append(row)
    write_parquet(folder / "saus.parquet", pd.DataFrame(rows), sau_set_hash=sau_hash(paper))


def judgment_row(
    run: tuple[str, str, str],
    sau_id: str,
    dimension: str,
    verdict: str,
    score: float,
    judge: str = "static",
    **extra: object,
) -> dict:
    agent, paper, seed = run
    row = dict.fromkeys(JUDGMENT_COLUMNS)
    row.update(
        agent=agent,
        paper=paper,
        seed=seed,
        sau_id=sau_id,
        dimension=dimension,
        judge=judge,
        score=float(score),
        verdict=verdict,
        failure_mode={
            "drifted": "implementation_mismatch",
            "missing": "omission",
            "placeholder": "placeholder",
        }.get(verdict),
        evidence=[{"file": "main.py", "start": 1, "end": 3}] if verdict == "aligned" else [],
        reasoning="",
        prompt_tokens=0,
        completion_tokens=0,
        cost_usd=0.0,
        cached=False,
        latency_s=0.01,
        judge_fingerprint=f"{judge}-v1",
        sau_set_hash=sau_hash(paper),
        submission_hash="sub",
    )
    row.update(extra)
    return row


def write_run(
    root: Path, run: tuple[str, str, str], rows: list[dict], execution: str | None = "ok"
) -> Path:
    """agent.json, execution.json (None: absent) and judgments.parquet of one run."""
    agent, paper, seed = run
    folder = root / "runs" / agent / paper / seed
    write_json(
        folder / "agent.json",
        {
            "agent": agent,
            "paper": paper,
            "seed": seed,
            "kind": "replay",
            "status": "replayed",
            "steps": 0,
            "wall_s": 1.5,
            "prompt_tokens": 10,
            "completion_tokens": 5,
            "cost_usd": 0.01,
            "model": None,
            "error": None,
            "submission_hash": "sub",
        },
    )
    if execution is not None:
        write_json(
            folder / "execution.json",
            {
                "status": execution,
                "exit_code": 0 if execution == "ok" else 1,
                "wall_s": 2.0,
                "peak_mem_mb": 100,
                "gpus": [],
                "image": "img@sha256:x",
                "backend": "bwrap",
                "isolation": "sandbox",
                "started_at": "2025-01-01T00:00:00Z",
                "files_created": 1,
                "files_modified": 0,
                "log_bytes": 42,
                "metrics": {"acc": 0.9},
                "message": "",
            },
        )
    frame = pd.DataFrame(rows, columns=list(JUDGMENT_COLUMNS))
    frame["score"] = frame["score"].astype(float)
    path = folder / "judgments.parquet"
    write_parquet(path, frame)
    return path


def build_tree(root: Path, reference: bool = False, grid=GRID) -> Path:  # type: ignore[no-untyped-def]
    """The 2 agents x 2 papers x (1-2 seeds) fake results tree; optionally a ``reference`` judge."""
    for paper in PAPERS:
        write_paper(root, paper)
    for run in grid:
        dims = dict(PAPERS[run[1]])
        rows = [judgment_row(run, s, dims[s], v, sc) for s, (v, sc) in VERDICTS[run].items()]
        if reference:  # the reference calls everything aligned except one partial
            rows += [
                judgment_row(
                    run,
                    s,
                    dims[s],
                    "partial" if s in ("a2", "d2") else "aligned",
                    0.5 if s in ("a2", "d2") else 1.0,
                    judge="reference",
                )
                for s in VERDICTS[run]
            ]
        write_run(root, run, rows, execution="failed" if run == ("A", "P2", "0") else "ok")
    return root


def row(frame: pd.DataFrame, **keys: object) -> pd.Series:
    mask = pd.Series(True, index=frame.index)
    for key, value in keys.items():
        mask &= frame[key] == value
    assert mask.sum() == 1, keys
    return frame[mask].iloc[0]


@pytest.fixture()
def tables(tmp_path: Path) -> dict[str, pd.DataFrame]:
    root = build_tree(tmp_path / "results")
    return agg.aggregate(root, GRID, list(PAPERS), root / "tables")


def test_writes_every_table_with_its_columns(tables: dict, tmp_path: Path) -> None:
    out = tmp_path / "results" / "tables"
    assert set(tables) == set(agg.TABLES)
    for name, columns in agg.TABLES.items():
        path = out / f"{name}.parquet"
        on_disk = pd.read_parquet(path)
        assert list(on_disk.columns[: len(columns)]) == columns, name
        assert read_parquet_metadata(path)["schema_version"] == SCHEMA_VERSION
        assert len(on_disk) == len(tables[name])
    assert not list(out.glob(".*tmp*"))
    assert list(tables["scores_by_agent"].columns) == [
        "agent",
        "judge",
        "dimension",
        "score",
        "ci_low",
        "ci_high",
        "n_papers",
        "few_papers",
    ]
    on_disk = pd.read_parquet(out / "scores_by_agent.parquet")
    assert on_disk["few_papers"].dtype == bool and on_disk["few_papers"].all()  # 2 papers


def test_sabench_rule_by_hand(tables: dict) -> None:
    by_run = tables["scores_by_run"]
    assert row(by_run, agent="A", paper="P1", seed="1", dimension="overall")["score"] == 1.0
    assert row(by_run, agent="B", paper="P2", seed="0", dimension="D3")["score"] == 0.875
    scores = tables["scores_by_agent"]
    a = row(scores, agent="A", dimension="overall")
    # seeds first: P1 = (.5 + 1)/2 = .75, P2 = .375 -> .5625 (a flat run mean would be .625)
    assert a["score"] == pytest.approx(0.5625)
    assert a["n_papers"] == 2 and a["ci_low"] <= a["score"] <= a["ci_high"]
    b = row(scores, agent="B", dimension="overall")
    assert b["score"] == pytest.approx((0 + 0.4375) / 2)  # the null agent's missing rows count 0
    d2 = row(scores, agent="A", dimension="D2")
    assert (d2["score"], d2["ci_low"], d2["ci_high"], d2["n_papers"]) == (0.5, 0.5, 0.5, 1)


def test_errors_excluded_and_counted(tables: dict) -> None:
    d2 = row(tables["scores_by_run"], agent="A", paper="P1", seed="1", dimension="D2")
    assert math.isnan(d2["score"]) and d2["n_error"] == 1
    cov = tables["coverage"]
    a = row(cov, agent="A", judge="static")
    assert (a["n_runs"], a["n_runs_failed_execution"]) == (3, 1)
    assert (a["n_saus_judged"], a["n_saus_error"]) == (8, 1)
    b = row(cov, agent="B", judge="static")
    assert (b["n_runs"], b["n_runs_failed_execution"], b["n_saus_error"]) == (2, 0, 0)
    tax = tables["error_taxonomy"]
    err = row(tax, agent="A", judge="static", dimension="overall", verdict="error")
    assert err["count"] == 1 and err["share"] == pytest.approx(1 / 9)


def test_runs_papers_saus_judgments_tables(tables: dict) -> None:
    runs = tables["runs"]
    assert len(runs) == len(GRID)
    r = row(runs, agent="A", paper="P2", seed="0")
    assert r["execution_status"] == "failed" and r["backend"] == "bwrap"
    assert json.loads(r["metrics"]) == {"acc": 0.9}
    papers = tables["papers"]
    assert row(papers, paper="P1")["sau_set_hash"] == "hash-P1"
    assert not papers["has_tree"].any()
    assert len(tables["saus"]) == 6 and len(tables["judgments"]) == 15
    assert tables["tree_scores"].empty
    assert list(tables["tree_scores"].columns) == agg.TREE_COLUMNS


def test_no_reference_judge_gives_empty_agreement(tables: dict) -> None:
    for name in ("judge_agreement", "judge_confusion"):
        assert tables[name].empty
        assert list(tables[name].columns) == agg.TABLES[name]


def test_reference_judge_gives_agreement(tmp_path: Path) -> None:
    root = build_tree(tmp_path / "r", reference=True)
    tables = agg.aggregate(root, GRID, list(PAPERS), root / "tables")
    agreement = tables["judge_agreement"]
    assert set(agreement["judge"]) == {"static"}  # never the reference against itself
    overall = row(agreement, dimension="overall")
    assert overall["n"] == 14  # 15 pairs, one static error dropped
    assert 0 <= overall["exact_agreement"] <= 1 and not math.isnan(overall["kappa_quadratic"])
    confusion = tables["judge_confusion"]
    assert confusion["count"].sum() == 15
    assert row(confusion, reference_verdict="aligned", judge_verdict="error")["count"] == 1
    assert set(tables["scores_by_agent"]["judge"]) == {"reference", "static"}


def test_mixed_sau_versions_are_never_mixed(tmp_path: Path) -> None:
    """Judgments made against another SAU version are not of the run as it is: left out, named."""
    root = build_tree(tmp_path / "r")
    run = ("B", "P2", "0")
    rows = [judgment_row(run, "c1", "D1", "aligned", 1.0, sau_set_hash="hash-old")]
    path = write_run(root, run, rows)
    tables = agg.aggregate(root, GRID, list(PAPERS), root / "tables")
    judged = tables["judgments"]
    assert not ((judged.agent == "B") & (judged.paper == "P2")).any()
    stale = row(tables["incomplete_runs"], agent="B", paper="P2")
    assert stale["cause"] == "stale" and stale["judge"] == "static"
    assert str(path) in stale["message"] and "hash-old" in stale["message"]
    assert row(tables["coverage"], agent="B", judge="static")["n_runs_incomplete"] == 1


def test_a_missing_run_costs_that_run_only(tmp_path: Path) -> None:
    root = build_tree(tmp_path / "r")
    folder = root / "runs" / "A" / "P1" / "1"
    (folder / "judgments.parquet").unlink()
    (folder / "agent.json").unlink()
    write_json(
        folder / "faults" / "reproduce.json",
        {"cause": "provider_unreachable", "message": "refused"},
    )
    tables = agg.aggregate(root, GRID, list(PAPERS), root / "tables")
    missing = row(tables["incomplete_runs"], agent="A", paper="P1", seed="1")
    assert (missing["stage"], missing["cause"], missing["message"]) == (
        "reproduce",
        "provider_unreachable",
        "refused",
    )
    assert pd.isna(missing["judge"])
    cov = row(tables["coverage"], agent="A", judge="static")
    assert (cov["n_runs"], cov["n_runs_complete"], cov["n_runs_incomplete"]) == (3, 2, 1)
    assert cov["incomplete_causes"] == "provider_unreachable=1"
    # A's P1 score is now its seed 0 alone: .5 (P1) and .375 (P2)
    a = row(tables["scores_by_agent"], agent="A", dimension="overall")
    assert a["score"] == pytest.approx((0.5 + 0.375) / 2)
    assert len(tables["runs"]) == len(GRID) - 1
    summary = agg.summary_markdown(tables)
    assert "Not complete" in summary and "`A/P1/1` reproduce: provider_unreachable" in summary


def test_a_broken_paper_costs_that_paper_only(tmp_path: Path) -> None:
    root = build_tree(tmp_path / "r")
    (root / "papers" / "P2" / "saus.parquet").unlink()
    log = root / "logs" / "saus" / "P2.log"
    log.parent.mkdir(parents=True)
    log.write_text("error: saus.yaml: id: duplicate SAU id 'c1'\n")
    tables = agg.aggregate(root, GRID, list(PAPERS), root / "tables")
    assert set(tables["papers"]["paper"]) == {"P1"}
    assert set(tables["judgments"]["paper"]) == {"P1"}
    broken = tables["incomplete_runs"]
    assert set(broken["paper"]) == {"P2"} and set(broken["stage"]) == {"saus"}
    assert set(broken["cause"]) == {"failed"} and "duplicate SAU id" in broken["message"].iloc[0]


def test_a_judge_that_failed_leaves_the_others(tmp_path: Path) -> None:
    """Without the merged file (its run failed), each judge's own file counts for that judge."""
    root = build_tree(tmp_path / "r", reference=True)
    folder = root / "runs" / "B" / "P1" / "0"
    frame = pd.read_parquet(folder / "judgments.parquet")
    (folder / "judgments.parquet").unlink()
    write_parquet(folder / "judge" / "static.parquet", frame[frame.judge == "static"])
    tables = agg.aggregate(
        root, GRID, list(PAPERS), root / "tables", judges=["static", "reference"]
    )
    judged = tables["judgments"]
    mine = judged[(judged.agent == "B") & (judged.paper == "P1")]
    assert set(mine.judge) == {"static"}
    gap = row(tables["incomplete_runs"], agent="B", paper="P1")
    assert (gap["judge"], gap["stage"], gap["cause"]) == ("reference", "judge-reference", "not_run")
    assert row(tables["coverage"], agent="B", judge="static")["n_runs_incomplete"] == 0
    assert row(tables["coverage"], agent="B", judge="reference")["n_runs_incomplete"] == 1


def test_incomplete_tables_leave_a_marker_for_the_next_run(tmp_path: Path) -> None:
    root = build_tree(tmp_path / "r")
    marker = root / "tables" / agg.INCOMPLETE_MARKER
    agg.write_tables(root, GRID, list(PAPERS))
    assert not marker.exists()
    (root / "runs" / "B" / "P2" / "0" / "judgments.parquet").unlink()
    summary = agg.write_tables(root, GRID, list(PAPERS))
    assert marker.is_file() and "Not complete" in summary
    assert (root / "tables" / "summary.md").read_text() == summary


def test_runs_a_narrowed_command_left_to_the_grid_leave_no_marker(tmp_path: Path) -> None:
    """A run never run is redone by the next run of the whole grid anyway: when the command line
    narrowed the grid to other runs, it leaves no marker (the whole grid would remove it, and its
    leaving would make the tables once more); a run of the narrowed grid that did not run does."""
    root = build_tree(tmp_path / "r")
    marker = root / "tables" / agg.INCOMPLETE_MARKER
    unrun = ("B", "P2", "0")
    shutil.rmtree(root.joinpath("runs", *unrun))
    others = [run for run in GRID if run != unrun]
    summary = agg.write_tables(root, GRID, list(PAPERS), runs_now=others)
    assert not marker.exists() and "not_run" in summary
    agg.write_tables(root, GRID, list(PAPERS), runs_now=[unrun])
    assert marker.is_file()


def test_execution_json_is_optional(tmp_path: Path) -> None:
    root = build_tree(tmp_path / "r")
    (root / "runs" / "B" / "P1" / "0" / "execution.json").unlink()
    tables = agg.aggregate(root, GRID, list(PAPERS), root / "tables")
    assert pd.isna(row(tables["runs"], agent="B", paper="P1")["execution_status"])
    assert row(tables["coverage"], agent="B")["n_runs_failed_execution"] == 0


def test_tree_scores_for_a_rubric_paper(tmp_path: Path) -> None:
    root = tmp_path / "r"
    write_paper(
        root,
        "T",
        [
            {
                "sau_id": "a1",
                "dimension": "D2",
                "parent": "root/A",
                "weight": 1.0,
                "parent_weights": [1.0, 2.0],
            },
            {
                "sau_id": "a2",
                "dimension": "D2",
                "parent": "root/A",
                "weight": 3.0,
                "parent_weights": [1.0, 2.0],
            },
            {
                "sau_id": "b1",
                "dimension": "D3",
                "parent": "root/B",
                "weight": 1.0,
                "parent_weights": [1.0, 1.0],
            },
            {
                "sau_id": "b2",
                "dimension": "D3",
                "parent": "root/B/B1",
                "weight": 1.0,
                "parent_weights": [1.0, 1.0, 1.0],
            },
        ],
    )
    run = ("A", "T", "0")
    write_run(
        root,
        run,
        [
            judgment_row(run, "a1", "D2", "aligned", 1.0),
            judgment_row(run, "a2", "D2", "drifted", 0.0),
            judgment_row(run, "b1", "D3", "aligned", 1.0),
            judgment_row(run, "b2", "D3", "error", math.nan),  # pruned, not 0
        ],
    )
    tables = agg.aggregate(root, [run], ["T"], root / "tables")
    tree = row(tables["tree_scores"], paper="T")
    assert tree["score"] == pytest.approx(0.5)
    assert (tree["n_leaves"], tree["n_leaves_judged"]) == (4, 3)
    assert bool(row(tables["papers"], paper="T")["has_tree"])


def test_summary_markdown(tables: dict) -> None:
    text = agg.summary_markdown(tables)
    assert "### Judge `static`" in text
    assert "| A | 0.562 [" in text and "| B | 0.219 [" in text
    assert agg.summary_markdown({}).startswith("No scores")


def test_summary_marks_intervals_over_few_papers(tables: dict) -> None:
    """The fixture's 2 papers are marked and footnoted; the same scores over 5 papers are not."""
    text = agg.summary_markdown(tables)
    assert "| A | 0.562 [0.38, 0.75] † |" in text
    assert "| 0.500 † |" in text  # one paper: no interval shown, still marked
    assert text.rstrip().endswith("\n† interval over fewer than 5 papers")
    many = tables["scores_by_agent"].assign(n_papers=5, few_papers=False)
    plain = agg.summary_markdown({**tables, "scores_by_agent": many})
    assert "†" not in plain and "| A | 0.562 [0.38, 0.75] |" in plain
    empty = tables["scores_by_agent"].iloc[:0]
    assert "†" not in agg.summary_markdown({**tables, "scores_by_agent": empty})


def test_cli_discovers_runs(tmp_path: Path) -> None:
    root = build_tree(tmp_path / "r")
    assert sorted(agg.discover(root)[0]) == sorted(GRID)
    proc = subprocess.run(
        [sys.executable, "-m", "sabench.aggregate", "--results", str(root)],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Judge `static`" in proc.stdout
    assert (root / "tables" / "scores_by_agent.parquet").is_file()
    bad = subprocess.run(
        [sys.executable, "-m", "sabench.aggregate", "--results", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert bad.returncode == 0 and "No scores" in bad.stdout


def test_coverage_counts_the_runs_whose_score_is_withheld() -> None:
    """A run with more SAUs in error than judged has no score (scoring.run_scores); coverage says
    how many such runs each agent and judge has, so the missing score is explained."""
    from sabench import scoring

    judged = [("A", "P1", "0", f"s{i}", "D2", "aligned", 1.0) for i in range(2)]
    judged += [("A", "P1", "0", f"e{i}", "D2", "error", math.nan) for i in range(3)]
    judged += [
        ("A", "P2", "0", "s0", "D2", "aligned", 1.0),
        ("A", "P2", "0", "e0", "D2", "error", math.nan),
    ]
    frame = pd.DataFrame(
        judged, columns=["agent", "paper", "seed", "sau_id", "dimension", "verdict", "score"]
    ).assign(judge="exec", failure_mode=None)
    scores = scoring.run_scores(frame)
    runs = pd.DataFrame(
        {"agent": ["A", "A"], "paper": ["P1", "P2"], "seed": ["0", "0"], "execution_status": "ok"}
    )
    counts = pd.DataFrame(
        {"n_saus_judged": [3], "n_saus_error": [4], "n_saus_undetermined": [0]},
        index=pd.MultiIndex.from_tuples([("A", "exec")]),
    )
    cov = agg.coverage(runs, counts, ["exec"], scores=scores)
    assert (
        cov.loc[0, "n_runs_unscored"] == 1
    )  # P1 (2 judged, 3 errors); P2 (1 and 1) keeps its score
    withheld = scores[(scores["paper"] == "P1") & (scores["dimension"] == "overall")]
    assert withheld["score"].isna().all()


def _make_missing_source(root: Path, run: tuple[str, str, str], **config: object) -> None:
    """Turn a run into a replay whose source had no folder for the paper (its judges scored the
    empty submission 0, as they would)."""
    from sabench.aggregate.read import EMPTY_SUBMISSION

    agent, paper, seed = run
    folder = root / "runs" / agent / paper / seed
    record = json.loads((folder / "agent.json").read_text())
    record.update(
        status="missing_source",
        error=f"source folder not found: subs/{paper}",
        submission_hash=EMPTY_SUBMISSION,
        config={"kind": "replay", "path": "subs/{paper}", **config},
    )
    write_json(folder / "agent.json", record)
    frame = pd.read_parquet(folder / "judgments.parquet")
    frame["score"], frame["verdict"], frame["submission_hash"] = 0.0, "missing", EMPTY_SUBMISSION
    write_parquet(folder / "judgments.parquet", frame)


def test_a_run_never_run_is_not_called_a_fault(tmp_path: Path) -> None:
    """A run of the grid that no job made yet (a run narrowed to other papers, a stopped run) is
    `not_run`: summary.md says the plain command runs it, not "fix the cause"."""
    import shutil

    root = build_tree(tmp_path / "r")
    shutil.rmtree(root / "runs" / "A" / "P2" / "0")
    tables = agg.aggregate(root, GRID, list(PAPERS), root / "tables")
    gap = row(tables["incomplete_runs"], agent="A", paper="P2", seed="0")
    assert gap["cause"] == "not_run"
    text = agg.summary_markdown(tables)
    assert "1 has not been run yet (`not_run`)" in text, text
    assert "fix the cause" not in text


def test_a_missing_source_is_coverage_not_a_zero(tmp_path: Path) -> None:
    """A replay agent without a folder for a paper (a paper added later) is not scored 0 on it:
    the run is left out of every score, counted in coverage with its cause, and leaves no
    .incomplete marker (no rerun would redo it)."""
    root = build_tree(tmp_path / "r")
    before = agg.aggregate(root, GRID, list(PAPERS), root / "tables")
    a_before = row(before["scores_by_agent"], agent="A", dimension="overall")["score"]
    _make_missing_source(root, ("A", "P2", "0"))
    agg.write_tables(root, GRID, list(PAPERS))
    tables = agg.aggregate(root, GRID, list(PAPERS), root / "tables")
    assert not (root / "tables" / agg.INCOMPLETE_MARKER).exists()
    missing = row(tables["incomplete_runs"], agent="A", paper="P2", seed="0")
    assert (missing["stage"], missing["cause"]) == ("reproduce", "missing_source")
    assert "source folder not found" in missing["message"]
    cov = row(tables["coverage"], agent="A", judge="static")
    assert cov["incomplete_causes"] == "missing_source=1"
    assert cov["n_runs_complete"] == cov["n_runs"] - 1
    scored = tables["scores_by_run"]
    assert scored[(scored["agent"] == "A") & (scored["paper"] == "P2")].empty
    # the run is still a row of `runs`, with its status
    assert row(tables["runs"], agent="A", paper="P2", seed="0")["agent_status"] == "missing_source"
    a = row(tables["scores_by_agent"], agent="A", dimension="overall")
    assert a["n_papers"] == 1 and a["score"] != a_before
    # summary.md says what it is (nothing to redo), not "fix the cause and run again"
    text = agg.summary_markdown(tables)
    assert "1 of them do not exist" in text and "`papers:` list" in text
    assert "fix the cause" not in text
    # SA-Bench's convention, on request: the empty submission scores 0
    _make_missing_source(root, ("A", "P2", "0"), missing_source="zero")
    zero = agg.aggregate(root, GRID, list(PAPERS), root / "tables")
    assert zero["incomplete_runs"].empty
    assert row(zero["scores_by_agent"], agent="A", dimension="overall")["n_papers"] == 2


def test_a_score_over_papers_judged_under_two_settings_says_so(tmp_path: Path) -> None:
    """One paper rejudged with other settings (a one-paper run with --config judge_settings=...):
    agent A's static score averages P1 (new settings) and P2 (the old ones). Coverage names the
    papers and the settings each was judged with, summary.md says so in one line; agent B, whose
    papers share one setting, is not flagged."""
    root = build_tree(tmp_path / "r")
    for seed in ("0", "1"):
        folder = root / "runs" / "A" / "P1" / seed
        frame = pd.read_parquet(folder / "judgments.parquet")
        frame["judge_fingerprint"] = "static-v2"
        write_parquet(folder / "judgments.parquet", frame)
        write_parquet(
            folder / "judge" / "static.parquet",
            frame,
            judge_settings=json.dumps({"window": 5}),
        )
    summary = agg.write_tables(root, GRID, list(PAPERS))
    cov = pd.read_parquet(root / "tables" / "coverage.parquet")
    assert row(cov, agent="A", judge="static")["mixed_settings"] == (
        "P1 with {window: 5}; P2 with unrecorded settings (fingerprint static-v)"
    )
    assert row(cov, agent="B", judge="static")["mixed_settings"] == ""
    lines = [ln for ln in summary.splitlines() if "Mixed judge settings" in ln]
    assert len(lines) == 1 and "`static` of `A` (P1 with {window: 5}; P2 with" in lines[0]
    assert "`B`" not in lines[0]


def test_a_score_under_one_setting_says_nothing(tables: dict) -> None:
    assert (tables["coverage"]["mixed_settings"] == "").all()
    assert "Mixed judge settings" not in agg.summary_markdown(tables)


def test_the_line_after_failed_jobs_points_only_to_a_section_there_is(tmp_path: Path) -> None:
    from sabench.lifecycle import failed_tables_line

    root = build_tree(tmp_path / "r")
    complete = agg.write_tables(root, GRID, list(PAPERS))
    assert "Not complete" not in failed_tables_line(root / "tables", complete)
    (root / "runs" / "B" / "P2" / "0" / "judgments.parquet").unlink()
    partial = agg.write_tables(root, GRID, list(PAPERS))
    assert "see 'Not complete' in summary.md" in failed_tables_line(root / "tables", partial)
    assert agg.NOT_COMPLETE_HEADING in partial


def test_the_marker_stays_older_than_complete_tables(tmp_path: Path) -> None:
    """Once the tables are complete again the .incomplete marker stays, older than them: the
    aggregate rule's inputs (which Snakemake records) do not change, and nothing reruns."""
    root = build_tree(tmp_path / "r")
    marker = root / "tables" / agg.INCOMPLETE_MARKER
    judgments = root / "runs" / "B" / "P2" / "0" / "judgments.parquet"
    saved = judgments.read_bytes()
    judgments.unlink()
    agg.write_tables(root, GRID, list(PAPERS))
    summary = root / "tables" / "summary.md"
    assert marker.stat().st_mtime >= summary.stat().st_mtime  # newer: the next run redoes
    judgments.write_bytes(saved)
    agg.write_tables(root, GRID, list(PAPERS))
    tables = [root / "tables" / f"{name}.parquet" for name in agg.TABLES] + [summary]
    assert marker.is_file()
    assert marker.stat().st_mtime < min(p.stat().st_mtime for p in tables)


def test_agent_costs_sum_a_papers_seeds_and_count_the_gateway_calls() -> None:
    runs = pd.DataFrame(
        [
            {"agent": "gw", "paper": "p", "agent_status": "limit", "model_calls": 3,
             "prompt_tokens": 10, "completion_tokens": 5, "cost_usd": 0.5},
            {"agent": "gw", "paper": "p", "agent_status": "submitted", "model_calls": 1,
             "prompt_tokens": 4, "completion_tokens": 1, "cost_usd": 0.1},
            {"agent": "basic", "paper": "p", "agent_status": "submitted", "model_calls": None,
             "prompt_tokens": 7, "completion_tokens": 2, "cost_usd": None},
        ]
    )  # fmt: skip
    costs = agg.agent_costs(runs).set_index("agent")
    assert costs.loc["gw", "n_runs"] == 2 and costs.loc["gw", "n_runs_limit"] == 1
    assert costs.loc["gw", "model_calls"] == 4 and costs.loc["gw", "prompt_tokens"] == 14
    assert costs.loc["gw", "cost_usd"] == pytest.approx(0.6)
    assert costs.loc["gw", "cost_usd_per_run"] == pytest.approx(0.3)
    assert pd.isna(costs.loc["basic", "model_calls"]) and costs.loc["basic", "cost_usd"] == 0
