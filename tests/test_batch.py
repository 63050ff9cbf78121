"""Batched steps: one paper's runs replayed and judged in one process, each run keeping its own
outputs, a cache that re-judges only what changed, faults and kills that lose at most one run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from sabench.agents.batch import replay_batch
from sabench.faults import Fault, read_fault
from sabench.grid import judge_fingerprint
from sabench.judges.batch import BatchJudge, judge_batch
from sabench.saus import import_paper_saus, write_saus

REPO = Path(__file__).resolve().parents[1]
PAPER = "ridge-gd"
AGENTS = yaml.safe_load((REPO / "config" / "agents.yaml").read_text())


def static() -> BatchJudge:
    return BatchJudge("static", judge_fingerprint("static", {}), {})


def reference(verdicts: Path) -> BatchJudge:
    settings = {"path": f"{verdicts}/{{agent}}.json"}
    return BatchJudge("reference", judge_fingerprint("reference", settings), settings)


@pytest.fixture
def paper(tmp_path: Path) -> tuple[list[Path], Path]:
    """The demo's three agents replayed on one paper (run folders) and the paper's SAUs."""
    root = tmp_path / "runs"
    records = [root / agent / PAPER / "0" / "agent.json" for agent in AGENTS]
    counts = replay_batch(AGENTS, records, REPO)
    assert counts == {"replayed": 2, "empty": 1}
    saus = tmp_path / "saus.parquet"
    write_saus(import_paper_saus(REPO / "resources" / "papers" / PAPER), saus)
    return [r.parent for r in records], saus


def outcomes(runs: list[Path], slug: str = "static") -> list[str]:
    lines = [(r / "logs" / f"judge-{slug}.log").read_text().strip() for r in runs]
    return [line.split(": ")[2].split(",")[0] for line in lines]


def drop_outputs(runs: list[Path]) -> None:
    """What Snakemake does before it reruns a job: its outputs go."""
    for run in runs:
        for out in (run / "judge").glob("*.parquet"):
            out.unlink()


def test_each_run_keeps_its_own_outputs(paper: tuple[list[Path], Path]) -> None:
    runs, saus = paper
    counts = judge_batch([static()], runs, saus)
    assert counts == {"judged": 3, "cached": 0, "faulted": 0}
    for run in runs:
        frame = pd.read_parquet(run / "judge" / "static.parquet")
        assert set(frame["agent"]) == {run.parts[-3]} and len(frame) == 21
        assert json.loads((run / "agent.json").read_text())["paper"] == PAPER
        assert (run / "agent.log").read_text().startswith(f"{run.parts[-3]}/{PAPER}/0: ")
    scores = {
        r.parts[-3]: pd.read_parquet(r / "judge" / "static.parquet").score.mean() for r in runs
    }
    assert scores["reference"] > scores["drifted"] > scores["null"] == 0.0


def test_a_rerun_judges_only_the_runs_that_changed(paper: tuple[list[Path], Path]) -> None:
    runs, saus = paper
    judge_batch([static()], runs, saus)
    first = {r: pd.read_parquet(r / "judge" / "static.parquet") for r in runs}
    drop_outputs(runs)
    assert judge_batch([static()], runs, saus)["cached"] == 3
    for run in runs:
        pd.testing.assert_frame_equal(pd.read_parquet(run / "judge" / "static.parquet"), first[run])
    # the agents replayed again (new agent.json times, copies with the source's file times)
    replay_batch(AGENTS, [r / "agent.json" for r in runs], REPO)
    drop_outputs(runs)
    assert judge_batch([static()], runs, saus)["cached"] == 3
    # one submission edited: that run alone is judged again
    edited = runs[0] / "submission" / "main.py"
    edited.write_text(edited.read_text() + "\n# edited\n")
    drop_outputs(runs)
    assert judge_batch([static()], runs, saus) == {"judged": 1, "cached": 2, "faulted": 0}
    assert outcomes(runs) == ["judged", "cached", "cached"]
    assert len(list((runs[0] / "judge" / ".cache").glob("static.*.parquet"))) == 1


def test_adding_a_judge_runs_only_that_judge(
    paper: tuple[list[Path], Path], tmp_path: Path
) -> None:
    runs, saus = paper
    judge_batch([static()], runs, saus)
    verdicts = tmp_path / "verdicts"
    verdicts.mkdir()
    for run in runs:
        claims = [{"id": "ridge-gd-D1-001", "score": 1.0, "judge_reasoning": "ok"}]
        data = {"dimensions": {"D1": {"claims": claims}}}
        (verdicts / f"{run.parts[-3]}.json").write_text(json.dumps(data))
    drop_outputs(runs)
    counts = judge_batch([static(), reference(verdicts)], runs, saus)
    assert counts == {"judged": 3, "cached": 3, "faulted": 0}
    assert outcomes(runs) == ["cached"] * 3 and outcomes(runs, "reference") == ["judged"] * 3
    # a new version of one verdict file re-judges that run only
    (verdicts / "drifted.json").write_text(
        (verdicts / "drifted.json").read_text().replace("1.0", "0.0")
    )
    drop_outputs(runs)
    judge_batch([static(), reference(verdicts)], runs, saus)
    assert outcomes(runs, "reference") == ["cached", "judged", "cached"]


def test_a_fault_is_recorded_for_its_run_and_the_rest_is_judged(
    paper: tuple[list[Path], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fault (here our own code failing on one run) leaves that run without judgments and with
    a fault record; the batch fails, and its rerun judges that run only."""
    runs, saus = paper
    from sabench.judges import run as run_module  # where the batch finds it, when it is called

    judge_run = run_module.judge_run

    def failing(name, settings, fingerprint, submission, *args, **kwargs):
        if Path(submission).parent == runs[1]:
            raise Fault("internal_error", "the index could not be built")
        return judge_run(name, settings, fingerprint, submission, *args, **kwargs)

    monkeypatch.setattr(run_module, "judge_run", failing)
    assert judge_batch([static()], runs, saus) == {"judged": 2, "cached": 0, "faulted": 1}
    assert not (runs[1] / "judge" / "static.parquet").exists()
    assert read_fault(runs[1], "judge-static")["cause"] == "internal_error"
    monkeypatch.setattr(run_module, "judge_run", judge_run)
    drop_outputs(runs)
    assert judge_batch([static()], runs, saus) == {"judged": 1, "cached": 2, "faulted": 0}
    assert read_fault(runs[1], "judge-static") is None


