"""make_report on tables from real aggregated trees: valid, non-empty, deterministic files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from test_aggregate import GRID, PAPERS, build_tree

from sabench import aggregate as agg
from sabench.report import IMAGES, make_report

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
REPO = Path(__file__).resolve().parents[1]


def check_outputs(paths: list[Path], out: Path) -> None:
    assert [p.name for p in paths] == [*IMAGES, "index.html"]
    for name in IMAGES:
        data = (out / name).read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 1000, name
    page = (out / "index.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.count("data:image/png;base64,") == 3
    assert not list(out.glob(".*tmp*"))


@pytest.fixture()
def full_tables(tmp_path: Path) -> dict[str, pd.DataFrame]:
    root = build_tree(tmp_path / "results", reference=True)
    return agg.aggregate(root, GRID, list(PAPERS), root / "tables")


def test_report_writes_pngs_and_html(full_tables: dict, tmp_path: Path) -> None:
    out = tmp_path / "report"
    paths = make_report(full_tables, out)
    check_outputs(paths, out)
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "Agreement with the reference judge" in page and "<td>static</td>" in page


def test_report_is_deterministic(full_tables: dict, tmp_path: Path) -> None:
    first = [p.read_bytes() for p in make_report(full_tables, tmp_path / "a")]
    second = [p.read_bytes() for p in make_report(full_tables, tmp_path / "b")]
    assert first == second


def test_report_one_agent_one_paper(tmp_path: Path) -> None:
    root = build_tree(tmp_path / "r", grid=[("B", "P2", "0")])
    tables = agg.aggregate(root, [("B", "P2", "0")], ["P2"], root / "tables")
    out = tmp_path / "report"
    check_outputs(make_report(tables, out), out)


def test_report_on_empty_tables(tmp_path: Path) -> None:
    root = tmp_path / "r"
    build_tree(root, grid=[])
    tables = agg.aggregate(root, [], list(PAPERS), root / "tables")
    assert tables["scores_by_agent"].empty
    for given in (tables, {}):
        out = tmp_path / f"report-{len(given)}"
        check_outputs(make_report(given, out), out)


def test_html_escapes_names(full_tables: dict, tmp_path: Path) -> None:
    scores = full_tables["scores_by_agent"].copy()
    scores["agent"] = scores["agent"].replace({"A": "<script>x</script>"})
    make_report({**full_tables, "scores_by_agent": scores}, tmp_path / "out")
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert "<script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page


def test_cli(full_tables: dict, tmp_path: Path) -> None:
    tables_dir = tmp_path / "results" / "tables"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sabench.report",
            "--tables",
            str(tables_dir),
            "--out",
            str(tmp_path / "cli"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    check_outputs([tmp_path / "cli" / n for n in (*IMAGES, "index.html")], tmp_path / "cli")
