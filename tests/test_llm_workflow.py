"""The demo through snakemake with judges [static, "llm:<model>"] and LLM SAU extraction for a paper
without SAUs, the model being the scripted OpenAI-compatible server (no external API)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from openai_server import ScriptedServer, request_text
from test_llm_extract import extraction_responder

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
JUDGE = "llm:openai/scripted"
SECRET = "sk-workflow-SECRET-0123456789abcdef"
pytestmark = [pytest.mark.workflow, pytest.mark.bwrap]


def toy_judge(request: dict[str, Any]) -> dict[str, Any] | None:
    """A stand-in model that reads the prompt: D1 claims are aligned when every number of the
    claim is on a shown line, else drifted; other claims are aligned when code was shown, else
    missing. It cites the first excerpt."""
    text = request_text(request)
    m = re.search(r"^Claim (\S+) \((D\d), [^)]*\):\n(.+)$", text, re.M)
    if not m:
        return None
    dim, claim = m.group(2), m.group(3)
    code = "\n".join(re.findall(r"^\d+\t(.*)$", text, re.M))
    head = re.search(r"^### (\S+) \(lines (\d+)-(\d+)\)", text, re.M)
    evidence = [{"file": head[1], "start": int(head[2]), "end": int(head[2])}] if head else []
    if not code:
        verdict, score, mode = "missing", 0, "omission"
    elif dim == "D1":
        numbers = re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.]*\d)", claim)
        found = all(re.search(rf"(?<![\w.]){re.escape(n)}(?![\d])", code) for n in numbers)
        verdict, score, mode = ("aligned", 1, None) if found else ("drifted", 0, None)
    else:
        verdict, score, mode = "aligned", 1, None
    answer = {
        "reasoning": f"toy: {verdict}",
        "evidence": evidence,
        "verdict": verdict,
        "score": score,
        "failure_mode": mode,
    }
    return {"json": answer}


def snakemake(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SNAKEMAKE")}
    env["SABENCH_WORKFLOW_KEY"] = SECRET
    proc = subprocess.run(
        [SNAKEMAKE, "--cores", "2", *args], cwd=REPO, capture_output=True, text=True, env=env
    )
    if check and proc.returncode != 0:
        pytest.fail(
            f"snakemake {' '.join(args)} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        )
    return proc


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer([extraction_responder, toy_judge]) as s:
        yield s


@pytest.fixture(scope="module")
def grid(server: ScriptedServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("llm-demo")
    papers = root / "papers"
    shutil.copytree(REPO / "resources" / "papers", papers)
    (papers / "ridge-gd-llm").mkdir()  # the paper alone: its SAUs are extracted
    shutil.copy(REPO / "resources/papers/ridge-gd/paper.md", papers / "ridge-gd-llm/paper.md")
    config = {
        "results": str(root / "results"),
        "papers_dir": str(papers),
        "judges": ["static", JUDGE],
        "judge_settings": {
            JUDGE: {
                "api_base": server.url,
                "api_key_env": "SABENCH_WORKFLOW_KEY",
                "cache_dir": str(root / "cache"),
                "prices": {"input_per_mtok": 1.0, "output_per_mtok": 4.0},
                "backoff_s": 0.01,
            }
        },
        "saus_extraction": {"extractor": JUDGE, "chunk_chars": 2000},
    }
    (root / "llm.yaml").write_text(yaml.safe_dump(config))
    dry = snakemake("-n", "--configfile", str(root / "llm.yaml"))
    assert "saus_extract" in dry.stdout and "judge" in dry.stdout
    snakemake("--configfile", str(root / "llm.yaml"))
    return {"root": root, "results": root / "results", "config": root / "llm.yaml"}


def test_llm_judge_rows_for_every_run_and_sau(
    grid: dict[str, Path], server: ScriptedServer
) -> None:
    results = grid["results"]
    judgments = pd.read_parquet(results / "tables" / "judgments.parquet")
    saus = pd.read_parquet(results / "tables" / "saus.parquet")
    runs = pd.read_parquet(results / "tables" / "runs.parquet")
    llm = judgments[judgments.judge == JUDGE]
    static = judgments[judgments.judge == "static"]
    # every SAU of every run that exists: an agent with no source for a paper (the replay agents
    # have no ridge-gd-llm folder) has no run to judge, which coverage counts instead of a score
    absent = runs[runs.agent_status == "missing_source"]
    assert sorted(absent.agent) == ["drifted", "reference"] and set(absent.paper) == {
        "ridge-gd-llm"
    }
    judged = runs[runs.agent_status != "missing_source"]
    assert len(llm) == len(static) == sum((saus.paper == p).sum() for p in judged.paper)
    assert not set(zip(llm.agent, llm.paper, strict=True)) & set(
        zip(absent.agent, absent.paper, strict=True)
    )
    assert (REPO / "results").resolve() not in {p.resolve() for p in results.parents}
    assert list((results / "runs" / "drifted" / "ridge-gd" / "0" / "judge").glob("*.parquet"))
    assert (
        results / "runs" / "drifted" / "ridge-gd" / "0" / "judge" / "llm-openai_scripted.parquet"
    ).is_file()
    assert set(llm.verdict) <= {"aligned", "drifted", "missing"}
    called = llm[llm.prompt_tokens > 0]
    assert len(called) > 0 and (called.cost_usd > 0).all()
    assert (llm[llm.agent == "null"].verdict == "missing").all()
    one = llm.set_index(["agent", "paper", "sau_id"])
    assert one.loc[("drifted", "ridge-gd", "ridge-gd-D1-001"), "verdict"] == "drifted"
    assert one.loc[("reference", "ridge-gd", "ridge-gd-D1-001"), "verdict"] == "aligned"
    for row in called.itertuples():
        sub = results / "runs" / row.agent / row.paper / "0" / "submission"
        for ev in row.evidence:
            n = len((sub / ev["file"]).read_text().splitlines())
            assert 1 <= ev["start"] <= ev["end"] <= n
    scores = pd.read_parquet(results / "tables" / "scores_by_agent.parquet")
    overall = scores[(scores.judge == JUDGE) & (scores.dimension == "overall")].set_index("agent")
    assert overall.loc["null", "score"] == 0.0
    assert overall.loc["reference", "score"] > overall.loc["null", "score"]
    # the key was sent, and is nowhere in the results, logs or cache
    assert any(r["headers"].get("authorization") == f"Bearer {SECRET}" for r in server.requests)
    for path in [*results.rglob("*"), *(grid["root"] / "cache").rglob("*")]:
        if path.is_file() and path.stat().st_size < 5_000_000:
            assert SECRET.encode() not in path.read_bytes(), path


def test_extracted_saus_are_grounded(grid: dict[str, Path]) -> None:
    frame = pd.read_parquet(grid["results"] / "papers" / "ridge-gd-llm" / "saus.parquet")
    assert len(frame) >= 4 and frame["grounded"].all()
    assert (frame["origin"] == JUDGE).all()
    assert set(frame["dimension"]) == {"D1", "D2", "D3", "D4"}
    assert frame["sau_id"].str.match(r"ridge-gd-llm-D\d-\d{3}$").all()
    log = (grid["results"] / "logs" / "saus" / "ridge-gd-llm.log").read_text()
    assert "ungrounded" in log and "about cited work" in log
    curated = pd.read_parquet(grid["results"] / "papers" / "ridge-gd" / "saus.parquet")
    assert (curated["origin"] == "curated").all()


def test_a_new_endpoint_reruns_nothing_a_new_temperature_reruns_the_judge(
    grid: dict[str, Path],
) -> None:
    """api_base, concurrency and the like say how to reach the model, not what it is asked."""
    config = yaml.safe_load(grid["config"].read_text())
    moved = grid["root"] / "moved.yaml"
    config["judge_settings"][JUDGE].update(
        api_base="http://127.0.0.1:9/v1", concurrency=7, timeout_s=5
    )
    moved.write_text(yaml.safe_dump(config))
    proc = snakemake("-n", "--configfile", str(moved))
    assert "Nothing to be done" in proc.stdout + proc.stderr, proc.stdout[-3000:]
    config["judge_settings"][JUDGE]["temperature"] = 0.5
    moved.write_text(yaml.safe_dump(config))
    proc = snakemake("-n", "--configfile", str(moved))
    planned = set(re.findall(r"^\s*(?:local)?rule (\w+):", proc.stdout + proc.stderr, re.M))
    assert "judge" in planned and "saus_extract" in planned and "execute" not in planned


def test_rerun_makes_zero_requests(grid: dict[str, Path], server: ScriptedServer) -> None:
    proc = snakemake("-n", "--configfile", str(grid["config"]))
    assert "Nothing to be done" in proc.stdout + proc.stderr
    before_n = server.count
    tables = grid["results"] / "tables" / "judgments.parquet"
    before = pd.read_parquet(tables)
    proc = snakemake("--configfile", str(grid["config"]), "--forcerun", "judge", "saus_extract")
    ran = re.findall(r"^(?:local)?rule (\w+):", proc.stdout + proc.stderr, re.M)
    assert "judge" in ran and "saus_extract" in ran
    assert server.count == before_n, "a forced rerun must be answered by the cache"
    after = pd.read_parquet(tables)
    key = ["agent", "paper", "seed", "judge", "sau_id"]
    before = before.sort_values(key).reset_index(drop=True)
    after = after.sort_values(key).reset_index(drop=True)
    assert after[after.judge == JUDGE].query("prompt_tokens > 0")["cached"].all()
    pd.testing.assert_frame_equal(
        before.drop(columns=["cached", "latency_s"]), after.drop(columns=["cached", "latency_s"])
    )


def test_the_grid_budget_ends_jobs_and_a_higher_one_continues(
    grid: dict[str, Path], server: ScriptedServer
) -> None:
    """llm_budget_usd caps every LLM request of the grid: the judge job that meets it fails with a
    one-line error; after raising it, the rerun pays only for what was not answered before."""
    root = grid["root"] / "budget"
    config = yaml.safe_load(grid["config"].read_text())
    config.update(
        results=str(root / "results"),
        papers=["ridge-gd"],
        agents=["reference"],
        judges=[JUDGE],
        runtime={"execute": False},
        llm_budget_usd=1e-9,  # the first request passes; it pays for more than that
    )
    config["judge_settings"][JUDGE].update(temperature=0.3, concurrency=1)  # nothing cached
    path = root / "budget.yaml"
    root.mkdir()
    path.write_text(yaml.safe_dump(config))
    before = server.count
    proc = snakemake("--configfile", str(path), check=False)
    assert proc.returncode != 0
    ledger = root / "results" / "logs" / "llm_spend.jsonl"
    assert len(ledger.read_text().splitlines()) == server.count - before == 1
    log = next((root / "results" / "runs").rglob("judge-llm*.log")).read_text()
    assert "llm_budget_usd" in log and "is spent" in log and SECRET not in log
    config["llm_budget_usd"] = 100.0
    path.write_text(yaml.safe_dump(config))
    snakemake("--configfile", str(path))
    judgments = pd.read_parquet(root / "results" / "tables" / "judgments.parquet")
    assert len(judgments) and not (judgments.verdict == "error").any()
    assert judgments.cached.sum() == 1, "the answer paid for before the cap comes from the cache"
    assert server.count - before == len(judgments)
    assert len(ledger.read_text().splitlines()) == len(judgments)
