"""Ingestion of markdown and PDF papers, and the errors a user's bad paper folder gets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sabench.errors import UserError
from sabench.ingest import ingest_paper, main

BODY = "\n".join(
    [
        "# A Tiny Paper on Ridge Regression",
        "",
        "## 1 Introduction",
        "We study gradient descent for ridge regression on synthetic data. " * 4,
        "",
        "## 2 Method",
        "The loss is the mean squared error plus an L2 penalty with lambda 0.1. " * 3,
    ]
)


def _make_pdf(path: Path, lines: list[str]) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    for line in lines:
        pdf.multi_cell(0, 6, line, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))


def _ingest(paper_dir: Path, out: Path) -> dict:
    return ingest_paper(paper_dir, out / "paper.md", out / "paper.json", out / "agent_view")


def test_markdown_paper(tmp_path: Path) -> None:
    paper = tmp_path / "papers" / "tiny"
    paper.mkdir(parents=True)
    (paper / "paper.md").write_text(BODY + "\r\n\r\n\r\n\r\nEnd.  \n", encoding="utf-8")
    (paper / "addendum.md").write_text("Use seed 0.\n")
    (paper / "saus.yaml").write_text("saus: []\n")
    (paper / "rubric.json").write_text("{}")
    meta = _ingest(paper, tmp_path / "out")
    assert meta["title"] == "A Tiny Paper on Ridge Regression"
    assert [s["title"] for s in meta["sections"]][1:] == ["1 Introduction", "2 Method"]
    text = (tmp_path / "out" / "paper.md").read_text()
    assert "\r" not in text and "\n\n\n" not in text and "End." in text
    saved = json.loads((tmp_path / "out" / "paper.json").read_text())
    assert len(saved["sha256"]) == 64 and saved["source_format"] == "md"
    view = sorted(p.name for p in (tmp_path / "out" / "agent_view").iterdir())
    assert view == ["addendum.md", "paper.md"], "SAUs and rubrics must never reach the agent's view"


def test_pdf_paper(tmp_path: Path) -> None:
    paper = tmp_path / "pdfpaper"
    paper.mkdir()
    _make_pdf(paper / "paper.pdf", [*BODY.replace("## ", "").replace("# ", "").split("\n"), "3"])
    meta = _ingest(paper, tmp_path / "out")
    assert meta["source_format"] == "pdf"
    assert meta["title"].startswith("A Tiny Paper on Ridge Regression")
    assert any(s["title"] == "2 Method" for s in meta["sections"])
    assert "L2 penalty" in (tmp_path / "out" / "paper.md").read_text()


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("paper.md", b"\xff\xfe bad bytes " * 40, "not UTF-8"),
        ("paper.md", b"# Short\n", "characters of text"),
        ("paper.pdf", b"", "unreadable PDF"),
        ("paper.pdf", b"%PDF-1.4 garbage" * 10, "unreadable PDF"),
    ],
)
def test_bad_papers_get_one_line_errors(
    tmp_path: Path, name: str, content: bytes, message: str
) -> None:
    paper = tmp_path / "bad"
    paper.mkdir()
    (paper / name).write_bytes(content)
    with pytest.raises(UserError) as info:
        _ingest(paper, tmp_path / "out")
    assert message in str(info.value) and str(paper / name) in str(info.value)
    assert "\n" not in str(info.value)
    assert not (tmp_path / "out" / "paper.md").exists(), "nothing half-written"


def test_encrypted_pdf(tmp_path: Path) -> None:
    from pypdf import PdfReader, PdfWriter

    paper = tmp_path / "enc"
    paper.mkdir()
    _make_pdf(tmp_path / "plain.pdf", BODY.split("\n"))
    writer = PdfWriter()
    for page in PdfReader(tmp_path / "plain.pdf").pages:
        writer.add_page(page)
    writer.encrypt(user_password="secret", owner_password="owner")
    with open(paper / "paper.pdf", "wb") as fh:
        writer.write(fh)
    with pytest.raises(UserError, match="encrypted PDF"):
        _ingest(paper, tmp_path / "out")


def test_folder_without_text(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match=r"no paper\.md or paper\.pdf"):
        _ingest(tmp_path / "empty", tmp_path / "out")


def test_cli_reports_user_error_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    (tmp_path / "empty").mkdir()
    assert main([str(tmp_path / "empty"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err


def test_real_sabench_paper(sabench_data: Path, tmp_path: Path) -> None:
    meta = _ingest(sabench_data / "papers" / "ngpt", tmp_path)
    assert "NORMALIZED TRANSFORMER" in meta["title"].upper()
    assert len(meta["sections"]) > 10
