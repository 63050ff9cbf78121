"""The cascade:<model> judge against the scripted OpenAI-compatible server: the static verdicts at or
above the threshold stand, the rest go to the model, each row says who decided, the LLM part's
faults are faults and its spending is capped; registered and configured like any judge; and
benchmarks/sabench_agreement.py's curve of the confident part and its cost."""

from __future__ import annotations

import json
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
from openai_server import ScriptedServer, judge_settings, request_text
from sabench_layout import write_sabench_layout

from sabench.contracts import JUDGMENT_COLUMNS
from sabench.errors import UserError
from sabench.faults import Fault
from sabench.grid import judge_fingerprint, validate
from sabench.judges import cascade, registry
from sabench.judges.cascade import DEFAULT_THRESHOLD, judge_cascade
from sabench.judges.llm_judge import JUDGE_DEFAULTS
from sabench.judges.run import judge_run
from sabench.judges.static import judge_static
from sabench.llm.budget import BUDGET_ENV, LEDGER_ENV

REPO = Path(__file__).resolve().parents[1]
DRIFTED = REPO / "resources" / "submissions" / "drifted" / "ridge-gd"
JUDGE = "cascade:openai/scripted"
LLM = "llm:openai/scripted"


def load_saus() -> list[dict[str, Any]]:
    data = yaml.safe_load((REPO / "resources/papers/ridge-gd/saus.yaml").read_text())
    return [
        {
            "paper": "ridge-gd",
            "sau_id": s["id"],
            "dimension": s["dimension"],
            "claim": s["claim"],
            "source": s["source"],
        }
        for s in data["saus"]
    ]


SAUS = load_saus()
STATIC = judge_static(DRIFTED, SAUS)


def sau_of(request: dict[str, Any]) -> str:
    m = re.search(r"Claim (\S+) \(D\d", request_text(request))
    return m.group(1) if m else ""


def drifted(request: dict[str, Any]) -> dict[str, Any]:
    """The scripted model: every SAU it is asked about is drifted, its id in the reasoning."""
    reply = {"reasoning": f"model on {sau_of(request)}", "evidence": [], "verdict": "drifted"}
    return {"json": {**reply, "score": 0, "failure_mode": "implementation_mismatch"}}


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer([drifted]) as s:
        yield s


def settings(server: ScriptedServer, tmp_path: Path, **kw: Any) -> dict[str, Any]:
    return judge_settings(server, tmp_path, **kw)


def middle_threshold() -> float:
    """A threshold that keeps some static verdicts of the drifted run and sends the others."""
    levels = sorted({j.confidence for j in STATIC})
    assert len(levels) >= 2, levels
    return levels[len(levels) // 2]


# --------------------------------------------------------------------------------- the judge


def test_threshold_zero_keeps_every_static_verdict_and_asks_nothing(
    server: ScriptedServer, tmp_path: Path
) -> None:
    got = judge_cascade(JUDGE, settings(server, tmp_path, threshold=0.0), DRIFTED, SAUS)
    assert server.count == 0
    assert [(j.sau_id, j.verdict, j.score, j.confidence) for j in got] == [
        (j.sau_id, j.verdict, j.score, j.confidence) for j in STATIC
    ]
    assert {j.decided_by for j in got} == {"static"}


def test_the_uncertain_saus_and_only_they_go_to_the_model(
    server: ScriptedServer, tmp_path: Path
) -> None:
    threshold = middle_threshold()
    got = judge_cascade(JUDGE, settings(server, tmp_path, threshold=threshold), DRIFTED, SAUS)
    sent = {j.sau_id for j in STATIC if j.confidence < threshold}
    assert 0 < len(sent) < len(SAUS)
    assert server.count == len(sent) and {sau_of(b) for b in server.bodies()} == sent
    assert [j.sau_id for j in got] == [s["sau_id"] for s in SAUS]
    for j, before in zip(got, STATIC, strict=True):
        if j.sau_id in sent:
            assert (j.decided_by, j.verdict, j.confidence) == (LLM, "drifted", None)
            assert j.reasoning.startswith(f"model on {j.sau_id}")
            assert f"[static: {before.verdict}, confidence {before.confidence:.2f} <" in j.reasoning
            assert j.prompt_tokens > 0 and j.cost_usd > 0
        else:
            assert (j.decided_by, j.verdict, j.score) == ("static", before.verdict, before.score)
            assert j.confidence == before.confidence >= threshold and j.prompt_tokens == 0


def test_threshold_one_asks_about_every_saus_below_certainty(
    server: ScriptedServer, tmp_path: Path
) -> None:
    got = judge_cascade(JUDGE, settings(server, tmp_path, threshold=1.0), DRIFTED, SAUS)
    assert server.count == sum(1 for j in STATIC if j.confidence < 1.0) == len(SAUS)
    assert {j.decided_by for j in got} == {LLM}


def test_answers_come_from_the_llm_judges_cache(server: ScriptedServer, tmp_path: Path) -> None:
    """The cascade's LLM part is the llm judge: a grid with both pays once."""
    cfg = settings(server, tmp_path)
    from sabench.judges.llm_judge import judge_llm

    judge_llm(LLM, cfg, DRIFTED, SAUS)
    asked = server.count
    got = judge_cascade(JUDGE, {**cfg, "threshold": 1.0}, DRIFTED, SAUS)
    assert server.count == asked and all(j.cached for j in got)


def test_a_provider_fault_is_a_fault_not_a_verdict(tmp_path: Path) -> None:
    failing = [{"replies": [{"status": 500, "error": "upstream down"}]}]
    with ScriptedServer(failing) as server:
        cfg = settings(server, tmp_path, threshold=1.0)
        with pytest.raises(Fault, match="SAUs not judged") as fault:
            judge_cascade(JUDGE, cfg, DRIFTED, SAUS)
    assert fault.value.cause == "provider_error"


def test_the_budget_caps_the_llm_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The grid's LLM budget (and a benchmark's --max-usd) stops the cascade's requests."""

    def dear(request: dict[str, Any]) -> dict[str, Any]:
        return {**drifted(request), "usage": {"prompt_tokens": 10_000_000, "completion_tokens": 1}}

    monkeypatch.setenv(BUDGET_ENV, "15")
    monkeypatch.setenv(LEDGER_ENV, str(tmp_path / "spend.jsonl"))
    with ScriptedServer([dear]) as server:
        cfg = settings(server, tmp_path, threshold=1.0, concurrency=1)
        with pytest.raises(UserError, match="budget"):
            judge_cascade(JUDGE, cfg, DRIFTED, SAUS)
        assert 0 < server.count < len(SAUS)


