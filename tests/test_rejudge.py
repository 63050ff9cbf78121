"""Re-judging other benchmarks' data: safe archive replay, the generated grid, the reference judge,
and (on ../shared) SA-Bench's own table and PaperBench's final scores through snakemake."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pandas as pd
import pytest
import yaml

from sabench.agents import run_agent
from sabench.errors import UserError
from sabench.grid import load_settings
from sabench.judges.reference import judge_reference, zero_verdict
from sabench.peer_data.archive import clean_member, extract_member
from sabench.peer_data.calibrate import paperbench_table, sabench_table
from sabench.saus import import_paper_saus

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
#: A subset of SA-Bench for CI (the smallest SAU sets); benchmarks/rejudge.py does all 20 papers.
SABENCH_PAPERS = ("nfig", "universal-neural-operators", "mrq")


# --------------------------------------------------------------------------- archives


def _add(tar: tarfile.TarFile, name: str, data: bytes = b"x = 1\n", **attrs: object) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data) if attrs.get("type", tarfile.REGTYPE) == tarfile.REGTYPE else 0
    for key, value in attrs.items():
        setattr(info, key, value)
    tar.addfile(info, io.BytesIO(data) if info.size else None)


def _archive(path: Path, members: list[tuple[str, dict]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, attrs in members:
            _add(tar, name, **attrs)
    return path


@pytest.mark.parametrize("inflated", [True, False], ids=["in-memory", "streamed"])
def test_extract_member_strips_prefix_and_refuses_escapes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inflated: bool
) -> None:
    """The same files and refusals whether the gzip archive is inflated in memory (a small one)
    or streamed (a large one)."""
    from sabench.peer_data import archive as archive_mod

    if not inflated:
        monkeypatch.setattr(archive_mod, "IN_MEMORY_BYTES", 0)
    archive = _archive(
        tmp_path / "runs.tar.gz",
        [
            ("p1/", {"type": tarfile.DIRTYPE}),
            ("p1/src/a.py", {}),
            ("./p1/run.sh", {"mode": 0o755}),
            ("p1/.git/HEAD", {}),
            ("p1/src/__pycache__/a.cpython-311.pyc", {}),
            ("p1/../evil.py", {}),
            ("/abs/p1/x.py", {}),
            ("p1/ok_link", {"type": tarfile.SYMTYPE, "linkname": "src/a.py"}),
            ("p1/up_link", {"type": tarfile.SYMTYPE, "linkname": "../p2/b.py"}),
            ("p1/abs_link", {"type": tarfile.SYMTYPE, "linkname": "/etc/passwd"}),
            ("p1/hard", {"type": tarfile.LNKTYPE, "linkname": "p1/src/a.py"}),
            ("p1/hard_out", {"type": tarfile.LNKTYPE, "linkname": "p2/b.py"}),
            ("p1/dev", {"type": tarfile.CHRTYPE}),
            ("p2/b.py", {}),
        ],
    )
    with archive_mod._open(archive) as tar:
        assert isinstance(tar.fileobj, io.BytesIO) == inflated
    dest = tmp_path / "sub"
    dest.mkdir()
    done = extract_member(archive, "p1", dest)
    files = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if not p.is_dir())
    assert files == ["hard", "ok_link", "run.sh", "src/a.py"]
    assert os.readlink(dest / "ok_link") == "src/a.py"
    assert os.access(dest / "run.sh", os.X_OK)
    refused = dict(done.refused)
    assert set(refused) == {"p1/../evil.py", "p1/up_link", "p1/abs_link", "p1/hard_out", "p1/dev"}
    assert done.found and done.n_files == 3
    assert not (tmp_path / "evil.py").exists() and not (tmp_path / "p2").exists()
    whole = tmp_path / "whole"
    whole.mkdir()
    assert extract_member(archive, "", whole).n_files == 4  # p2/b.py too
    with pytest.raises(ValueError):
        clean_member("../x")
    with pytest.raises(ValueError):
        clean_member("/x")


def test_link_through_a_linked_folder_cannot_escape(tmp_path: Path) -> None:
    """``d -> .`` then ``d/x -> ../y``: lexically inside, physically one level above the root."""
    archive = _archive(
        tmp_path / "a.tar",
        [
            ("p/d", {"type": tarfile.SYMTYPE, "linkname": "."}),
            ("p/d/x", {"type": tarfile.SYMTYPE, "linkname": "../y"}),
            ("p/d/f.py", {}),
        ],
    )
    dest = tmp_path / "sub"
    dest.mkdir()
    done = extract_member(archive, "p", dest)
    assert "p/d/x" in dict(done.refused)
    assert not (dest / "x").is_symlink()
    assert (dest / "f.py").is_file()  # written through the inside link, inside the root


def test_replay_agent_from_archive(tmp_path: Path) -> None:
    _archive(tmp_path / "cfg.tar.gz", [("p1/m.py", {}), ("p1/../../x.py", {})])
    agent = {"kind": "replay", "archive": "cfg.tar.gz", "member": "{paper}"}
    out = tmp_path / "run"
    record = run_agent("cfg", agent, "p1", "0", out / "submission", out / "agent.json", tmp_path)
    assert record["status"] == "replayed" and record["n_files"] == 1
    assert record["refused"] == ["p1/../../x.py: '..' in path"]
    missing = run_agent("cfg", agent, "p9", "0", out / "s2", out / "a2.json", tmp_path)
    assert missing["status"] == "missing_source" and "p9" in missing["error"]
    gone = {"kind": "replay", "archive": "nope.tar.gz", "member": "{paper}"}
    assert run_agent("c", gone, "p1", "0", out / "s3", out / "a3.json", tmp_path)["status"] == (
        "missing_source"
    )


# --------------------------------------------------------------------------- the generated grid


def _sabench_folder(root: Path) -> Path:
    for paper in ("p1", "p2"):
        (root / "papers" / paper).mkdir(parents=True)
        (root / "papers" / paper / "paper.md").write_text("# Paper\n")
        (root / "saus").mkdir(exist_ok=True)
        saus = {
            "paper_id": paper,
            "D1": [{"id": f"{paper}-D1-001", "claim": "lr is 0.1", "source": "s"}],
            "D2": [{"id": f"{paper}-D2-001", "claim": "loss is mse", "source": "s"}],
        }
        (root / "saus" / f"{paper}.json").write_text(json.dumps(saus))
    (root / "runs" / "unpacked" / "p1").mkdir(parents=True)
    _archive(root / "runs" / "cfg_a.tar.gz", [("p1/a.py", {})])
    (root / "runs" / "notes.txt").write_text("not a run")
    return root


def test_sabench_data_generates_agents_papers_and_reference(tmp_path: Path) -> None:
    data = _sabench_folder(tmp_path / "data")
    config = {"sabench_data": str(data), "agents_file": None, "judges": ["reference", "static"]}
    settings = load_settings(config, REPO)
    assert set(settings.agents) == {"cfg_a", "unpacked"}
    assert settings.agents["cfg_a"]["archive"].endswith("runs/cfg_a.tar.gz")
    assert settings.agents["cfg_a"]["member"] == "{paper}"
    assert settings.agents["unpacked"]["path"].endswith("runs/unpacked/{paper}")
    # SA-Bench scores a configuration's missing run 0: its agents keep that convention
    assert {a["missing_source"] for a in settings.agents.values()} == {"zero"}
    assert settings.papers == ["p1", "p2"] and len(settings.runs) == 4
    assert settings.config["saus_path"].endswith("saus/{paper}.json")
    assert settings.config["judge_settings"]["reference"]["format"] == "sabench"
    sub = load_settings({**config, "agents": "cfg_a", "papers": "p2"}, REPO)
    assert sub.runs == [("cfg_a", "p2", "0")]
    rows = import_paper_saus(data / "papers" / "p1", [data / "saus" / "p1.json"])
    assert [r["sau_id"] for r in rows] == ["p1-D1-001", "p1-D2-001"]
    assert {r["origin"] for r in rows} == {"sabench"}


@pytest.mark.parametrize(
    ("config", "field", "message"),
    [
        ({"sabench_data": "/nonexistent/x"}, "sabench_data", "folder not found"),
        ({"sabench_data": "D", "paperbench_data": "D"}, "paperbench_data", "not both"),
        ({"judges": ["reference"]}, "judge_settings.reference.path", "needs the verdict files"),
        ({"saus_path": "saus/all.json"}, "saus_path", "{paper}"),
    ],
)
def test_benchmark_config_errors(tmp_path: Path, config: dict, field: str, message: str) -> None:
    data = _sabench_folder(tmp_path / "data")
    config = {k: (str(data) if v == "D" else v) for k, v in config.items()}
    with pytest.raises(UserError) as info:
        load_settings(config, REPO, config_path="cfg.yaml")
    assert field in str(info.value) and message in str(info.value)


# --------------------------------------------------------------------------- the reference judge


def test_reference_judge_sabench_and_paperbench(tmp_path: Path) -> None:
    saus = [
        {"sau_id": "a", "dimension": "D1"},
        {"sau_id": "b", "dimension": "D2"},
        {"sau_id": "c", "dimension": "D3"},
        {"sau_id": "d", "dimension": "D4"},
    ]
    claims = {
        "D1": [
            {"id": "a", "score": 1.0, "evidence": [{"file": "m.py", "lines": "3-5"}]},
            {"id": "zz", "score": 1.0},  # not an SAU of ours: ignored
        ],
        "D2": [{"id": "b", "score": 0.25, "judge_reasoning": "partly", "evidence": []}],
        "D3": [{"id": "c", "score": 0.0, "judge_reasoning": "uses CIFAR-10 instead of ImageNet"}],
    }
    ref = tmp_path / "ref" / "A" / "P.json"
    ref.parent.mkdir(parents=True)
    ref.write_text(json.dumps({"dimensions": {d: {"claims": c} for d, c in claims.items()}}))
    settings = {"path": str(tmp_path / "ref" / "{agent}" / "{paper}.json"), "format": "sabench"}
    got = judge_reference(settings, saus, {"agent": "A", "paper": "P", "seed": "0"})
    assert [(j.sau_id, j.verdict, j.score) for j in got] == [
        ("a", "aligned", 1.0),
        ("b", "partial", 0.25),
        ("c", "drifted", 0.0),
    ]  # d has no verdict: no row
    assert got[0].evidence[0].start == 3 and got[0].evidence[0].end == 5
    assert judge_reference(settings, saus, {"agent": "B", "paper": "P"}) == []
    grade = tmp_path / "grade.json"
    reasoning = "# Expectations\nno placeholder\n# Reality\nNothing about it.\n# Score\n0"
    nodes = [{"id": "a", "score": 1}, {"id": "b", "score": 0, "reasoning": reasoning}]
    grade.write_text(json.dumps({"final_score": 0.5, "node_results": nodes}))
    got = judge_reference({"path": str(grade), "format": "auto"}, saus, {})
    assert [(j.sau_id, j.verdict, j.failure_mode) for j in got] == [
        ("a", "aligned", None),
        ("b", "missing", "omission"),  # the cue words of the expectation do not count
    ]
    assert zero_verdict("the train function is a stub")[0] == "placeholder"


# --------------------------------------------------------------------------- through snakemake


def snakemake(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SNAKEMAKE")}
    proc = subprocess.run(
        [SNAKEMAKE, "--cores", "2", *args], cwd=REPO, capture_output=True, text=True, env=env
    )
    if proc.returncode != 0:
        pytest.fail(f"snakemake {' '.join(args)}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def sabench_expected(data: Path, papers: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """Straight from the JSON: per configuration the mean over papers of the mean over dimensions of
    the mean claim score (SA-Bench's rule), and the same from its rounded per-paper overall_score."""
    out: dict[str, dict[str, float]] = {}
    for folder in sorted((data / "reference").iterdir()):
        ours, published = [], []
        for paper in papers:
            ref = json.loads((folder / f"{paper}.json").read_text())
            dims = [
                sum(c["score"] for c in block["claims"]) / len(block["claims"])
                for block in ref["dimensions"].values()
                if block["claims"]
            ]
            ours.append(sum(dims) / len(dims))
            published.append(ref["overall_score"])
        out[folder.name] = {
            "claims": sum(ours) / len(ours),
            "published": sum(published) / len(published),
        }
    return out


@pytest.mark.shared
@pytest.mark.workflow
def test_sabench_table_through_snakemake(sabench_data: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    snakemake(
        "--configfile",
        "config/examples/sabench.yaml",
        "--config",
        f"sabench_data={sabench_data}",
        f"results={results}",
        f"papers={','.join(SABENCH_PAPERS)}",
        "drift_injection=True",
        "drift={agents: claude-sonnet_papercoder}",
    )
    tables = results / "tables"
    scores = pd.read_parquet(tables / "scores_by_agent.parquet")
    ref = scores[(scores.judge == "reference") & (scores.dimension == "overall")]
    got = dict(zip(ref["agent"], ref["score"], strict=True))
    expected = sabench_expected(sabench_data, SABENCH_PAPERS)
    assert set(got) == set(expected) and len(got) == 12
    for agent, want in expected.items():
        assert got[agent] == pytest.approx(want["claims"], abs=1e-12), agent
        assert got[agent] == pytest.approx(want["published"], abs=1e-4), agent
    judgments = pd.read_parquet(tables / "judgments.parquet")
    n_claims = sum(
        len(block["claims"])
        for paper in SABENCH_PAPERS
        for block in json.loads(
            (sabench_data / "reference" / "gpt4o_basic" / f"{paper}.json").read_text()
        )["dimensions"].values()
    )
    assert (judgments.judge == "reference").sum() == 12 * n_claims
    papers = pd.read_parquet(tables / "papers.parquet").set_index("paper")
    for paper, group in judgments.groupby("paper"):
        assert set(group["sau_set_hash"]) == {papers.loc[paper, "sau_set_hash"]}
    agreement = pd.read_parquet(tables / "judge_agreement.parquet")
    assert set(agreement["judge"]) == {"static"}
    assert list(agreement["dimension"]) == ["overall", "D1", "D2", "D3", "D4"]
    overall = agreement[agreement.dimension == "overall"].iloc[0]
    static = judgments[judgments.judge == "static"]
    judged = int(static["score"].notna().sum())  # abstentions (undetermined) are left out
    assert judged + int((static["verdict"] == "undetermined").sum()) == 12 * n_claims
    assert overall["n"] == judged and overall["kappa_quadratic"] > 0.2
    confusion = pd.read_parquet(tables / "judge_confusion.parquet")
    assert confusion["count"].sum() == 12 * n_claims  # every verdict, abstentions a column
    abstained = confusion[confusion["judge_verdict"] == "undetermined"]["count"].sum()
    assert abstained == 12 * n_claims - judged
    runs = pd.read_parquet(tables / "runs.parquet")
    assert runs["execution_status"].isna().all()  # runtime.execute: false
    page = (results / "report" / "index.html").read_text()
    assert "Agreement with the reference judge" in page and "Verdicts against" in page
    drift = pd.read_parquet(tables / "drift_injection.parquet")
    assert len(drift) > 0 and set(drift["agent"]) == {"claude-sonnet_papercoder"}
    ref = judgments[judgments.judge == "reference"].set_index(["agent", "paper", "sau_id"])
    for row in drift.itertuples():  # only what SA-Bench's judge found implemented is mutated
        assert ref.loc[(row.agent, row.paper, row.sau_id), "score"] >= 0.75
    assert "Drift injection" in page
    table = sabench_table(tables, sabench_data)  # the table docs/calibration.md shows
    assert len(table) == 12 and (table["difference"].abs() < 1e-4).all()


@pytest.mark.shared
@pytest.mark.workflow
def test_paperbench_final_scores_through_snakemake(paperbench_data: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    snakemake(
        "--configfile",
        "config/examples/paperbench.yaml",
        "--config",
        f"paperbench_data={paperbench_data}",
        f"results={results}",
        "judges=[reference]",
    )
    trees = pd.read_parquet(results / "tables" / "tree_scores.parquet")
    cases = sorted(p.name for p in (paperbench_data / "case_study").iterdir() if p.is_dir())
    assert len(cases) == 5
    for case in cases:
        grade = json.loads((paperbench_data / "case_study" / case / "grade.json").read_text())
        row = trees[(trees.paper == case) & (trees.judge == "reference")]
        assert len(row) == 1, case
        assert round(float(row["score"].iloc[0]), 4) == pytest.approx(grade["final_score"]), case
        assert int(row["n_leaves_judged"].iloc[0]) == len(grade["node_results"])
    pinn = trees[(trees.paper == "pinn") & (trees.judge == "reference")]["score"].iloc[0]
    assert round(float(pinn), 4) == 0.4824
    table = paperbench_table(results / "tables", paperbench_data)
    assert (
        (table["reference tree score (ours)"] - table["grade.json final_score"]).abs() < 5e-5
    ).all()


@pytest.mark.workflow
def test_a_new_verdict_file_rejudges_its_run(tmp_path: Path) -> None:
    """The reference judge's verdict file is an input of its job: editing it rejudges that run."""
    verdicts = tmp_path / "verdicts"
    for agent, score in (("reference", 1.0), ("drifted", 0.0)):
        (verdicts / agent).mkdir(parents=True)
        claims = [{"id": "ridge-gd-D1-001", "score": score, "judge_reasoning": "lr 0.01 wrong"}]
        data = {"dimensions": {"D1": {"claims": claims}}}
        (verdicts / agent / "ridge-gd.json").write_text(json.dumps(data))
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "results": str(tmp_path / "results"),
                "papers": ["ridge-gd"],
                "agents": ["reference", "drifted"],
                "judges": ["reference"],
                "runtime": {"execute": False},
                "judge_settings": {"reference": {"path": f"{verdicts}/{{agent}}/{{paper}}.json"}},
            }
        )
    )
    snakemake("--configfile", str(config))
    judgments = pd.read_parquet(tmp_path / "results" / "tables" / "judgments.parquet")
    assert dict(zip(judgments.agent, judgments.verdict, strict=True)) == {
        "reference": "aligned",
        "drifted": "drifted",
    }
    assert "Nothing to be done" in snakemake("-n", "--configfile", str(config)).stdout
    edited = verdicts / "drifted" / "ridge-gd.json"
    edited.write_text(edited.read_text().replace('"score": 0.0', '"score": 1.0'))
    dry = snakemake("-n", "--configfile", str(config)).stdout
    judged = re.findall(r"^\s*rule judge_batch:\n(?:\s+.*\n)*?\s+wildcards: (.*)$", dry, re.M)
    assert judged == ["paper=ridge-gd"], judged
    snakemake("--configfile", str(config))
    judgments = pd.read_parquet(tmp_path / "results" / "tables" / "judgments.parquet")
    assert set(judgments.verdict) == {"aligned"}
    # the paper's job re-judged the run whose verdict file changed; the other came from its cache
    log = (tmp_path / "results" / "logs" / "judge" / "ridge-gd.log").read_text()
    assert re.search(r"drifted/ridge-gd/0: reference: judged", log), log
    assert re.search(r"reference/ridge-gd/0: reference: cached", log), log


def test_example_configs_are_valid(repo: Path, tmp_path: Path) -> None:
    base = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    for name, key in (("sabench", "sabench_data"), ("paperbench", "paperbench_data")):
        example = yaml.safe_load((repo / "config" / "examples" / f"{name}.yaml").read_text())
        assert example[key] is None and example["runtime"]["execute"] is False
        assert "reference" in example["judges"]
    data = _sabench_folder(tmp_path / "data")
    config = {**base, **yaml.safe_load((repo / "config/examples/sabench.yaml").read_text())}
    settings = load_settings({**config, "sabench_data": str(data)}, repo)
    assert set(settings.agents) == {"cfg_a", "unpacked"}
