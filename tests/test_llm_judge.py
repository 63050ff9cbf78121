"""The llm:<model> judge on a demo run, against the scripted OpenAI-compatible server: verdicts,
evidence checks, retries, timeouts, malformed output, reruns from the cache, secrets, fingerprints."""

from __future__ import annotations

import json
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
from openai_server import ScriptedServer, judge_settings, request_text

from sabench.contracts import JUDGMENT_COLUMNS
from sabench.faults import Fault
from sabench.grid import judge_fingerprint
from sabench.index import build_index
from sabench.judges.llm_judge import (
    JUDGE_DEFAULTS,
    JudgeReply,
    Retriever,
    about_results,
    judge_llm,
)
from sabench.judges.registry import JUDGES, PACKAGE_DIR
from sabench.judges.run import judge_run

REPO = Path(__file__).resolve().parents[1]
DRIFTED = REPO / "resources" / "submissions" / "drifted" / "ridge-gd"
JUDGE = "llm:openai/scripted"


def load_saus() -> list[dict[str, Any]]:
    data = yaml.safe_load((REPO / "resources/papers/ridge-gd/saus.yaml").read_text())
    out = []
    for s in data["saus"]:
        row = {"paper": "ridge-gd", "sau_id": s["id"], "dimension": s["dimension"]}
        row.update(claim=s["claim"], source=s["source"])
        if "expected" in s:
            row["expected"] = json.dumps(s["expected"])
        out.append(row)
    return out


SAUS = load_saus()


def sau_of(request: dict[str, Any]) -> str:
    m = re.search(r"Claim (\S+) \(D\d", request_text(request))
    return m.group(1) if m else ""


def reply(verdict: str, score: float, evidence: list[tuple[str, int, int]], **kw: Any) -> dict:
    return {
        "json": {
            "reasoning": kw.pop("reasoning", f"{verdict} by script"),
            "evidence": [{"file": f, "start": a, "end": b} for f, a, b in evidence],
            "verdict": verdict,
            "score": score,
            "failure_mode": kw.pop("failure_mode", None),
        }
    }


#: The scripted model's answers for the drifted ridge-gd run (the manifest's planted drifts).
SCRIPT = {
    "ridge-gd-D1-001": reply(
        "drifted",
        0,
        [("config.json", 4, 4)],
        failure_mode="implementation_mismatch",
        reasoning="config.json:4 sets learning_rate 0.005, the paper says 0.05.",
    ),
    "ridge-gd-D2-001": reply(
        "drifted",
        0,
        [("model.py", 8, 8), ("model.py", 900, 901), ("nowhere.py", 1, 1)],
        failure_mode="cited_work_confusion",
        reasoning="model.py:8 uses the lasso's L1 penalty, the cited method, not ridge's L2.",
    ),
    "ridge-gd-D2-006": reply("placeholder", 0, [("metrics.py", 10, 12)]),
    "ridge-gd-D3-002": reply("partial", 0.5, [("main.py", 37, 41)]),
}


def scripted(request: dict[str, Any]) -> dict[str, Any]:
    sau = sau_of(request)
    return SCRIPT.get(sau) or reply("aligned", 1, [])


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer([scripted]) as s:
        yield s


def settings(server: ScriptedServer, tmp_path: Path, **kw: Any) -> dict[str, Any]:
    return judge_settings(server, tmp_path, **{"max_retries": 2, **kw})


def by_id(judgments: list[Any]) -> dict[str, Any]:
    return {j.sau_id: j for j in judgments}