@pytest.mark.parametrize("bad", [1.5, -0.1, "high", True, None])
def test_a_threshold_outside_zero_one_is_refused(
    server: ScriptedServer, tmp_path: Path, bad: Any
) -> None:
    with pytest.raises(UserError, match="threshold"):
        judge_cascade(JUDGE, settings(server, tmp_path, threshold=bad), DRIFTED, SAUS)
    assert server.count == 0


def test_the_judge_step_writes_who_decided(server: ScriptedServer, tmp_path: Path) -> None:
    run = tmp_path / "runs" / "drifted" / "ridge-gd" / "0"
    shutil.copytree(DRIFTED, run / "submission")
    agent = {"agent": "drifted", "paper": "ridge-gd", "seed": 0, "submission_hash": "h"}
    (run / "agent.json").write_text(json.dumps(agent))
    saus_path = tmp_path / "saus.parquet"
    pd.DataFrame(SAUS).to_parquet(saus_path)
    out = tmp_path / "judge.parquet"
    cfg = settings(server, tmp_path, threshold=middle_threshold())
    sub = run / "submission"
    judge_run(JUDGE, cfg, "fp", sub, run / "execution.json", run / "agent.json", saus_path, out)
    table = pd.read_parquet(out)
    assert list(table.columns) == list(JUDGMENT_COLUMNS)
    assert set(table["decided_by"]) == {"static", LLM} and set(table["judge"]) == {JUDGE}
    static = table[table["decided_by"] == "static"]
    assert static["confidence"].between(0, 1).all()
    assert table.loc[table["decided_by"] == LLM, "confidence"].isna().all()
    assert str(table["confidence"].dtype) == "float64"
    # the static judge's own rows: a confidence each, nobody delegated to
    judge_run("static", {}, "fp", sub, run / "execution.json", run / "agent.json", saus_path, out)
    plain = pd.read_parquet(out)
    assert plain["confidence"].between(0, 1).all() and plain["decided_by"].isna().all()


# --------------------------------------------------------------------------------- registry


def test_registered_and_named_like_any_model_judge() -> None:
    kind = registry.judge_kind(JUDGE)
    assert kind is registry.JUDGES["cascade"] and kind.model and not kind.batched
    assert kind.reads_code and not kind.runs_code
    assert "cascade:<model>" in registry.available_judges()
    assert not registry.judge_available("cascade") and not registry.judge_available("cascade:")
    assert registry.implementation(JUDGE) is cascade.judge
    hashed = {p.name for rel in kind.sources for p in registry.PACKAGE_DIR.glob(rel)}
    assert {"cascade.py", "llm_judge.py", "confidence.py", "judge_system.j2"} <= hashed


