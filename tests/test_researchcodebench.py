"""ResearchCodeBench import: snapshots (git directory and checkout), nested snippets, malformed
markers, SAUs (dimensions, grounding, checks), the reference submission, the leaderboard, and the
real snapshot when it is on this machine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sabench.errors import UserError
from sabench.peer_data.researchcodebench import (
    CHECK_START_S,
    NO_PASSAGE,
    TEST_TIMEOUT_S,
    RCBPaper,
    export,
    latex_to_markdown,
    leaderboard,
    load_papers,
    main,
    open_snapshot,
    parse_snippets,
    reference_submission,
    snippet_saus,
    strip_markers,
)

REAL = Path("/work/.mirror/PatrickHua+ResearchCodeBench/repo")
PAPER = "toy-ridge"

TEX = r"""\documentclass{article}
\usepackage{amsmath}
\newcommand{\method}{RidgeGD}
\title{Toy ridge regression}
\begin{document}
\maketitle
\begin{abstract}
We study \method, ridge regression fitted by gradient descent. % a comment the text drops
\end{abstract}
\section{Method}
\method{} minimises the mean squared error plus an L2 penalty on the weights \cite{hoerl1970}:
\begin{equation}
L(w) = \frac{1}{n} \lVert X w - y \rVert^2 + \lambda \lVert w \rVert^2 \label{eq:loss}
\end{equation}
The regularisation strength is $\lambda = 0.1$ and the learning rate of gradient descent is 0.05.
Each gradient step moves the weights against the gradient of the loss, scaled by the learning rate.
\subsection{Data}
We split the data into a training set and a test set, holding out a quarter of the rows for the test.
\begin{figure}[t]
\includegraphics[width=\linewidth]{fig.png}
\caption{Training curves of \method.}
\end{figure}
\end{document}
"""

MODEL = """import numpy as np

from utils import as_rows


class Ridge:
    def __init__(self, dim):
        # <paper2code name="init">
        # <paper2code name="regularisation strength">
        self.lam = 0.1
        # </paper2code name="regularisation strength">
          #   <paper2code   name="learning rate">
        self.lr = 0.05
        # </paper2code name="learning rate">
        self.w = np.zeros(dim)
        # </paper2code name="init">

    def loss(self, X, y):
        # <paper2code name="ridge loss">
        residual = as_rows(X) @ self.w - y  # the residual
        return np.mean(residual ** 2) + self.lam * np.sum(self.w ** 2)
        # </paper2code name="ridge loss">

    def step(self, X, y):
        # <paper2code name="gradient step">
        # <paper2code name="gradient">

        grad = 2 * X.T @ (X @ self.w - y) / len(y) + 2 * self.lam * self.w
        # </paper2code name="gradient">
        # <paper2code name="update">
        self.w = self.w - self.lr * grad
        # </paper2code name="update">
        # </paper2code name="gradient step">


def split_data(X, y):
    # <paper2code name="data split">
    n_test = len(y) // 4
    return X[n_test:], y[n_test:], X[:n_test], y[:n_test]
    # </paper2code name="data split">


def checksum(blob):
    # <paper2code name="checksum helper">
    total = bytearray(blob)
    # </paper2code name="checksum helper">
    return total
"""

UTILS = "import numpy as np\n\n\ndef as_rows(X):\n    return np.atleast_2d(X)\n"

TESTS = """import unittest

import numpy as np

from model import Ridge, split_data
from model_ref import Ridge as RidgeRef


class TestRidge(unittest.TestCase):
    def test_matches_the_reference(self):
        rng = np.random.default_rng(0)
        X, y = rng.normal(size=(40, 3)), rng.normal(size=40)
        ours, ref = Ridge(3), RidgeRef(3)
        for _ in range(5):
            ours.step(X, y)
            ref.step(X, y)
        self.assertTrue(np.allclose(ours.w, ref.w))
        self.assertAlmostEqual(ours.loss(X, y), ref.loss(X, y))
        self.assertEqual(len(split_data(X, y)[2]), 10)

    def test_pretrained_file(self):
        with open("pretrained.bin", "rb") as fh:
            self.assertEqual(fh.read(), bytes(range(256)))


if __name__ == "__main__":
    unittest.main()
