"""``samples: k`` of the llm:<model> judge against a scripted server whose answers vary by seed:
k requests per SAU, the majority verdict and median score, every answer kept, the judge_stability
table and report block, reruns from the cache, and k=1 exactly as before."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from openai_server import ScriptedServer
from test_aggregate import GRID, PAPERS, build_tree
from test_llm_judge import DRIFTED, JUDGE, SAUS, reply, sau_of, settings

from sabench import aggregate as agg
from sabench.contracts import JUDGMENT_COLUMNS, Judgment
from sabench.io import write_parquet
from sabench.judges.llm_judge import SAMPLE_TEMPERATURE, combine_samples, judge_llm
from sabench.judges.run import judge_run
from sabench.judges.stability import STABILITY_COLUMNS, judge_stability
from sabench.report import make_report

REPO = Path(__file__).resolve().parents[1]

#: Per SAU, the answer to the request with seed 0, 1, 2 (others: aligned whatever the seed).
VARYING = {
    # a majority of drifted: drifted, median score 0
    "ridge-gd-D1-001": [
        reply("drifted", 0, []),
        reply("partial", 0.5, []),
        reply("drifted", 0, []),
    ],
    # a majority of partial, the median over all answers 0.75
    "ridge-gd-D3-002": [
        reply("partial", 0.25, [("main.py", 37, 41)], reasoning="low partial"),
        reply("partial", 0.75, [], reasoning="high partial"),
        reply("aligned", 1, []),
    ],
    # no majority: the verdict of the median-scoring answer (partial 0.5)
    "ridge-gd-D2-001": [
        reply("aligned", 1, []),
        reply("drifted", 0, []),
        reply("partial", 0.5, []),
    ],
}


def varying(request: dict[str, Any]) -> dict[str, Any]:
    answers = VARYING.get(sau_of(request))
    seed = request.get("seed")
    if answers is None or seed is None:
        return reply("aligned", 1, [])
    return answers[int(seed) % len(answers)]


@pytest.fixture
def server() -> Any:
    with ScriptedServer([varying]) as s:
        yield s


def run_judge(tmp_path: Path, cfg: dict[str, Any], out: Path) -> pd.DataFrame:
    run = tmp_path / "runs" / "drifted" / "ridge-gd" / "0"
    if not run.is_dir():
        shutil.copytree(DRIFTED, run / "submission")
        agent = {"agent": "drifted", "paper": "ridge-gd", "seed": 0, "submission_hash": "h"}
        (run / "agent.json").write_text(json.dumps(agent))
        pd.DataFrame(SAUS).to_parquet(tmp_path / "saus.parquet")
    judge_run(
        JUDGE,
        cfg,
        "fp",
        run / "submission",
        run / "execution.json",
        run / "agent.json",
        tmp_path / "saus.parquet",
        out,
    )
    return pd.read_parquet(out)


def test_k_samples_are_k_requests_aggregated_and_kept(
    server: ScriptedServer, tmp_path: Path
) -> None:
    cfg = settings(server, tmp_path, samples=3)
    first = run_judge(tmp_path, cfg, tmp_path / "first.parquet")
    assert server.count == 3 * len(SAUS)
    bodies = server.bodies()
    per_sau = Counter((sau_of(b), b["seed"]) for b in bodies)
    assert set(per_sau.values()) == {1} and {s for _, s in per_sau} == {0, 1, 2}
    assert {b["temperature"] for b in bodies} == {SAMPLE_TEMPERATURE}
    # the k requests of an SAU differ only by their sampling
    d1 = [b for b in bodies if sau_of(b) == "ridge-gd-D1-001"]
    assert all(b["messages"] == d1[0]["messages"] for b in d1)

    got = first.set_index("sau_id")
    assert list(first.columns) == [*JUDGMENT_COLUMNS, "samples"]
    assert (got.loc["ridge-gd-D1-001", "verdict"], got.loc["ridge-gd-D1-001", "score"]) == (
        "drifted",
        0.0,
    )
    part = got.loc["ridge-gd-D3-002"]
    assert (part["verdict"], part["score"]) == ("partial", 0.75)
    assert part["reasoning"].startswith("low partial")  # the median answer of the majority
    assert "3 samples: partial 2, aligned 1; median score 0.75" in part["reasoning"]
    tie = got.loc["ridge-gd-D2-001"]
    assert (tie["verdict"], tie["score"]) == ("partial", 0.5)
    kept = json.loads(got.loc["ridge-gd-D1-001", "samples"])
    assert [(s["sample"], s["seed"], s["verdict"], s["score"]) for s in kept] == [
        (0, 0, "drifted", 0.0),
        (1, 1, "partial", 0.5),
        (2, 2, "drifted", 0.0),
    ]
    ok = got.loc["ridge-gd-D1-002"]
    assert ok["verdict"] == "aligned" and len(json.loads(ok["samples"])) == 3
    assert ok["prompt_tokens"] > 0 and not first["cached"].any()

    # a rerun asks nothing: the k answers are cached apart
    second = run_judge(tmp_path, cfg, tmp_path / "second.parquet")
    assert server.count == 3 * len(SAUS), "a rerun must make no request"
    assert second["cached"].all()
    pd.testing.assert_frame_equal(
        first.drop(columns=["cached", "latency_s"]), second.drop(columns=["cached", "latency_s"])
    )

    # the stability numbers: 3 SAUs disagree; their score SDs are known
    table = judge_stability(first.assign(judge=JUDGE))
    assert list(table.columns) == STABILITY_COLUMNS
    overall = table[table["dimension"] == "overall"].iloc[0]
    sds = [pd.Series(s).std() for s in ([0.0, 0.5, 0.0], [0.25, 0.75, 1.0], [1.0, 0.0, 0.5])]
    assert overall["n_saus"] == len(SAUS) and overall["n_samples"] == 3 * len(SAUS)
    assert overall["share_disagree"] == pytest.approx(3 / len(SAUS))
    assert overall["score_sd"] == pytest.approx(sum(sds) / len(SAUS))
    n_d1 = sum(s["dimension"] == "D1" for s in SAUS)
    d1_row = table[table["dimension"] == "D1"].iloc[0]
    assert d1_row["n_saus"] == n_d1 and d1_row["share_disagree"] == pytest.approx(1 / n_d1)


def test_one_sample_is_the_judge_as_before(server: ScriptedServer, tmp_path: Path) -> None:
    plain = run_judge(tmp_path, settings(server, tmp_path, cache=False), tmp_path / "a.parquet")
    before = sorted(server.bodies(), key=sau_of)
    server.reset()
    once = run_judge(
        tmp_path, settings(server, tmp_path, cache=False, samples=1), tmp_path / "b.parquet"
    )
    assert server.count == len(SAUS) and sorted(server.bodies(), key=sau_of) == before
    assert all("seed" not in b and b["temperature"] == 0.0 for b in before)
    assert list(once.columns) == list(JUDGMENT_COLUMNS)
    pd.testing.assert_frame_equal(plain.drop(columns="latency_s"), once.drop(columns="latency_s"))
    assert judge_stability(once.assign(judge=JUDGE)).empty


def test_all_invalid_answers_are_an_error() -> None:
    bad = [Judgment("s", "D1", "error", None, reasoning="invalid") for _ in range(3)]
    got = combine_samples(bad, [0, 1, 2])
    assert got.verdict == "error" and got.reasoning.startswith("all 3 samples failed")
    assert len(json.loads(got.samples or "[]")) == 3
    mixed = [Judgment("s", "D1", "error", None), Judgment("s", "D1", "aligned", None)]
    assert combine_samples(mixed, [0, 1]).verdict == "aligned"


def test_tables_and_report_have_judge_stability(tmp_path: Path) -> None:
    root = build_tree(tmp_path / "results")
    path = root / "runs" / "A" / "P1" / "0" / "judgments.parquet"
    frame = pd.read_parquet(path)
    answers = [{"verdict": "aligned", "score": 1.0}, {"verdict": "drifted", "score": 0.0}]
    llm = frame.assign(judge="llm:x", samples=json.dumps(answers))
    write_parquet(path, pd.concat([frame, llm], ignore_index=True))
    tables = agg.aggregate(root, GRID, list(PAPERS), root / "tables")
    table = tables["judge_stability"]
    assert list(table.columns) == agg.TABLES["judge_stability"] == STABILITY_COLUMNS
    assert set(table["judge"]) == {"llm:x"}  # the static judge, asked once, has no rows
    overall = table[table["dimension"] == "overall"].iloc[0]
    assert overall["n_saus"] == len(frame) and overall["share_disagree"] == 1.0
    assert overall["score_sd"] == pytest.approx(2**0.5 / 2)
    assert (root / "tables" / "judge_stability.parquet").is_file()
    smk = (REPO / "rules" / "common.smk").read_text()
    assert '"judge_stability"' in smk.split("TABLES = (")[1].split(")")[0]
    out = tmp_path / "report"
    make_report(tables, out, root)
    assert "Judge stability" in (out / "index.html").read_text(encoding="utf-8")


def test_k_samples_against_one_judgment_call(server: ScriptedServer, tmp_path: Path) -> None:
    """judge_llm itself returns the aggregate with its samples (the registry's entry point)."""
    (d1,) = judge_llm(JUDGE, settings(server, tmp_path, samples=2), DRIFTED, SAUS[:1])
    assert server.count == 2 and d1.samples is not None
    assert len(json.loads(d1.samples)) == 2
