"""The whole chain through snakemake on the bundled demo: tables, manifests, reruns, targets, errors."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from sabench.grid import load_settings

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
pytestmark = [pytest.mark.workflow, pytest.mark.bwrap]


def snakemake(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SNAKEMAKE")}
    proc = subprocess.run(
        [SNAKEMAKE, "--cores", "2", *args], cwd=REPO, capture_output=True, text=True, env=env
    )
    if check and proc.returncode != 0:
        pytest.fail(
            f"snakemake {' '.join(args)} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        )
    return proc


def manifests() -> list[tuple[str, str, str, dict]]:
    """Manifest verdicts of the SAUs the static judge decides; a ``static:`` entry overrides the
    verdict where the run's trace changes it (code a failed run never reached is at most partial)."""
    rows = []
    for path in sorted((REPO / "resources" / "manifests").glob("*/*.yaml")):
        data = yaml.safe_load(path.read_text())
        for sau_id, expected in data["expected"].items():
            if expected.get("needs_execution"):
                continue  # decided by running the code (the exec judge), not by reading it
            rows.append((path.parent.name, data["paper"], sau_id, expected.get("static", expected)))
    return rows


def exec_manifests() -> list[tuple[str, str, str, dict]]:
    """Manifest verdicts of the SAUs the exec judge decides (a check or an expected result); an
    ``exec:`` entry overrides the verdict where running the code sees it differently."""
    rows = []
    for path in sorted((REPO / "resources" / "manifests").glob("*/*.yaml")):
        data = yaml.safe_load(path.read_text())
        saus = yaml.safe_load(
            (REPO / "resources" / "papers" / data["paper"] / "saus.yaml").read_text()
        )["saus"]
        executable = {
            s["id"] for s in saus if s.get("check") or s.get("check_file") or s.get("expected")
        }
        for sau_id, entry in data["expected"].items():
            if sau_id in executable:
                rows.append((path.parent.name, data["paper"], sau_id, entry.get("exec", entry)))
    return rows


@pytest.fixture(scope="module", autouse=True)
def exec_cache(tmp_path_factory: pytest.TempPathFactory):
    """A fresh check cache, so that the demo really runs every check in its sandbox."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SABENCH_EXEC_CACHE", str(tmp_path_factory.mktemp("exec-cache")))
        yield


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("demo") / "results"
    dry = snakemake("-n", "--quiet", "rules", "--config", f"results={results}")
    settings = load_settings(yaml.safe_load((REPO / "config" / "config.yaml").read_text()), REPO)
    per_rule = dict(re.findall(r"^(\w+)\s+(\d+)$", dry.stdout, re.MULTILINE))
    n_papers, n_runs = len(settings.papers), len(settings.runs)
    # a job per run for each step: with executions, no step is batched (docs/architecture.md);
    # the merge into each run's judgments.parquet takes one job per paper
    assert per_rule == {
        "ingest": str(n_papers),
        "saus": str(n_papers),
        "reproduce": str(n_runs),
        "execute": str(n_runs),
        "judge": str(n_runs * len(settings.judges)),
        "judgments": str(n_papers),
        "aggregate": "1",
        "report": "1",
        "all": "1",
        "total": str(3 * n_papers + n_runs * (2 + len(settings.judges)) + 3),
    }, "the dry run must list every job of the grid before anything has run"
    snakemake("--config", f"results={results}")
    return results


@pytest.fixture(scope="module")
def judgments(demo: Path) -> pd.DataFrame:
    return pd.read_parquet(demo / "tables" / "judgments.parquet")


def test_scores_by_agent(demo: Path) -> None:
    scores = pd.read_parquet(demo / "tables" / "scores_by_agent.parquet")
    assert list(scores.columns) == [
        "agent",
        "judge",
        "dimension",
        "score",
        "ci_low",
        "ci_high",
        "n_papers",
        "few_papers",
    ]
    overall = scores[(scores.judge == "static") & (scores.dimension == "overall")].set_index(
        "agent"
    )
    assert overall.loc["reference", "score"] >= 0.9
    assert overall.loc["drifted", "score"] <= overall.loc["reference", "score"] - 0.2
    assert overall.loc["null", "score"] == 0.0
    assert set(scores.dimension) == {"overall", "D1", "D2", "D3", "D4"}
    assert (demo / "report" / "index.html").is_file()
    for name in ("scores_by_agent", "verdicts", "heatmap"):
        assert (demo / "report" / f"{name}.png").read_bytes()[:4] == b"\x89PNG"


def test_report_reaches_a_planted_drift_in_two_clicks(demo: Path) -> None:
    """Summary -> the matrix's drifted x ridge-gd cell -> the run's "not aligned" link: the
    planted learning rate (config.json:4, resources/manifests/drifted/) beside the paper's text."""
    report = demo / "report"
    summary = (report / "index.html").read_text(encoding="utf-8")
    assert 'class="run-link" href="site/runs/drifted/ridge-gd/0.html"' in summary
    page = (report / "site" / "runs" / "drifted" / "ridge-gd" / "0.html").read_text(
        encoding="utf-8"
    )
    assert '<li><a href="#sau-ridge-gd-D1-001">ridge-gd-D1-001</a>' in page
    sau = page[page.index('id="sau-ridge-gd-D1-001"') :].split("</section>")[0]
    assert "<mark>Learning rate 0.05" in sau and "<code>config.json:4</code>" in sau
    assert re.search(r'<span class="hit"><span class="ln">4</span>.*learning_rate.*0\.005', sau)


