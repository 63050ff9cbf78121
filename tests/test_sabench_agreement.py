"""benchmarks/sabench_agreement.py as a user runs it, on a folder shaped like SA-Bench's data (the
demo paper ridge-gd as one run, its reference submission as the code, scores set here as the
reference verdicts): any judge, the cost line before any request, --max-usd, faults counted apart."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from openai_server import ScriptedServer, judge_settings
from sabench_layout import write_sabench_layout

from sabench.judges.static import judge_static
from sabench.saus import import_sabench
from sabench.stats import agreement_metrics

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "benchmarks" / "sabench_agreement.py"
PAPER = "ridge-gd"
F = r"(?:[01]\.\d{3}|-?0\.\d{3}|nan)"
LINE = re.compile(
    rf"^agreement: judge=(\S+) n=(\d+) kappa=({F}) exact=({F}) mae=({F}) faults=(\d+) errors=(\d+)"
    r" undetermined=(\d+)$"
)
COST = re.compile(r"^cost: judge=llm:openai/scripted calls=(\d+) est_usd=(\d+\.\d{4})$")
LLM = "llm:openai/scripted"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """saus/, runs/demo.tar.gz and reference/demo/, as SA-Bench lays them out; the reference
    scores every second SAU 1 and the others 0."""
    return write_sabench_layout(
        tmp_path_factory.mktemp("sabench-data"),
        PAPER,
        REPO / "resources" / "submissions" / "reference" / PAPER,
    )


def agreement(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, str(SCRIPT), "--data", str(data), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=REPO)


def summary(done: subprocess.CompletedProcess[str], judge: str) -> dict[str, str]:
    lines = [m for ln in done.stdout.splitlines() if (m := LINE.match(ln)) and m[1] == judge]
    assert len(lines) == 1, done.stdout + done.stderr
    keys = ("judge", "n", "kappa", "exact", "mae", "faults", "errors", "undetermined")
    return dict(zip(keys, lines[0].groups(), strict=True))


def llm_settings(server: ScriptedServer, tmp_path: Path, **extra: Any) -> str:
    return json.dumps({LLM: judge_settings(server, tmp_path, **extra)})


def aligned(request: dict[str, Any]) -> dict[str, Any]:
    return {"json": {"reasoning": "ok", "evidence": [], "verdict": "aligned", "score": 1}}


def test_static_judge_figures_are_those_of_its_judgments(data: Path) -> None:
    done = agreement(data)
    assert done.returncode == 0, done.stderr
    assert LINE.match(done.stdout.strip().splitlines()[-1]), done.stdout
    got = summary(done, "static")
    saus = import_sabench(data / "saus" / f"{PAPER}.json", PAPER)
    sub = REPO / "resources" / "submissions" / "reference" / PAPER
    scores = {j.sau_id: j.score for j in judge_static(sub, saus)}
    refs = [float(i % 2 == 0) for i in range(len(saus))]
    m = agreement_metrics([scores[s["sau_id"]] for s in saus], refs)
    assert int(got["n"]) == len(saus) == 21
    assert float(got["exact"]) == round(m["exact_agreement"], 3)
    assert float(got["mae"]) == round(m["mae"], 3)
    assert (got["faults"], got["errors"]) == ("0", "0")


def test_llm_judge_cost_first_then_refused_above_max_usd(data: Path, tmp_path: Path) -> None:
    with ScriptedServer([aligned]) as server:
        settings = llm_settings(server, tmp_path)
        done = agreement(data, "--judge", LLM, "--settings", settings, "--max-usd", "0.000001")
        assert server.count == 0  # refused before any request
    assert done.returncode == 2, done.stdout + done.stderr
    cost = COST.match(done.stdout.splitlines()[0])
    assert cost and int(cost[1]) == 21 and float(cost[2]) > 0, done.stdout
    assert done.stderr.strip().splitlines() == [
        f"error: estimated LLM cost ${float(cost[2]):.4f} is over --max-usd $1e-06: nothing sent"
    ]


def test_llm_judge_agreement_and_a_rerun_from_the_cache(data: Path, tmp_path: Path) -> None:
    """The model says aligned (1) everywhere: exact agreement is the share of reference 1s."""
    with ScriptedServer([aligned]) as server:
        settings = llm_settings(server, tmp_path, samples=2)
        done = agreement(data, "--judge", f"static,{LLM}", "--settings", settings)
        first = server.count
        again = agreement(data, "--judge", LLM, "--settings", settings)
        assert server.count == first  # every answer came from the cache
    assert done.returncode == 0, done.stderr
    cost = COST.match(next(ln for ln in done.stdout.splitlines() if ln.startswith("cost:")))
    assert cost and int(cost[1]) == 42 == first  # 21 SAUs asked twice each
    got = summary(done, LLM)
    assert (got["n"], got["exact"], got["mae"], got["faults"]) == ("21", "0.524", "0.476", "0")
    assert summary(done, "static")["n"] == "21"
    assert summary(again, LLM) == got


def test_max_usd_caps_what_the_measurement_spends(data: Path, tmp_path: Path) -> None:
    """Under the estimate's cap it starts; replies dearer than estimated ($10 each) hit the cap."""

    def dear(request: dict[str, Any]) -> dict[str, Any]:
        return {**aligned(request), "usage": {"prompt_tokens": 10_000_000, "completion_tokens": 1}}

    with ScriptedServer([dear]) as server:
        settings = llm_settings(server, tmp_path)
        done = agreement(data, "--judge", LLM, "--settings", settings, "--max-usd", "25")
        sent = server.count
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(f"error: judge {LLM}: ") and "budget" in done.stderr
    assert 0 < sent < 21  # stopped at the cap, not after every SAU
    assert not [ln for ln in done.stdout.splitlines() if ln.startswith("agreement:")]


def test_a_provider_fault_is_counted_not_scored_and_redone(data: Path, tmp_path: Path) -> None:
    failing = [{"replies": [{"status": 500, "error": "upstream down"}]}]
    with ScriptedServer(failing) as server:
        done = agreement(data, "--judge", LLM, "--settings", llm_settings(server, tmp_path))
    assert done.returncode == 3, done.stdout + done.stderr
    got = summary(done, LLM)
    assert (got["n"], got["kappa"], got["faults"]) == ("0", "nan", "1")
    assert "fault: judge llm:openai/scripted, run demo/ridge-gd: provider_error" in done.stderr
    with ScriptedServer([aligned]) as server:
        redone = agreement(data, "--judge", LLM, "--settings", llm_settings(server, tmp_path))
    assert redone.returncode == 0, redone.stderr
    assert summary(redone, LLM)["n"] == "21"


def test_a_missing_key_stops_before_any_request(data: Path, tmp_path: Path) -> None:
    with ScriptedServer([aligned]) as server:
        settings = llm_settings(server, tmp_path, api_key_env="SABENCH_TEST_KEY_NEVER_SET")
        done = agreement(data, "--judge", LLM, "--settings", settings)
        assert server.count == 0
    assert done.returncode == 3, done.stdout + done.stderr
    assert "key_missing" in done.stderr and "SABENCH_TEST_KEY_NEVER_SET" in done.stderr
    assert not [ln for ln in done.stdout.splitlines() if ln.startswith("agreement:")]


@pytest.mark.parametrize(
    ("judge", "message"),
    [("exec", "runs code"), ("reference", "not a judge that reads code"), ("nope", "nope")],
)
def test_judges_it_cannot_measure_are_refused(data: Path, judge: str, message: str) -> None:
    done = agreement(data, "--judge", judge)
    assert done.returncode == 2
    assert message in done.stderr.strip().splitlines()[-1], done.stderr