"""

PAPERS_YAML = f"""- id: {PAPER}
  title: Toy Ridge Regression
  annotated_file_paths: model.py
  context_file_paths: utils.py
- id: not-in-this-snapshot
  title: A paper without a folder
  annotated_file_paths: x.py
"""

#: Two models' per-snippet results: (snippet, lines, passed) per paper, and the published scores.
RESULTS = {
    "MODEL_A": [("init", 3, True), ("ridge loss", 2, False), ("update", 1, True)],
    "MODEL_B": [("init", 3, False), ("ridge loss", 2, True), ("update", 1, False)],
}
PUBLISHED = {  # MODEL_A as RCB computes it; MODEL_B published 0.25 off on the line rate
    "MODEL_A": {"line": 100 * 4 / 6, "task": 100 * 2 / 3},
    "MODEL_B": {"line": 100 * 2 / 6 + 0.25, "task": 100 * 1 / 3},
}


def _stats() -> dict:
    per_paper = {
        model: {
            "results": {
                name: [
                    {
                        "snippet_code_line_count": n,
                        "completion_idx": 0,
                        "passed": ok,
                        "exit_code": 0 if ok else 1,
                    }
                ]
                for name, n, ok in rows
            }
        }
        for model, rows in RESULTS.items()
    }
    scores = {"MODEL_A": {"mean": 100 * 4 / 6, "std": 0.0}, "MODEL_B": {"mean": 50.0, "std": 0.0}}
    overall = {
        m: {
            "line_rates": {"mean": p["line"], "std": 0.0, "rates": [p["line"]]},
            "task_rates": {"mean": p["task"], "std": 0.0, "rates": [p["task"]]},
            "llm_cfg": {"pretty_name": m.title()},
        }
        for m, p in PUBLISHED.items()
    }
    return {
        "results": {PAPER: {"paper_metadata": {}, "results": per_paper, "problem_scores": scores}},
        "overall_scores": overall,
    }


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A folder laid out as RCB's repository, with one toy paper."""
    root = tmp_path / "rcb"
    folder = root / "pset" / PAPER
    folder.mkdir(parents=True)
    (root / "pset" / "papers.yaml").write_text(PAPERS_YAML)
    files = {
        "paper2code_paper.tex": TEX,
        "paper2code.yaml": "mask_file_path: model.py\ntest_entry_point: paper2code_test.py\n",
        "model.py": MODEL,
        "model_ref.py": strip_markers(MODEL),
        "utils.py": UTILS,
        "paper2code_test.py": TESTS,
        "README.md": "# the authors' readme\n",
    }
    for name, text in files.items():
        (folder / name).write_text(text)
    (folder / "pretrained.bin").write_bytes(bytes(range(256)))
    stats = root / "outputs" / "20llms_greedy" / "2025-01-01-00-00-00" / "overall_stats.json"
    stats.parent.mkdir(parents=True)
    stats.write_text(json.dumps(_stats()))
    return root


@pytest.fixture
def bare(checkout: Path, tmp_path: Path) -> Path:
    """The same files committed into a bare git repository (as ``fetch`` leaves RCB)."""
    git_dir = tmp_path / "rcb.git"
    subprocess.run(["git", "init", "-q", "--bare", str(git_dir)], check=True)
    base = ["git", f"--git-dir={git_dir}", f"--work-tree={checkout}"]
    subprocess.run([*base, "add", "-A"], check=True)
    who = ["-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*base, *who, "commit", "-q", "-m", "toy"], check=True)
    return git_dir


@pytest.fixture
def paper(checkout: Path) -> RCBPaper:
    return load_papers(open_snapshot(checkout))[0]


def _line(text: str, needle: str) -> int:
    """The 1-based line of the first line of ``text`` holding ``needle``."""
    return next(i for i, line in enumerate(text.split("\n"), 1) if needle in line)


def test_both_forms_of_the_snapshot_give_the_same_papers(checkout: Path, bare: Path) -> None:
    from_checkout = load_papers(open_snapshot(checkout))
    from_git = load_papers(open_snapshot(bare))
    assert [p.paper for p in from_git] == [PAPER]  # the listed paper without a folder is skipped
    assert from_git == from_checkout
    assert open_snapshot(bare).git and not open_snapshot(checkout).git
    got = from_git[0]
    assert got.binary == {"pretrained.bin": bytes(range(256))}
    assert got.annotated == ["model.py"] and got.context == ["utils.py"]
    assert got.test_entry_point == "paper2code_test.py" and got.title == "Toy Ridge Regression"


def test_neither_form_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UserError) as err:
        open_snapshot(tmp_path)
    assert str(err.value).startswith(str(tmp_path)) and "\n" not in str(err.value)