def test_executions_recorded(demo: Path) -> None:
    runs = pd.read_parquet(demo / "tables" / "runs.parquet").set_index(["agent", "paper"])
    assert (runs.xs("reference", level="agent")["execution_status"] == "ok").all()
    assert (runs.xs("null", level="agent")["execution_status"] == "no_reproduce_script").all()


@pytest.mark.parametrize(
    ("agent", "paper", "sau_id", "expected"),
    manifests(),
    ids=[f"{a}-{s}" for a, _, s, _ in manifests()],
)
def test_static_verdict_matches_manifest(
    judgments: pd.DataFrame, agent: str, paper: str, sau_id: str, expected: dict
) -> None:
    row = judgments[
        (judgments.agent == agent)
        & (judgments.paper == paper)
        & (judgments.sau_id == sau_id)
        & (judgments.judge == "static")
    ]
    assert len(row) == 1, f"{agent}/{paper}/{sau_id}: no static judgment"
    got = row.iloc[0]
    assert got.verdict == expected["verdict"], f"{sau_id}: {got.reasoning}"
    if "failure_mode" in expected:
        assert got.failure_mode == expected["failure_mode"]


@pytest.mark.parametrize(
    ("agent", "paper", "sau_id", "expected"),
    exec_manifests(),
    ids=[f"{a}-{s}" for a, _, s, _ in exec_manifests()],
)
def test_exec_verdict_matches_manifest(
    judgments: pd.DataFrame, agent: str, paper: str, sau_id: str, expected: dict
) -> None:
    row = judgments[
        (judgments.agent == agent)
        & (judgments.paper == paper)
        & (judgments.sau_id == sau_id)
        & (judgments.judge == "exec")
    ]
    assert len(row) == 1, f"{agent}/{paper}/{sau_id}: no exec judgment"
    got = row.iloc[0]
    assert got.verdict == expected["verdict"], f"{sau_id}: {got.reasoning}"
    mode = got.failure_mode if isinstance(got.failure_mode, str) else None  # NaN when none
    assert mode == expected.get("failure_mode"), f"{sau_id}: {got.reasoning}"


def test_exec_judges_only_executable_saus(judgments: pd.DataFrame, demo: Path) -> None:
    executable = {(a, p, s) for a, p, s, _ in exec_manifests()}
    rows = judgments[(judgments.judge == "exec") & judgments.agent.isin(["reference", "drifted"])]
    assert set(zip(rows.agent, rows.paper, rows.sau_id, strict=True)) == executable
    null = judgments[(judgments.judge == "exec") & (judgments.agent == "null")]
    assert set(null.verdict) == {"missing"}, "an empty submission has nothing to run"
    coverage = pd.read_parquet(demo / "tables" / "coverage.parquet")
    assert "exec" in set(coverage.judge)


