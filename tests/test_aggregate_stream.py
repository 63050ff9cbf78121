"""The streamed aggregation (sabench.aggregate.stream) on a varied grid written as real files: one
judgment per chunk gives the same tables, files and types as one chunk for the whole grid."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from test_aggregate import judgment_row, sau_hash, write_paper, write_run

from sabench import aggregate as agg
from sabench.io import write_parquet

JUDGES = ("static", "reference", "llm:x")
VERDICTS = [("aligned", 1.0), ("partial", 0.5), ("drifted", 0.0), ("missing", 0.0), ("error", None)]
SAUS = {
    "P1": [("a1", "D1", None), ("a2", "D2", None), ("a3", "D3", None)],
    "P2": [("b1", "D1", None), ("b2", "D4", None)],
    "T": [("t1", "D1", "root/A"), ("t2", "D2", "root/A"), ("t3", "D3", "root/B")],
}


def build_grid(root: Path) -> list[tuple[str, str, str]]:
    """3 agents x 3 papers (one a rubric tree) x 3 seeds, three judges (``llm:x`` with samples in
    some runs), errors, an integer column with nulls in some runs, an extra column in others, an
    integer seed column, a stale run and a run that never ran."""
    rng = random.Random(7)
    for paper, saus in SAUS.items():
        write_paper(
            root,
            paper,
            [{"sau_id": s, "dimension": d, "parent": p} for s, d, p in saus],
        )
    grid = [(a, p, str(s)) for a in "ABC" for p in SAUS for s in range(3)]
    for i, run in enumerate(grid):
        if i == 5:
            continue  # never ran: incomplete
        rows = []
        for judge in JUDGES:
            for sau_id, dim, _ in SAUS[run[1]]:
                verdict, score = rng.choice(VERDICTS)
                extra: dict[str, object] = {}
                if judge == "llm:x" and i % 2:
                    answers = [
                        {"sample": k, "verdict": rng.choice(VERDICTS)[0], "score": rng.random()}
                        for k in range(3)
                    ]
                    extra["samples"] = json.dumps(answers)
                if i % 3 == 0:
                    extra["prompt_tokens"] = None if sau_id.endswith("1") else 7
                if i % 4 == 0:
                    extra["note"] = f"run {i}"
                if i == 7:
                    extra["sau_set_hash"] = "an older set"
                value = float("nan") if score is None else score
                rows.append(judgment_row(run, sau_id, dim, verdict, value, judge=judge, **extra))
        frame = pd.DataFrame(rows)  # with the extra columns, which write_run leaves out
        if i == 8:  # a judge that wrote its seed as a number
            frame["seed"] = frame["seed"].astype(int)
        write_parquet(write_run(root, run, rows), frame)
    return grid


@pytest.fixture()
def grid_root(tmp_path: Path) -> tuple[Path, list[tuple[str, str, str]]]:
    root = tmp_path / "results"
    return root, build_grid(root)


def test_chunk_size_changes_nothing(grid_root: tuple[Path, list], tmp_path: Path) -> None:
    root, grid = grid_root
    small = agg.aggregate(root, grid, list(SAUS), tmp_path / "small", chunk_rows=1)
    large = agg.aggregate(root, grid, list(SAUS), tmp_path / "large", chunk_rows=10**9)
    assert set(small) == set(large) == set(agg.TABLES)
    for name in agg.TABLES:
        pd.testing.assert_frame_equal(small[name], large[name], check_exact=True, obj=name)
        a = pq.read_table(tmp_path / "small" / f"{name}.parquet")
        b = pq.read_table(tmp_path / "large" / f"{name}.parquet")
        assert a.equals(b, check_metadata=True), name
    judgments = small["judgments"]
    # every chunk's rows, in the grid's order, under the union of the chunks' columns and types
    assert list(judgments.columns)[-2:] == ["note", "samples"]
    assert pq.read_schema(tmp_path / "small" / "judgments.parquet").field("prompt_tokens").type == (
        "double"
    )
    runs = zip(judgments["agent"], judgments["paper"], judgments["seed"], strict=True)
    assert list(dict.fromkeys(runs)) == [r for i, r in enumerate(grid) if i not in (5, 7)]
    assert len(small["tree_scores"]) == 3 * 3 * len(JUDGES) - len(JUDGES)  # T's runs, one stale
    assert set(small["judge_stability"]["judge"]) == {"llm:x"}
    assert set(small["judge_agreement"]["judge"]) == {"static", "llm:x"}
    stale = small["incomplete_runs"]
    assert set(stale["cause"]) == {"not_run", "stale"}
    assert not list((tmp_path / "small").glob(".judgments-*")), "the parts are cleaned up"


def test_the_streamed_judgments_are_every_file_read_as_is(grid_root: tuple[Path, list]) -> None:
    root, grid = grid_root
    out = root / "tables"
    tables = agg.aggregate(root, grid, list(SAUS), out, chunk_rows=5, load_judgments=False)
    assert "judgments" not in tables
    written = pd.read_parquet(out / "judgments.parquet")
    partition = ["n_saus_judged", "n_saus_error", "n_saus_undetermined"]
    counted = int(tables["coverage"][partition].to_numpy().sum())
    assert len(written) == counted
    one = written[(written["agent"] == "A") & (written["paper"] == "P1") & (written["seed"] == "0")]
    source = pd.read_parquet(root / "runs" / "A" / "P1" / "0" / "judgments.parquet")
    assert one["reasoning"].tolist() == source["reasoning"].tolist()
    assert set(written["sau_set_hash"]) == {sau_hash(p) for p in SAUS}