def test_papers_asked_for_must_be_there_and_ids_must_be_names(checkout: Path) -> None:
    snapshot = open_snapshot(checkout)
    assert [p.paper for p in load_papers(snapshot, [PAPER])] == [PAPER]
    with pytest.raises(UserError, match="not in the snapshot: nope"):
        load_papers(snapshot, [PAPER, "nope"])
    (checkout / "pset" / "papers.yaml").write_text("- id: ../escape\n")
    with pytest.raises(UserError, match=r"id '\.\./escape': not a paper id"):
        load_papers(open_snapshot(checkout))


def test_nested_snippets_have_their_own_line_ranges(paper: RCBPaper) -> None:
    by_name = {s.name: s for s in paper.snippets}
    init, lam, lr = by_name["init"], by_name["regularisation strength"], by_name["learning rate"]
    assert init.start_line == _line(MODEL, '<paper2code name="init">') + 1
    assert init.end_line == _line(MODEL, '</paper2code name="init">') - 1
    assert lam.start_line == lam.end_line == _line(MODEL, "self.lam = 0.1")
    assert lr.start_line == lr.end_line == _line(MODEL, "self.lr = 0.05")  # spaced marker
    assert (init.parent, init.depth, lam.parent, lam.depth) == (None, 0, "init", 1)
    assert "paper2code" not in init.code and "self.lr = 0.05" in init.code
    assert init.n_lines == 3  # RCB's count: code lines of the snippet, its children's included
    step = by_name["gradient step"]
    assert step.n_lines == 2 and by_name["gradient"].n_lines == 1  # blank and comment lines out
    assert by_name["ridge loss"].n_lines == 2  # a trailing comment keeps its line
    assert [s.name for s in paper.snippets][:3] == [
        "init",
        "regularisation strength",
        "learning rate",
    ]
    assert all(s.path == "model.py" for s in paper.snippets)


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        ('x = 1\n# <paper2code name="a">\ny = 2\n', 2, "'a' is never closed"),
        (
            '# <paper2code name="a">\n# <paper2code name="b">\n# </paper2code name="a">\n',
            3,
            "but 'b'",
        ),
        ('x = 1\n# </paper2code name="a">\n', 2, "closed but never opened"),
        ("# <paper2code name=a>\nx = 1\n", 1, "malformed snippet marker"),
    ],
    ids=["unclosed", "mismatched", "never-opened", "malformed"],
)
def test_bad_markers_name_the_file_and_line(text: str, line: int, says: str) -> None:
    with pytest.raises(UserError) as err:
        parse_snippets("pset/p/model.py", text)
    assert str(err.value).startswith(f"pset/p/model.py: line {line}: ")
    assert says in str(err.value)


def test_latex_becomes_text_with_headings_math_and_macros(paper: RCBPaper) -> None:
    text = paper.text
    assert text.startswith("# Toy Ridge Regression\n")
    assert "## Method" in text and "### Data" in text and "## Abstract" in text
    assert "We study RidgeGD, ridge regression" in text  # the macro expanded
    assert "a comment the text drops" not in text and "hoerl1970" not in text
    assert "$\\lambda = 0.1$" in text and "$$L(w) = \\frac{1}{n}" in text
    assert "Training curves of RidgeGD." in text and "fig.png" not in text
    assert latex_to_markdown(r"A \textbf{bold} word~here.", "T") == "# T\n\nA bold word here.\n"


