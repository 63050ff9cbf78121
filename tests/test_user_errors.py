"""User errors at every ``python -m sabench.*`` command: ``error: <file>: <field>: <message>`` on
stderr (one line per problem), exit status 2, never a traceback; parse errors keep line and column."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sabench.errors import MAX_PROBLEMS, UserError
from sabench.grid import load_agents
from sabench.judges.reference import read_verdicts
from sabench.saus import import_paper_saus

REPO = Path(__file__).resolve().parents[1]


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *map(str, args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def error_lines(proc: subprocess.CompletedProcess[str]) -> list[str]:
    """The stderr lines of a command stopped by a user error, checked for the contract."""
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines and all(line.startswith("error: ") for line in lines), proc.stderr
    return lines


def one_error(proc: subprocess.CompletedProcess[str]) -> str:
    lines = error_lines(proc)
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "runs" / "a" / "p" / "0"
    folder.mkdir(parents=True)
    (folder / "agent.json").write_text(json.dumps({"agent": "a", "paper": "p", "seed": "0"}))
    (tmp_path / "saus.parquet").write_text("not read: the arguments are checked first")
    return folder


def test_judging_unknown_judge(run_dir: Path) -> None:
    line = one_error(
        run(
            "sabench.judges.run",
            run_dir,
            "--saus",
            run_dir.parents[3] / "saus.parquet",
            "--judge",
            "statc",
        )
    )
    assert "--judge: unknown judge 'statc'" in line and "static" in line


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--settings", "[1]"], "--settings: not a JSON object"),
        (["--runtime", "{bad"], "--runtime: not JSON (Expecting property name"),
        (["--saus", "missing.parquet"], "--saus: missing.parquet: not found"),
        (["--spec", '{"name": "static"}'], "--spec: no fingerprint, settings_json, runtime_json"),
        (
            [
                "--spec",
                '{"name": "statc", "fingerprint": 1, "settings_json": "{}", "runtime_json": "{}"}',
            ],
            "--spec: unknown judge 'statc'",
        ),
        (
            [
                "--spec",
                '{"name": "static", "fingerprint": 1, "settings_json": "[]", "runtime_json": "{}"}',
            ],
            "--spec: not a JSON object",
        ),
    ],
)
def test_judging_bad_arguments(run_dir: Path, extra: list[str], message: str) -> None:
    saus = ["--saus", str(run_dir.parents[3] / "saus.parquet")]
    assert message in one_error(run("sabench.judges.run", run_dir, *saus, *extra))


def test_judging_not_a_run_folder(tmp_path: Path) -> None:
    line = one_error(run("sabench.judges.run", tmp_path, "--saus", tmp_path / "x.parquet"))
    assert f"{tmp_path}: not a run folder (no agent.json" in line


def test_argparse_usage_error_is_one_line() -> None:
    line = one_error(run("sabench.saus"))
    assert line.startswith("error: python -m sabench.saus: ") and "required" in line


def test_saus_yaml_parse_error_has_line_and_column(tmp_path: Path) -> None:
    paper = tmp_path / "p"
    paper.mkdir()
    (paper / "saus.yaml").write_text('paper: p\nsaus:\n  - {id: a, claim: "unclosed\n')
    line = one_error(run("sabench.saus", paper, "--out", tmp_path / "saus.parquet"))
    assert line.startswith(f"error: {paper / 'saus.yaml'}: line 4, column 1: cannot parse: ")
    assert "quoted scalar (from line 3, column 20)" in line


def test_sau_json_reports_every_problem(tmp_path: Path) -> None:
    paper = tmp_path / "p"
    paper.mkdir()
    items = [{"id": f"x{i}", "claim": ""} for i in range(MAX_PROBLEMS + 5)]
    (paper / "sau.json").write_text(json.dumps({"D1": [{"id": "", "claim": "c"}], "D2": items}))
    lines = error_lines(run("sabench.saus", paper, "--out", tmp_path / "saus.parquet"))
    path = paper / "sau.json"
    assert lines[0] == f"error: {path}: D1[0].id: missing or empty"
    assert lines[1] == f"error: {path}: D2[0].claim: missing or empty"
    assert len(lines) == MAX_PROBLEMS + 1
    assert lines[-1] == f"error: {path}: 6 more problems not shown"


def test_saus_yaml_reports_every_problem_of_its_saus(tmp_path: Path) -> None:
    paper = tmp_path / "p"
    paper.mkdir()
    (paper / "saus.yaml").write_text(
        "paper: p\nsaus:\n"
        "  - {id: p-D9-001, dimension: D9, claim: c, source: s}\n"
        "  - {id: p-D1-001, dimension: D1, claim: c}\n"
        "  - {id: p-D1-002, dimension: D1, claim: c, source: s,"
        " expected: {metric: m, value: 1e-4}}\n"
    )
    with pytest.raises(UserError) as info:
        import_paper_saus(paper)
    lines = str(info.value).splitlines()
    assert [line.split(": ")[1] for line in lines] == [
        "saus[0].dimension (SAU p-D9-001)",
        "saus[1] (SAU p-D1-001)",
        "saus[2].expected.value (SAU p-D1-002)",
    ]
    assert all(line.startswith(f"{paper / 'saus.yaml'}: ") for line in lines)


@pytest.mark.parametrize(
    ("rubric", "field", "message"),
    [
        ([{"id": "a"}], "(root)", "expected an object {id, requirements, weight, sub_tasks"),
        (
            {"id": "r", "sub_tasks": {"id": "a"}},
            "(root).sub_tasks",
            "expected a list, not an object",
        ),
        (
            {"id": "r", "sub_tasks": [{"id": "a", "weight": "2"}]},
            "(root).sub_tasks[0].weight",
            "expected a number",
        ),
    ],
)
def test_rubric_of_the_wrong_shape_says_what_was_expected(
    tmp_path: Path, rubric: object, field: str, message: str
) -> None:
    paper = tmp_path / "p"
    paper.mkdir()
    (paper / "rubric.json").write_text(json.dumps(rubric))
    line = one_error(run("sabench.saus", paper, "--out", tmp_path / "saus.parquet"))
    assert line.startswith(f"error: {paper / 'rubric.json'}: {field}: {message}")


def test_rubric_json_parse_error_has_line_and_column(tmp_path: Path) -> None:
    paper = tmp_path / "p"
    paper.mkdir()
    (paper / "rubric.json").write_text('{"id": "r",\n "sub_tasks": [}\n')
    with pytest.raises(UserError, match=r"rubric.json: line 2, column 16: cannot parse: Expecting"):
        import_paper_saus(paper)


def test_missing_text_file(tmp_path: Path) -> None:
    paper = tmp_path / "p"
    paper.mkdir()
    (paper / "saus.yaml").write_text(
        "paper: p\nsaus:\n  - {id: p-D1-001, dimension: D1, claim: lr 0.1, source: Sec 2}\n"
    )
    line = one_error(
        run("sabench.saus", paper, "--text", tmp_path / "none.md", "--out", tmp_path / "s.parquet")
    )
    assert line == f"error: {tmp_path / 'none.md'}: not found"


def test_step_commands_exit_2_with_one_line(tmp_path: Path) -> None:
    """Commands run through ``steps.step`` (extract, agents, execute, judging, drift): the error is
    printed once, not once by the logger and once more."""
    line = one_error(
        run(
            "sabench.extract",
            tmp_path,
            "--text",
            tmp_path / "none.md",
            "--out",
            tmp_path / "s.parquet",
            "--extractor",
            "llm:x",
        )
    )
    assert line == f"error: {tmp_path / 'none.md'}: not found"
    line = one_error(
        run(
            "sabench.agents",
            "nobody",
            "p",
            "--agents-file",
            "config/agents.yaml",
            "--out",
            tmp_path,
        )
    )
    assert line == "error: config/agents.yaml: nobody: agent not defined"


def test_agents_yaml_parse_error_has_line_and_column(tmp_path: Path) -> None:
    agents = tmp_path / "agents.yaml"
    agents.write_text("a:\n  kind: [replay\n")
    with pytest.raises(
        UserError, match=r"agents.yaml: line 3, column 1: cannot parse: while parsing"
    ):
        load_agents(agents)
    line = one_error(
        run("sabench.agents", "a", "p", "--agents-file", agents, "--out", tmp_path / "r")
    )
    assert "line 3, column 1" in line


def test_drift_unknown_judge(tmp_path: Path) -> None:
    line = one_error(
        run(
            "sabench.drift",
            tmp_path,
            "--saus",
            tmp_path / "s.parquet",
            "--judges",
            "statc",
            "--out",
            tmp_path / "d.parquet",
        )
    )
    assert "--judges: unknown judge 'statc'" in line


def test_corrupt_pdf_is_said_once(tmp_path: Path) -> None:
    paper = tmp_path / "p"
    paper.mkdir()
    (paper / "paper.pdf").write_bytes(b"%PDF-1.4 garbage" * 10)
    line = one_error(run("sabench.ingest", paper, "--out", tmp_path / "out"))
    assert line.startswith(f"error: {paper / 'paper.pdf'}: unreadable PDF")


def test_verdict_file_errors(tmp_path: Path) -> None:
    path = tmp_path / "v.json"
    path.write_text('{"dimensions": {"D1": {"claims": [\n  {"id": "a", "score": }]}}}')
    with pytest.raises(UserError, match=r"v.json: line 2, column 24: cannot parse"):
        read_verdicts(path)
    path.write_text(json.dumps({"dimensions": {"D1": {"claims": [{"id": "a", "score": "high"}]}}}))
    with pytest.raises(UserError, match=r"dimensions.D1.claims\[0\].score: expected a number"):
        read_verdicts(path)
    path.write_text(json.dumps({"node_results": [{"score": 1}]}))
    with pytest.raises(UserError, match=r"node_results\[0\]: expected an object with id and score"):
        read_verdicts(path)


def test_step_logs_the_error_to_its_file_and_says_it_once(tmp_path: Path) -> None:
    """A workflow script's step: the rule's log file records the error, stderr shows it once."""
    log = tmp_path / "logs" / "saus.log"
    code = (
        "from sabench.errors import UserError\n"
        "from sabench.steps import step\n"
        f"with step({str(log)!r}, 'saus'):\n"
        "    raise UserError('p/saus.yaml', 'saus[0].id', 'missing')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert one_error(proc) == "error: p/saus.yaml: saus[0].id: missing"
    assert "saus ERROR p/saus.yaml: saus[0].id: missing" in log.read_text()