def test_exec_settings_rerun_only_exec(demo: Path) -> None:
    settings = load_settings(yaml.safe_load((REPO / "config" / "config.yaml").read_text()), REPO)
    proc = snakemake(
        "-n",
        "--quiet",
        "rules",
        "--config",
        f"results={demo}",
        'judge_settings={"exec": {"time_limit_s": 30}}',
    )
    per_rule = dict(re.findall(r"^(\w+)\s+(\d+)$", proc.stdout, re.MULTILINE))
    n_runs = len(settings.runs)
    assert per_rule["judge"] == str(n_runs), "only the exec judge of every run reruns"
    assert not {"ingest", "saus", "reproduce", "execute"} & set(per_rule), per_rule


def test_a_gpu_agent_executes_on_its_gpus(demo: Path, tmp_path: Path) -> None:
    """The execute job asks the scheduler for the agent's GPUs and its sandbox gets them."""
    agents = yaml.safe_load((REPO / "config" / "agents.yaml").read_text())
    agents["reference"]["gpus"] = 2
    (tmp_path / "agents.yaml").write_text(yaml.safe_dump(agents))
    proc = snakemake(
        "-n", "-p", "--config", f"results={demo}", f"agents_file={tmp_path / 'agents.yaml'}"
    )
    blocks = re.split(r"\n(?=\s*\[.*\]\n\s*(?:local)?rule \w+:)", proc.stdout)
    executes = [b for b in blocks if re.search(r"^\s*rule execute:", b, re.MULTILINE)]
    assert executes and all("agent=reference" in b for b in executes), "only reference reruns"
    for block in executes:
        assert re.search(r"resources: .*\bgpu=2\b", block), block
        assert '"gpus": 2' in block, block


def test_second_run_does_nothing(demo: Path) -> None:
    proc = snakemake("-n", "--config", f"results={demo}")
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_one_paper_reruns_alone(demo: Path) -> None:
    paper = sorted(p.name for p in (REPO / "resources" / "papers").iterdir())[0]
    target = demo / "runs" / "reference" / paper / "0" / "judgments.parquet"
    before = pd.read_parquet(target)
    proc = snakemake(str(target), "--forcerun", "judge", "--config", f"results={demo}")
    log = proc.stdout + proc.stderr
    ran = re.findall(r"^(?:local)?rule (\w+):", log, re.MULTILINE)
    # the merge is one job per paper: it needs the paper's every run judged
    n_runs = len(list((demo / "runs").glob(f"*/{paper}/*")))
    n_judges = len(set(before.judge))
    assert sorted(ran) == ["judge"] * (n_runs * n_judges) + ["judgments"], ran
    assert set(re.findall(r"paper=([\w.-]+)", log)) == {paper}
    after = pd.read_parquet(target)
    # the exec judge's checks now come from its cache: the same verdicts, marked cached
    exec_rows = after[(after.judge == "exec") & after.reasoning.str.startswith("check ")]
    assert len(exec_rows) and exec_rows.cached.all()
    pd.testing.assert_frame_equal(
        before.drop(columns=["latency_s", "cached"]), after.drop(columns=["latency_s", "cached"])
    )


def test_changing_one_agent_rejudges_only_its_runs(tmp_path: Path) -> None:
    """Without executions, replays and the static judge take one job per paper. New settings of
    one agent: the paper's replay and judge jobs rerun, and only that agent's run is judged again
    (the others' judgments come from their cache)."""
    results = tmp_path / "results"
    grid = ("--config", f"results={results}", "papers=ridge-gd", "runtime={execute: false}")
    grid += ("judges=[static]",)
    snakemake(*grid)
    before = pd.read_parquet(results / "tables" / "judgments.parquet")
    agents = yaml.safe_load((REPO / "config" / "agents.yaml").read_text())
    agents["drifted"]["description"] = "the same submissions, described anew"
    (tmp_path / "agents.yaml").write_text(yaml.safe_dump(agents))
    log = snakemake(*grid, f"agents_file={tmp_path / 'agents.yaml'}")
    ran = re.findall(r"^(?:local)?rule (\w+):", log.stdout + log.stderr, re.M)
    assert sorted(ran) == ["aggregate", "all", "judge_batch", "replay", "report"], ran
    page = (results / "report" / "site" / "agents" / "drifted.html").read_text()
    assert "the same submissions, described anew" in page  # the configured agents file's
    batch_log = (results / "logs" / "judge" / "ridge-gd.log").read_text()
    outcome = dict(re.findall(r"/(\w+)/ridge-gd/0: static: (\w+)", batch_log))
    assert outcome == {"reference": "cached", "drifted": "judged", "null": "cached"}, batch_log
    after = pd.read_parquet(results / "tables" / "judgments.parquet")
    keys = ["agent", "judge", "sau_id"]
    pd.testing.assert_frame_equal(
        before.drop(columns=["latency_s"]).sort_values(keys).reset_index(drop=True),
        after.drop(columns=["latency_s"]).sort_values(keys).reset_index(drop=True),
    )