def test_saus_dimensions_grounding_and_parents(paper: RCBPaper) -> None:
    from sabench.contracts import SAU_COLUMNS

    rows = {r["sau_id"]: r for r in snippet_saus(paper)}
    assert all(tuple(r) == SAU_COLUMNS for r in rows.values())
    dims = {k.removeprefix(f"{PAPER}-"): r["dimension"] for k, r in rows.items()}
    assert dims == {
        "init": "D1",
        "regularisation-strength": "D1",
        "learning-rate": "D1",
        "ridge-loss": "D2",
        "gradient-step": "D4",
        "gradient": "D2",
        "update": "D2",
        "data-split": "D3",
        "checksum-helper": "D2",
    }
    lam = rows[f"{PAPER}-regularisation-strength"]
    assert lam["grounded"] is True and "$\\lambda = 0.1$" in lam["source"]
    assert lam["source"] in paper.text and lam["source"] in lam["claim"]
    assert lam["parent"] == f"{PAPER}-init" and rows[f"{PAPER}-init"]["parent"] is None
    assert rows[f"{PAPER}-data-split"]["source"].startswith("We split the data")
    nothing = rows[f"{PAPER}-checksum-helper"]
    assert nothing["source"] == NO_PASSAGE and nothing["grounded"] is False
    assert {r["origin"] for r in rows.values()} == {"researchcodebench"}
    assert rows[f"{PAPER}-init"]["weight"] == 3.0 and rows[f"{PAPER}-init"]["expected"] is None
    assert len({r["check"] for r in rows.values()}) == 1  # one suite per paper, as RCB scores


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_the_reference_submission_passes_the_authors_tests(paper: RCBPaper, tmp_path: Path) -> None:
    dest = reference_submission(paper, tmp_path / "ref")
    assert "paper2code" not in (dest / "model.py").read_text()  # markers stripped
    assert not (dest / "paper2code_paper.tex").exists() and not (dest / "README.md").exists()
    done = _run(["-m", "unittest", "paper2code_test"], dest)
    assert done.returncode == 0, done.stdout + done.stderr


def _agent_submission(paper: RCBPaper, tmp_path: Path, model: str | None) -> Path:
    """A submission holding only the annotated file (and a test file of its own to be ignored)."""
    sub = tmp_path / "sub"
    sub.mkdir(parents=True)
    if model is not None:
        (sub / "model.py").write_text(model)
    (sub / "paper2code_test.py").write_text("print('the agent\\'s own test')\n")
    return sub


@pytest.mark.parametrize(
    ("change", "code", "says"),
    [
        (None, 0, "the authors' tests pass"),
        (("self.lam = 0.1", "self.lam = 0.2"), 1, "AssertionError: the authors' tests fail"),
        (
            ("residual = as_rows", "raise NotImplementedError\n        residual = as_rows"),
            1,
            "NotImplementedError",
        ),
        ("delete", 1, "ModuleNotFoundError: the submission has no model.py"),
        (
            ("import numpy as np\n", "import numpy as np\nimport no_such_pkg\n"),
            1,
            "ImportError: the sandbox env lacks 'no_such_pkg'",
        ),
    ],
    ids=["reference", "value-drift", "stub", "missing", "env-lacks-a-package"],
)
def test_the_check_runs_the_authors_tests_on_any_submission(
    paper: RCBPaper, tmp_path: Path, change: tuple[str, str] | str | None, code: int, says: str
) -> None:
    model = strip_markers(MODEL)
    if isinstance(change, tuple):
        model = model.replace(*change)
    sub = _agent_submission(paper, tmp_path, None if change == "delete" else model)
    done = _run(["-c", snippet_saus(paper)[0]["check"]], sub)
    assert done.returncode == code, done.stdout + done.stderr
    assert says in done.stdout + done.stderr


@pytest.mark.bwrap
def test_the_check_in_the_exec_judges_sandbox(
    paper: RCBPaper, runtime: dict, tmp_path: Path
) -> None:
    from sabench.checks import run_check

    check = snippet_saus(paper)[0]["check"]
    model = strip_markers(MODEL)
    lacking = model.replace("import numpy as np\n", "import numpy as np\nimport no_such_pkg\n")
    cases = {"good": model, "bad": model.replace("self.lr = 0.05", "self.lr = 0.5")}
    cases |= {"gone": None, "env": lacking}
    outs = {
        name: run_check(
            check, _agent_submission(paper, tmp_path / name, code), runtime, {"time_limit_s": 60}
        )
        for name, code in cases.items()
    }
    kinds = {name: out.kind for name, out in outs.items()}
    assert kinds == {"good": "pass", "bad": "fail", "gone": "missing", "env": "error"}, outs
    assert "no_such_pkg" in outs["env"].detail  # the env's lack is never the code's drift