def test_the_threshold_reruns_the_cascade_the_endpoint_does_not() -> None:
    base = {"threshold": 0.5}
    fp = judge_fingerprint(JUDGE, base)
    assert fp == judge_fingerprint(JUDGE, {**base, "api_base": "http://x", "concurrency": 9})
    assert fp != judge_fingerprint(JUDGE, {"threshold": 0.6})
    assert fp != judge_fingerprint("cascade:openai/other", base)
    assert fp != judge_fingerprint(LLM, base)


def test_the_config_schema_takes_its_settings() -> None:
    schema = yaml.safe_load((REPO / "config/schema/config.schema.yaml").read_text())
    props = schema["$defs"]["cascade_judge"]["properties"]
    assert set(schema["$defs"]["llm_judge"]["properties"]) | {"threshold"} == set(props)
    assert props["threshold"]["default"] == DEFAULT_THRESHOLD
    assert set(JUDGE_DEFAULTS) <= set(props)
    ok = {"judges": [JUDGE], "judge_settings": {JUDGE: {"threshold": 0.8, "samples": 3}}}
    validate(ok, "config.schema.yaml", "config.yaml")
    for bad in ({"threshold": 2}, {"treshold": 0.5}):
        with pytest.raises(UserError):
            validate({"judges": [JUDGE], "judge_settings": {JUDGE: bad}}, "config.schema.yaml", "c")


# --------------------------------------------------------------------------------- benchmark

SCRIPT = REPO / "benchmarks" / "sabench_agreement.py"
PAPER = "ridge-gd"
CASCADE_LINE = re.compile(
    r"^cascade: judge=(\S+) threshold=(\S+) part=all share_static=(\S+) kappa_static=(\S+) "
    r"exact_static=(\S+) est_usd=(\d+\.\d{4}) llm_alone_usd=(\d+\.\d{4})$"
)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SA-Bench's layout around the demo's drifted ridge-gd run; the reference scores every second
    SAU 1 and the others 0 (tests/sabench_layout.py)."""
    return write_sabench_layout(tmp_path_factory.mktemp("sabench-data"), PAPER, DRIFTED)


def agreement(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, str(SCRIPT), "--data", str(data), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=REPO)


def test_benchmark_estimate_only_then_the_cascade_measured(data: Path, tmp_path: Path) -> None:
    """--max-usd 0: the curve and the cost, no request; without it the cascade runs at its
    threshold, sends what the curve said and is measured like any judge."""
    threshold = middle_threshold()
    figure = tmp_path / "img" / "curve.png"
    with ScriptedServer([drifted]) as server:
        cfg = json.dumps({JUDGE: settings(server, tmp_path, threshold=threshold)})
        args = ("--judge", JUDGE, "--settings", cfg, "--thresholds", "0", str(threshold), "1")
        estimate = agreement(data, *args, "--max-usd", "0", "--figure", str(figure))
        assert server.count == 0
        measured = agreement(data, *args)
        asked = server.count
    assert estimate.returncode == 0, estimate.stdout + estimate.stderr
    out = estimate.stdout.splitlines()
    line = next(m for ln in out if (m := CASCADE_LINE.match(ln)))
    assert line[1] == JUDGE and float(line[2]) == threshold
    kept = sum(1 for j in STATIC if j.confidence >= threshold)
    assert float(line[3]) == round(kept / len(SAUS), 3)
    sent_usd, alone_usd = float(line[6]), float(line[7])
    assert 0 < sent_usd < alone_usd
    cost = next(ln for ln in out if ln.startswith(f"cost: judge={JUDGE} "))
    assert f"calls={len(SAUS) - kept} " in cost
    assert not [ln for ln in out if ln.startswith(f"agreement: judge={JUDGE}")]
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = [ln.split() for ln in out if re.match(r"^\s+[01]\.\d{3}\s", ln)]
    assert [float(r[0]) for r in rows] == [0.0, round(threshold, 3), 1.0]
    assert [int(r[1]) for r in rows] == [len(SAUS), kept, 0]  # threshold 1: nothing certain
    assert measured.returncode == 0, measured.stdout + measured.stderr
    assert asked == len(SAUS) - kept
    assert f"decided by: {{'{LLM}': {asked}, 'static': {kept}}}" in measured.stdout
    summary = next(ln for ln in measured.stdout.splitlines() if ln.startswith("agreement:"))
    assert summary.startswith(f"agreement: judge={JUDGE} n={len(SAUS)} ")


def test_benchmark_llm_judge_estimate_only_with_max_usd_zero(data: Path, tmp_path: Path) -> None:
    with ScriptedServer([drifted]) as server:
        cfg = json.dumps({LLM: settings(server, tmp_path)})
        done = agreement(data, "--judge", f"static,{LLM}", "--settings", cfg, "--max-usd", "0")
        assert server.count == 0
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"cost: judge={LLM} calls={len(SAUS)} " in done.stdout
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("agreement:")]
    assert len(lines) == 1 and lines[0].startswith("agreement: judge=static ")