def test_narrowing_the_grid_does_not_redo_a_scoped_agents_runs(tmp_path: Path) -> None:
    """An agent scoped to one paper (`papers:`) runs under the same rule whether the command
    line narrows the grid to that paper or not: the whole grid after a one-paper run has nothing
    to redo for it (was: replayed per paper when narrowed, per run otherwise, each switch a
    params change)."""
    results = tmp_path / "results"
    agents = yaml.safe_load((REPO / "config" / "agents.yaml").read_text())
    agents["reference"]["papers"] = ["ridge-gd"]
    (tmp_path / "agents.yaml").write_text(yaml.safe_dump(agents))
    grid = ("--config", f"results={results}", f"agents_file={tmp_path / 'agents.yaml'}")
    grid += ("runtime={execute: false}", "judges=[static]")
    snakemake(*grid, "papers=ridge-gd")
    dry = snakemake("-n", *grid).stdout
    outputs = [ln for ln in dry.splitlines() if ln.strip().startswith("output:")]
    redone = [ln for ln in outputs if "runs/reference/ridge-gd/" in ln]
    assert outputs and not redone, redone


#: What a run is: its agent's submission, its execution, its judgments. The merge into a run's
#: judgments.parquet (one job per paper), the tables and the report may be made again when a
#: command line narrows the grid or stops narrowing it: their set of inputs differs, a rerun
#: trigger that Snakemake also needs to see the runs a whole grid adds.
RUN_RULES = {"reproduce", "replay", "execute", "judge", "judge_batch"}


def run_jobs(log: str) -> list[tuple[str, str]]:
    """(rule, wildcards) of every job of RUN_RULES a snakemake log or dry run lists."""
    jobs = re.findall(r"^\s*(?:local)?rule (\w+):\n(?:\s+\w+:.*\n)*?\s+wildcards: (.*)$", log, re.M)
    return [(rule, wildcards) for rule, wildcards in jobs if rule in RUN_RULES]


def test_narrowed_then_whole_grid_redoes_no_run(tmp_path: Path) -> None:
    """`--config agents=A papers=P`, then the plain command: the whole grid makes the other runs
    and does not replay, execute or judge A's run again (a lone agent's path template used to be
    recorded with {paper} filled in, the grid's without); then neither command redoes a run."""
    results = tmp_path / "results"
    configfile = tmp_path / "config.yaml"
    configfile.write_text(yaml.safe_dump({"results": str(results), "papers": ["ridge-gd"]}))
    whole = ("--configfile", str(configfile))
    narrowed = (*whole, "--config", "agents=reference", "papers=ridge-gd")
    snakemake(*narrowed)
    log = snakemake(*whole)
    jobs = run_jobs(log.stdout + log.stderr)
    assert ("execute", "agent=drifted, paper=ridge-gd, seed=0") in jobs, jobs
    assert not [j for j in jobs if "agent=reference" in j[1]], jobs
    for args in (narrowed, whole):
        dry = snakemake("-n", *args)
        assert not run_jobs(dry.stdout), dry.stdout[-3000:]
    # the narrowed run left the rest of the grid to it, not a marker for its tables to make
    # again: with nothing changed, the whole grid has nothing to do
    assert "Nothing to be done" in dry.stdout + dry.stderr, dry.stdout[-3000:]


def test_whole_grid_then_narrowed_redoes_no_run(demo: Path) -> None:
    """After the whole grid, a run narrowed to one agent and one paper redoes none of its runs
    (recorded under the same settings either way)."""
    paper = sorted(p.name for p in (REPO / "resources" / "papers").iterdir())[0]
    dry = snakemake("-n", "--config", f"results={demo}", "agents=reference", f"papers={paper}")
    assert not run_jobs(dry.stdout), dry.stdout[-3000:]