def test_verdicts_scores_and_checked_evidence(server: ScriptedServer, tmp_path: Path) -> None:
    got = by_id(judge_llm(JUDGE, settings(server, tmp_path), DRIFTED, SAUS))
    assert set(got) == {s["sau_id"] for s in SAUS} and server.count == len(SAUS)
    d1 = got["ridge-gd-D1-001"]
    assert (d1.verdict, d1.score, d1.failure_mode) == ("drifted", 0.0, "implementation_mismatch")
    assert [(e.file, e.start, e.end) for e in d1.evidence] == [("config.json", 4, 4)]
    d2 = got["ridge-gd-D2-001"]
    assert d2.failure_mode == "cited_work_confusion"
    # a line past the end of model.py and a file that does not exist are dropped, and said so
    assert [(e.file, e.start) for e in d2.evidence] == [("model.py", 8)]
    assert "2 evidence reference(s) dropped" in d2.reasoning
    stub = got["ridge-gd-D2-006"]
    assert (stub.verdict, stub.failure_mode, stub.score) == ("placeholder", "placeholder", 0.0)
    part = got["ridge-gd-D3-002"]
    assert (part.verdict, part.score, part.failure_mode) == ("partial", 0.5, None)
    ok = got["ridge-gd-D1-002"]
    assert (ok.verdict, ok.score) == ("aligned", 1.0)
    for j in got.values():
        assert j.prompt_tokens > 0 and j.completion_tokens > 0 and not j.cached
        assert j.cost_usd == pytest.approx((j.prompt_tokens + 4 * j.completion_tokens) / 1e6)
        lines = {e.file: len((DRIFTED / e.file).read_text().splitlines()) for e in j.evidence}
        assert all(1 <= e.start <= e.end <= lines[e.file] for e in j.evidence)


def test_prompt_has_dimension_instructions_and_retrieved_evidence(
    server: ScriptedServer, tmp_path: Path
) -> None:
    judge_llm(JUDGE, settings(server, tmp_path), DRIFTED, SAUS)
    prompts = {sau_of(b): b["messages"] for b in server.bodies()}
    d1 = prompts["ridge-gd-D1-001"]
    assert d1[0]["role"] == "system" and "cited_work_confusion" in d1[0]["content"]
    user = d1[1]["content"]
    assert "numerical values" in user and "Notations of one number are equal" in user
    assert '"learning_rate": 0.005' in user and "### config.json" in user
    assert "config.json:4" in user  # the named setting is listed
    d4 = prompts["ridge-gd-D4-001"][1]["content"]
    assert "in the stated order" in d4
    assert "X = standardise(X)" in d4 and "split_data(X, y" in d4
    d2 = prompts["ridge-gd-D2-001"][1]["content"]
    assert "np.sum(np.abs(w))" in d2  # the drifted loss line is retrieved
    # no whole files: a prompt shows excerpts of at most the line budget
    for messages in prompts.values():
        shown = re.findall(r"^\d+\t", messages[1]["content"], re.M)
        assert 0 < len(shown) <= JUDGE_DEFAULTS["max_evidence_lines"]