def test_a_killed_batch_keeps_the_runs_it_finished(paper: tuple[list[Path], Path]) -> None:
    """SIGKILL after the first run's line: the rerun takes that run from the cache."""
    runs, saus = paper
    judges = json.dumps(
        [{"name": "static", "fingerprint": static().fingerprint, "settings_json": "{}"}]
    )
    command = [sys.executable, "-m", "sabench.judges.batch"]
    command += [str(r / "agent.json") for r in runs] + ["--saus", str(saus), "--judges", judges]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env, cwd=REPO)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert ": static: judged" in first, first
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    drop_outputs(runs)
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert outcomes(runs)[0] == "cached"
    assert "from the cache" in done.stdout.splitlines()[-1]


def test_replay_refuses_agents_that_are_not_batched(tmp_path: Path) -> None:
    specs = {"model": {"kind": "basic", "model": "openai/x"}}
    record = tmp_path / "runs" / "model" / PAPER / "0" / "agent.json"
    proc = subprocess.run(
        [sys.executable, "-m", "sabench.agents.batch", str(record), "--specs", json.dumps(specs)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert proc.returncode == 2
    assert "agent 'model' is not a replay or null agent" in proc.stderr
    assert not record.parent.exists()


def test_merge_writes_each_runs_judgments(paper: tuple[list[Path], Path], tmp_path: Path) -> None:
    """With every judge of the runs batched, the batch writes judgments.parquet itself."""
    runs, saus = paper
    verdicts = tmp_path / "verdicts"
    verdicts.mkdir()
    for run in runs:
        claims = [{"id": "ridge-gd-D1-001", "score": 0.5, "judge_reasoning": "half"}]
        (verdicts / f"{run.parts[-3]}.json").write_text(
            json.dumps({"dimensions": {"D1": {"claims": claims}}})
        )
    judge_batch([static(), reference(verdicts)], runs, saus, merge=True)
    for run in runs:
        merged = pd.read_parquet(run / "judgments.parquet")
        assert merged.groupby("judge").size().to_dict() == {"reference": 1, "static": 21}