def test_a_one_paper_run_updates_the_grids_tables(demo: Path) -> None:
    """``--config papers=P`` reruns P's jobs only; the tables still cover every paper of the grid."""
    before = pd.read_parquet(demo / "tables" / "scores_by_run.parquet")
    paper = sorted(before["paper"].unique())[0]
    proc = snakemake("--config", f"results={demo}", f"papers={paper}", "--forcerun", "judge")
    log = proc.stdout + proc.stderr
    assert {"judge", "aggregate", "report"} <= set(re.findall(r"^(?:local)?rule (\w+):", log, re.M))
    assert set(re.findall(r"paper=([\w.-]+)", log)) == {paper}, "only that paper's jobs run"
    after = pd.read_parquet(demo / "tables" / "scores_by_run.parquet")
    assert set(after["paper"]) == set(before["paper"]) and len(after) == len(before)
    assert pd.read_parquet(demo / "tables" / "incomplete_runs.parquet").empty
    # back to the whole grid: nothing to redo, only the tables of its (other) set of inputs
    dry = snakemake("-n", "--config", f"results={demo}").stdout
    assert set(re.findall(r"^\s*(?:local)?rule (\w+):", dry, re.M)) <= {
        "aggregate",
        "report",
        "all",
    }


def test_snakemake_report(demo: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    snakemake("--report", str(out), "--config", f"results={demo}")
    html = out.read_text(errors="replace")
    assert "scores_by_agent.png" in html and "heatmap.png" in html
    assert "index.html" in html and "Explorer" in html  # the report's summary page


def test_config_error_is_one_line(tmp_path: Path) -> None:
    proc = snakemake("-n", "--config", "papers=../etc", f"results={tmp_path}", check=False)
    assert proc.returncode != 0
    errors = [
        line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("error:")
    ]
    assert errors == [
        "error: config (config/config.yaml + --config): papers: '../etc' is not a valid id "
        "(letters, digits, '.', '-', '_'; no path separators or '..')"
    ]
    assert "Traceback" not in proc.stderr


def test_bad_paper_fails_alone_with_one_line(tmp_path: Path) -> None:
    import shutil

    papers = tmp_path / "papers"
    shutil.copytree(REPO / "resources" / "papers" / "ridge-gd", papers / "ridge-gd")
    shutil.copytree(REPO / "resources" / "papers" / "ridge-gd", papers / "broken")
    saus = papers / "broken" / "saus.yaml"
    text = saus.read_text().replace("paper: ridge-gd", "paper: broken")
    saus.write_text(text.replace("ridge-gd-D1-002", "ridge-gd-D1-001"))
    results = tmp_path / "results"
    proc = snakemake(
        "--config", f"papers_dir={papers}", f"results={results}", "agents=reference", check=False
    )
    assert proc.returncode != 0
    log = proc.stdout + proc.stderr
    assert f"error: {saus}: id: duplicate SAU id 'ridge-gd-D1-001'" in log
    assert "Traceback" not in log
    good = results / "runs" / "reference" / "ridge-gd" / "0" / "judgments.parquet"
    assert good.is_file(), "the other paper's work must go on and be kept"
    # and it is tabulated: the broken paper costs that paper only, and is named
    scores = pd.read_parquet(results / "tables" / "scores_by_run.parquet")
    assert set(scores["paper"]) == {"ridge-gd"}
    incomplete = pd.read_parquet(results / "tables" / "incomplete_runs.parquet")
    broken = incomplete[incomplete.paper == "broken"]
    assert set(broken.stage) == {"saus"} and set(broken.cause) == {"failed"}
    assert "duplicate SAU id" in broken["message"].iloc[0]
    # agents=reference narrowed this run, not the grid: the other agents' runs are not run yet
    others = incomplete[incomplete.paper != "broken"]
    assert set(others.agent) == {"drifted", "null"} and set(others.cause) == {"not_run"}
    summary = (results / "tables" / "summary.md").read_text()
    assert "`reference/broken/0` saus: failed" in summary
    assert (results / "report" / "index.html").is_file()


def test_lint_is_clean() -> None:
    proc = snakemake("--lint", check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