def test_leaderboard_matches_a_hand_computation(checkout: Path, bare: Path) -> None:
    for data in (checkout, bare):
        rows = {r["model"]: r for r in leaderboard(open_snapshot(data))}
        a, b = rows["MODEL_A"], rows["MODEL_B"]
        assert a["scaled_line_rate"] == pytest.approx(100 * (3 + 1) / (3 + 2 + 1))
        assert a["success_rate"] == pytest.approx(100 * 2 / 3)
        assert b["scaled_line_rate"] == pytest.approx(100 * 2 / 6)
        assert b["success_rate"] == pytest.approx(100 / 3)
        assert a["line_rate_diff"] == pytest.approx(0.0) and a[
            "success_rate_diff"
        ] == pytest.approx(0.0)
        assert (
            b["line_rate_diff"] == pytest.approx(0.25)
            and b["published_line_rate"] == PUBLISHED["MODEL_B"]["line"]
        )
        assert a["paper_max_diff"] == pytest.approx(0.0)  # problem_scores: RCB's per-paper rate
        assert b["paper_max_diff"] == pytest.approx(50.0 - 100 * 2 / 6)
        assert (a["n_snippets"], a["n_lines"], a["name"]) == (3, 6, "Model_A")
        assert list(rows) == ["MODEL_A", "MODEL_B"]  # best first