def test_result_claims_get_the_execution_record(server: ScriptedServer, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(DRIFTED, run / "submission")
    (run / "execution.log").write_text("epoch 1\n" * 100 + "linear-gauss rmse 0.549\nwrote\n")
    execution = {"status": "ok", "exit_code": 0, "metrics": {"linear-gauss.ridge_gd.rmse": 0.549}}
    judge_llm(JUDGE, settings(server, tmp_path), run / "submission", SAUS, execution)
    prompts = {sau_of(b): b["messages"][1]["content"] for b in server.bodies()}
    result = prompts["ridge-gd-D3-006"]
    assert about_results(next(s for s in SAUS if s["sau_id"] == "ridge-gd-D3-006"))
    assert "status ok, exit code 0" in result and '"linear-gauss.ridge_gd.rmse": 0.549' in result
    assert "linear-gauss rmse 0.549" in result and result.count("epoch 1") == 38  # the tail
    assert "Execution of reproduce.sh" not in prompts["ridge-gd-D1-001"]
    # code_only: never
    server.reset()
    judge_llm(
        JUDGE, settings(server, tmp_path, code_only=True), run / "submission", SAUS, execution
    )
    # only the result claims' prompts change: they alone are asked again, the rest is cached
    assert server.count == sum(about_results(s) for s in SAUS) >= 1
    assert not any("Execution of reproduce.sh" in request_text(b) for b in server.bodies())


def test_429_then_success(server: ScriptedServer, tmp_path: Path) -> None:
    server.set_script(
        [
            {
                "match": "Claim ridge-gd-D1-001 ",
                "replies": [{"status": 429}, SCRIPT["ridge-gd-D1-001"]],
            },
            scripted,
        ]
    )
    got = by_id(judge_llm(JUDGE, settings(server, tmp_path), DRIFTED, SAUS))
    assert got["ridge-gd-D1-001"].verdict == "drifted"
    assert server.count == len(SAUS) + 1
    assert not any(j.verdict == "error" for j in got.values())


def test_500s_exhausting_retries_are_a_fault_redone_by_the_next_run(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.set_script([{"match": "Claim ridge-gd-D2-001 ", "replies": [{"status": 500}]}, scripted])
    with pytest.raises(Fault, match=r"1 of .* SAUs not judged: server after 3 attempt") as fault:
        judge_llm(JUDGE, settings(server, tmp_path, max_retries=2), DRIFTED, SAUS)
    assert fault.value.cause == "provider_error"
    assert server.count == len(SAUS) - 1 + 3
    # the answered SAUs are cached, the failure is not: the rerun asks for that one alone
    server.set_script([scripted])
    server.reset()
    got = by_id(judge_llm(JUDGE, settings(server, tmp_path), DRIFTED, SAUS))
    assert server.count == 1 and got["ridge-gd-D2-001"].verdict == "drifted"


def test_malformed_json_repaired_once_then_error(server: ScriptedServer, tmp_path: Path) -> None:
    server.set_script(
        [
            {"match": "Claim ridge-gd-D1-002 ", "replies": [{"content": "{'verdict': aligned"}]},
            {
                "match": "Claim ridge-gd-D1-003 ",
                "replies": [
                    {"content": '{"verdict": "partial", "score": 1, "reasoning": "x"}'},
                    reply("aligned", 1, []),
                ],
            },
            scripted,
        ]
    )
    got = by_id(judge_llm(JUDGE, settings(server, tmp_path), DRIFTED, SAUS))
    bad = got["ridge-gd-D1-002"]
    assert bad.verdict == "error" and bad.score is None
    assert bad.reasoning.startswith("invalid structured output after one repair")
    assert bad.prompt_tokens > 0  # the two calls' tokens are still counted
    fixed = got["ridge-gd-D1-003"]
    assert fixed.verdict == "aligned"
    assert server.count == len(SAUS) + 2
    repair = [b for b in server.bodies() if "Your reply could not be used" in request_text(b)]
    assert any("partial verdict needs score" in request_text(b) for b in repair)


def test_slow_reply_past_the_timeout(server: ScriptedServer, tmp_path: Path) -> None:
    server.set_script(
        [{"match": "Claim ridge-gd-D4-002 ", "replies": [{"delay": 3, "content": "{}"}]}, scripted]
    )
    cfg = settings(server, tmp_path, timeout_s=0.5, max_retries=1)
    with pytest.raises(Fault, match=r"1 of .* SAUs not judged: timeout after 2 attempt") as fault:
        judge_llm(JUDGE, cfg, DRIFTED, SAUS)
    assert fault.value.cause == "provider_unreachable"


def test_rerun_makes_zero_requests_and_the_same_table(
    server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-judge-SECRET-abcdef123456"
    monkeypatch.setenv("SABENCH_TEST_KEY", secret)
    run = tmp_path / "runs" / "drifted" / "ridge-gd" / "0"
    shutil.copytree(DRIFTED, run / "submission")
    agent = {"agent": "drifted", "paper": "ridge-gd", "seed": 0, "submission_hash": "h"}
    (run / "agent.json").write_text(json.dumps(agent))
    saus_path = tmp_path / "saus.parquet"
    pd.DataFrame(SAUS).to_parquet(saus_path)
    cfg = settings(server, tmp_path, api_key_env="SABENCH_TEST_KEY", concurrency=3)

    def judge(out: Path) -> pd.DataFrame:
        judge_run(
            JUDGE,
            cfg,
            "fp",
            run / "submission",
            run / "execution.json",
            run / "agent.json",
            saus_path,
            out,
        )
        return pd.read_parquet(out)

    first = judge(tmp_path / "first.parquet")
    assert server.count == len(SAUS) and server.max_in_flight <= 3
    assert list(first.columns) == list(JUDGMENT_COLUMNS)
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {secret}"
    second = judge(tmp_path / "second.parquet")
    assert server.count == len(SAUS), "a rerun must make no request"
    assert second["cached"].all() and not first["cached"].any()
    pd.testing.assert_frame_equal(
        first.drop(columns=["cached", "latency_s"]), second.drop(columns=["cached", "latency_s"])
    )
    for path in [tmp_path / "first.parquet", *(tmp_path / "cache").rglob("*.json")]:
        assert secret.encode() not in path.read_bytes()


def test_empty_submission_needs_no_call(server: ScriptedServer, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    got = judge_llm(JUDGE, settings(server, tmp_path), tmp_path / "empty", SAUS)
    assert {j.verdict for j in got} == {"missing"} and server.count == 0


def test_reply_model_rules() -> None:
    ok = JudgeReply.model_validate(
        {"reasoning": "r", "verdict": "Drifted", "score": 0.0, "failure_mode": "null"}
    )
    assert ok.verdict == "drifted" and ok.failure_mode == "implementation_mismatch"
    assert JudgeReply.model_validate({"reasoning": "r", "verdict": "missing", "score": 0})
    for bad in (
        {"reasoning": "r", "verdict": "aligned", "score": 0.5},
        {"reasoning": "r", "verdict": "partial", "score": 1},
        {"reasoning": "r", "verdict": "partial", "score": 0.6},
        {"reasoning": "r", "verdict": "great", "score": 1},
        {"reasoning": "r", "verdict": "missing", "score": "NaN"},  # once snapped to 0
    ):
        with pytest.raises(ValueError):
            JudgeReply.model_validate(bad)


def test_retrieval_budget_and_ranking() -> None:
    index = build_index(DRIFTED)
    retriever = Retriever(index, SAUS, max_evidence_lines=20)
    bundle = retriever.retrieve(SAUS[0])
    assert bundle.n_lines <= 20
    assert bundle.excerpts[0].path == "config.json"  # the value's setting comes first
    assert bundle.contains("config.json", 4, 4) and not bundle.contains("config.json", 40, 41)


def _fill_centres(root: Path, claim: str, **options: Any) -> list[tuple[str, int]]:
    """(path, centre line) of the filling windows for one claim, best first."""

    index = build_index(root)
    sau = {"sau_id": "x-D1-001", "dimension": "D1", "claim": claim}
    r = Retriever(index, [sau], **options)
    claim_obj = r.claim(sau)
    return [(index.files[fid].path, ln) for _, fid, ln in r._windows(claim_obj)]


def test_fill_windows_find_the_claims_numbers(tmp_path: Path) -> None:
    """A number of the claim locates a window even where no word of the claim is (a bare literal,
    an integer in a comment); other numbers do not."""
    filler = ["pass"] * 30
    (tmp_path / "train.py").write_text(
        "\n".join(["import torch", *filler, "n = 512", *filler, "# 4096 rows per shard", *filler])
        + "\n"
    )
    (tmp_path / "model.py").write_text("def forward(x):\n    return x * 7\n")
    claim = "Batch size of 512 and a buffer of 4096"
    on = _fill_centres(tmp_path, claim)
    assert ("train.py", 32) in on and ("train.py", 63) in on
    assert not any(path == "model.py" for path, _ in on)
    off = _fill_centres(tmp_path, claim, fill_number_weight=0.0)
    assert ("train.py", 32) not in off and ("train.py", 63) not in off


def test_fill_windows_prefer_definitions_named_like_the_claim(tmp_path: Path) -> None:
    """The same claim word on a ``def`` line outranks it in a plain statement."""
    (tmp_path / "a.py").write_text("import math\n" + "\n" * 20 + "total = warmup_x + 1\n")
    (tmp_path / "b.py").write_text("import math\n" + "\n" * 20 + "def warmup_y(k):\n    return k\n")
    claim = "A linear warmup precedes the decay"
    assert _fill_centres(tmp_path, claim)[0] == ("b.py", 22)
    # without the definition weight the tie goes to the first file
    assert _fill_centres(tmp_path, claim, fill_def_weight=1.0)[0] == ("a.py", 22)


def test_fingerprint_covers_prompts_and_ignores_endpoint() -> None:
    patterns = JUDGES["llm"].sources
    files = {p.name for pat in patterns for p in PACKAGE_DIR.glob(pat)}
    assert {"judge_system.j2", "judge_D1.j2", "judge_base.j2", "repair.j2", "client.py"} <= files
    base = {"temperature": 0.0}
    fp = judge_fingerprint(JUDGE, base)
    assert fp == judge_fingerprint(JUDGE, {**base, "api_base": "http://x", "concurrency": 9})
    assert fp != judge_fingerprint(JUDGE, {**base, "temperature": 0.5})
    assert fp != judge_fingerprint("llm:openai/other", base)


def test_prompts_are_identical_across_interpreters() -> None:
    """The cache answers a rerun only if its prompts are byte-identical, whatever the hash seed."""
    code = (
        "import hashlib, json, sys, yaml\n"
        "sys.path.insert(0, 'tests')\n"
        "from test_llm_judge import SAUS, DRIFTED\n"
        "from sabench.index import build_index\n"
        "from sabench.judges.llm_judge import Retriever, build_messages, repo_overview\n"
        "index = build_index(DRIFTED)\n"
        "r = Retriever(index, SAUS)\n"
        "out = [build_messages(s, r.retrieve(s), repo_overview(index)) for s in SAUS]\n"
        "print(hashlib.sha256(json.dumps(out).encode()).hexdigest())\n"
    )
    digests = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run(
            [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, env=env
        )
        assert proc.returncode == 0, proc.stderr
        digests.add(proc.stdout.strip())
    assert len(digests) == 1


LIVE_MODEL = os.environ.get("SABENCH_LIVE_MODEL", "openai/gpt-4o-mini")
LIVE_KEY_ENV = os.environ.get("SABENCH_LIVE_KEY_ENV", "OPENAI_API_KEY")


@pytest.mark.live
@pytest.mark.skipif(
    not os.environ.get(LIVE_KEY_ENV),
    reason=f"live tests need a key in {LIVE_KEY_ENV} (model: SABENCH_LIVE_MODEL)",
)
def test_live_judgments_on_planted_drifts(tmp_path: Path) -> None:
    """A real model on three SAUs of the drifted demo run: the planted wrong learning rate, the
    stubbed r2 metric, and a value the code has right."""
    wanted = {"ridge-gd-D1-001": "drifted", "ridge-gd-D2-006": "placeholder"}
    saus = [s for s in SAUS if s["sau_id"] in {*wanted, "ridge-gd-D1-002"}]
    cfg = {"api_key_env": LIVE_KEY_ENV, "cache_dir": str(tmp_path), "max_tokens": 600}
    got = by_id(judge_llm(f"llm:{LIVE_MODEL}", cfg, DRIFTED, saus))
    assert not any(j.verdict == "error" for j in got.values()), got
    for sau_id, verdict in wanted.items():
        assert got[sau_id].verdict == verdict, got[sau_id].reasoning
    assert got["ridge-gd-D1-002"].verdict in ("aligned", "partial")
    assert all(j.prompt_tokens > 0 for j in got.values())


def test_core_headers_shown_to_a_claim_whose_words_the_code_lacks(tmp_path: Path) -> None:
    """The definitions most claims' windows sit in (a method and its class) are shown to every SAU
    of the run, also to a claim none of whose words the code has: where its value would be."""
    body = [f"        h{i} = h{i - 1} + 1" for i in range(1, 40)]
    body[10] = "        gate = self.router_gate(h9)  # router gating over the experts"
    body[25] = "        load = self.expert_load(h24)  # balance the experts' load"
    (tmp_path / "model.py").write_text(
        "\n".join(
            [
                "import torch",
                "",
                "class MixtureModel:",
                "    def forward(self, x):",
                "        h0 = x",
                *body,
                "        return h39",
            ]
        )
        + "\n"
    )
    saus = [
        {"sau_id": "m-D2-001", "dimension": "D2", "claim": "A router gating picks the experts"},
        {"sau_id": "m-D2-002", "dimension": "D2", "claim": "The experts' load is balanced"},
        {"sau_id": "m-D1-003", "dimension": "D1", "claim": "Dropout probability 0.3 on attention"},
    ]
    index = build_index(tmp_path)
    bundle = Retriever(index, saus).retrieve(saus[2])
    assert bundle.contains("model.py", 3, 3) and bundle.contains("model.py", 4, 4)
    # without the core the claim is shown nothing of the model
    assert not Retriever(index, saus, core_n=0).retrieve(saus[2]).contains("model.py", 1, 50)
