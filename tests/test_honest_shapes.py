"""benchmarks/honest_shapes.py: the honest shapes it generates from the reference submissions
compute what the reference computes, and one runs end to end through execute and the judges."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import honest_shapes  # noqa: E402
from gaming import write_files  # noqa: E402
from gaming_tricks import read_tree  # noqa: E402

PAPERS = ("kmeans-pp", "logreg-earlystop", "ridge-gd")


def _variants(paper: str) -> dict[str, dict[str, str]]:
    made, _ = honest_shapes.shape_variants(
        read_tree(honest_shapes.REFERENCE / paper), list(honest_shapes.SHAPES)
    )
    return made


@pytest.mark.parametrize("paper", PAPERS)
def test_every_shape_is_valid_python_and_differs_from_the_reference(paper: str) -> None:
    ref = read_tree(honest_shapes.REFERENCE / paper)
    made = _variants(paper)
    assert set(made) >= set(honest_shapes.SHAPES) - {"joblib"}, sorted(made)
    for shape, files in made.items():
        for rel, text in files.items():
            if rel.endswith(".py"):
                ast.parse(text, filename=f"{shape}/{rel}")
        assert files != ref, shape
    notebook = made["notebook"]
    assert [r for r in notebook if r.endswith(".py")] == [honest_shapes.NOTEBOOK]
    assert "__main__" not in notebook[honest_shapes.NOTEBOOK]


def _run(root: Path, python_env: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = f"{Path(python_env) / 'bin'}:{env['PATH']}"
    subprocess.run(["bash", "reproduce.sh"], cwd=root, env=env, check=True, capture_output=True)
    return json.loads((root / "results.json").read_text())


def test_every_shape_writes_the_references_results(tmp_path: Path) -> None:
    """Run plainly with the sandbox env's Python (no trace), each kmeans-pp variant writes the
    very results.json the reference writes."""
    env = honest_shapes.default_python_env()
    if not env:
        pytest.skip("no sandbox Python env")
    paper = "kmeans-pp"
    expected = _run(
        write_files(tmp_path / "reference", read_tree(honest_shapes.REFERENCE / paper)), env
    )
    for shape, files in _variants(paper).items():
        assert _run(write_files(tmp_path / shape, files), env) == expected, shape


@pytest.mark.bwrap
def test_one_shape_end_to_end_keeps_the_results_and_prints_its_score() -> None:
    from sabench.sandbox import get_backend

    ok, why = get_backend("bwrap").available()
    if not ok:  # every submission runs through the execute stage in the sandbox
        pytest.skip(f"bwrap unavailable: {why}")
    judges = ["static", "exec"]
    rows, skipped = honest_shapes.measure(["kmeans-pp"], ["pool-fork"], judges, workers=2)
    assert not skipped
    by_shape = {r["shape"]: r for r in rows}
    assert by_shape["reference"]["results"], by_shape["reference"]
    assert by_shape["pool-fork"]["results"] == by_shape["reference"]["results"]
    lines, differ = honest_shapes.report(rows, skipped, judges)
    assert differ == 0
    shown = [line for line in lines if line.startswith("shape: paper=kmeans-pp shape=pool-fork")]
    assert [line.split(" judge=")[1].split()[0] for line in shown] == judges, lines
    assert all(" score=" in line and " ratio=" in line for line in shown), lines
    assert lines[-1].startswith("honest_shapes: ok=") and lines[-1].endswith("/2"), lines