def test_the_command_writes_what_the_workflow_reads(
    bare: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sabench.ingest import normalise_text
    from sabench.saus import ground, import_sau_file

    out = tmp_path / "out"
    assert main(["--data", str(bare), "--out", str(out)]) == 0
    line = capsys.readouterr().out.strip()
    assert (
        line.startswith("researchcodebench: papers=1 snippets=9 grounded=")
        and "published_max_diff=0.25" in line
    )
    text = (out / "papers" / PAPER / "paper.md").read_text()
    assert normalise_text(text) == text  # ingest leaves it as it is: grounding sees this text
    rows = import_sau_file(out / "saus" / f"{PAPER}.json", PAPER)  # the curated schema holds
    ground(rows, text)
    ours = snippet_saus(load_papers(open_snapshot(bare))[0])
    assert [r["sau_id"] for r in rows] == [r["sau_id"] for r in ours]
    for got, want in zip(rows, ours, strict=True):
        same = ("dimension", "claim", "source", "weight", "origin", "category", "grounded", "check")
        assert {k: got[k] for k in same} == {k: want[k] for k in same}, got["sau_id"]
    by_id = {r["sau_id"]: r for r in rows}  # parent: the path of ancestors from the top
    assert by_id[f"{PAPER}-init"]["parent"] is None
    assert by_id[f"{PAPER}-learning-rate"]["parent"] == f"{PAPER}-init"
    assert by_id[f"{PAPER}-update"]["parent"] == f"{PAPER}-gradient-step"
    assert by_id[f"{PAPER}-update"]["parent_weights"] == [2.0]
    assert {r["origin"] for r in rows} == {"researchcodebench"}
    # one check file for the paper, named by every SAU, instead of a copy in each
    saus = json.loads((out / "saus" / f"{PAPER}.json").read_text())["saus"]
    assert {s["check_file"] for s in saus} == {f"checks/{PAPER}.py"}
    assert not any("check" in s for s in saus)
    assert (out / "saus" / "checks" / f"{PAPER}.py").read_text() == ours[0]["check"]
    summary = export(bare, tmp_path / "again")
    assert summary["dimensions"] == {"D1": 3, "D2": 4, "D3": 1, "D4": 1} and summary["models"] == 2
    config = yaml.safe_load((out / "config.yaml").read_text())
    assert config["saus_path"] == f"{out}/saus/{{paper}}.json"
    assert config["papers_dir"] == f"{out}/papers" and config["agents_file"] == f"{out}/agents.yaml"
    assert config["judge_settings"] == {"exec": {"time_limit_s": TEST_TIMEOUT_S + CHECK_START_S}}
    agents = (out / "agents.yaml").read_text()
    assert (
        f"{out}/reference/{{paper}}" in agents
        and (out / "reference" / PAPER / "model.py").is_file()
    )
    assert json.loads((out / "leaderboard.json").read_text())[0]["model"] == "MODEL_A"
    assert main(["--data", str(tmp_path / "nothing"), "--out", str(out)]) == 2


def test_the_config_gives_a_check_more_time_than_the_tests(
    checkout: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sabench.grid import load_settings
    from sabench.judges.exec_judge import resolve_exec_settings

    out = tmp_path / "slow"
    assert main(["--data", str(checkout), "--out", str(out), "--test-timeout", "300"]) == 0
    check = (out / "saus" / "checks" / f"{PAPER}.py").read_text()
    assert "timeout=300)" in check and "did not finish in 300 s" in check
    base = yaml.safe_load((Path(__file__).parents[1] / "config" / "config.yaml").read_text())
    config = base | yaml.safe_load((out / "config.yaml").read_text())  # as --configfile merges
    settings = load_settings(config, tmp_path)
    assert list(settings.agents) == ["rcb_reference"] and settings.papers == [PAPER]
    exec_settings = resolve_exec_settings(settings.config["judge_settings"]["exec"])
    assert exec_settings["time_limit_s"] == 300 + CHECK_START_S
    capsys.readouterr()
    assert main(["--data", str(checkout), "--out", str(out), "--test-timeout", "0"]) == 2
    said = capsys.readouterr().err.strip()
    assert "--test-timeout: must be a positive number" in said and "\n" not in said


@pytest.mark.skipif(
    not REAL.is_dir(),
    reason=f"no ResearchCodeBench snapshot at {REAL} (fetch github:PatrickHua/ResearchCodeBench)",
)
def test_the_real_snapshot() -> None:
    snapshot = open_snapshot(REAL)
    papers = load_papers(snapshot)
    snippets = [s for p in papers for s in p.snippets]
    assert len(papers) >= 20 and len(snippets) >= 200
    board = leaderboard(snapshot)
    assert len(board) >= 20
    for row in board:
        assert row["line_rate_diff"] <= 0.005 and row["success_rate_diff"] <= 0.005, row
        assert row["paper_max_diff"] <= 0.005, row
    # our line counts are RCB's: the same weights as the published per-snippet results
    stats = json.loads(
        snapshot.read("outputs/20llms_greedy/2025-05-12-17-13-20/overall_stats.json")
    )
    some_model = {
        p: next(iter(v["results"].values()))["results"] for p, v in stats["results"].items()
    }
    for p in papers:
        for s in p.snippets:
            assert some_model[p.paper][s.name][0]["snippet_code_line_count"] == s.n_lines, (
                p.paper,
                s.name,
            )
    rows = [r for p in papers for r in snippet_saus(p)]
    assert sum(bool(r["grounded"]) for r in rows) / len(rows) >= 0.8
    assert {r["dimension"] for r in rows} == {"D1", "D2", "D3", "D4"}


@pytest.mark.skipif(not REAL.is_dir(), reason=f"no ResearchCodeBench snapshot at {REAL}")
def test_the_real_export_imports_and_is_small(tmp_path: Path) -> None:
    from sabench.saus import import_sau_file

    export(REAL, tmp_path)
    saus = tmp_path / "saus"
    size = sum(f.stat().st_size for f in saus.rglob("*") if f.is_file())
    assert size < 1_000_000, size  # a check per SAU, its embedded files each time, was 5.8 MB
    ours = {r["sau_id"]: r for p in load_papers(open_snapshot(REAL)) for r in snippet_saus(p)}
    rows = [r for f in sorted(saus.glob("*.json")) for r in import_sau_file(f, f.stem)]
    assert sorted(r["sau_id"] for r in rows) == sorted(ours)
    for row in rows:
        want = ours[row["sau_id"]]
        assert row["check"] == want["check"] and row["origin"] == "researchcodebench"
        assert (row["parent"] or "/").split("/")[-1] == (want["parent"] or ""), row["sau_id"]
    assert sum(1 for r in rows if r["parent"] and "/" in r["parent"]) > 0  # nested deeper
