"""A results folder run under another backend (e.g. then with ``--profile slurm``): one warning
line before any job starts, naming the runs it re-executes and how to keep them (issue 39)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from snakemake.persistence import ParamsChange

from sabench.lifecycle import RuntimeChange, runtime_change_line, runtime_changes

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
LOCAL = {"backend": "auto", "image_cache": None, "mem_mb": 4096}
SLURM = {"backend": ["apptainer", "bwrap"], "image_cache": "/repo/.cache/images", "mem_mb": 4096}


def _param(settings: Mapping[str, Any]) -> str:
    """The execute rule's settings param as Snakemake records it (``repr`` of the JSON)."""
    return repr(json.dumps(settings, sort_keys=True))


def _workflow(jobs: list[tuple[Path, str, ParamsChange]]) -> SimpleNamespace:
    """What ``runtime_changes`` reads of a workflow: the jobs to run and Snakemake's reasons."""
    built = [
        (SimpleNamespace(rule=SimpleNamespace(name=rule), output=SimpleNamespace(record=path)), why)
        for path, rule, why in jobs
    ]
    reasons = {id(job): SimpleNamespace(params_changed=why) for job, why in built}
    dag = SimpleNamespace(
        needrun_jobs=lambda: [job for job, _ in built], reason=lambda job: reasons[id(job)]
    )
    return SimpleNamespace(dag=dag)


def _run(results: Path, name: str, backend: str) -> Path:
    record = results / "runs" / name / "p1" / "0" / "execution.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"status": "ok", "backend": backend}))
    return record


def test_a_new_backend_warns_once_naming_the_runs(tmp_path: Path) -> None:
    """Two runs made under bwrap (picked by ``auto``), then the Slurm profile's settings."""
    switched = ParamsChange(only_old={_param(LOCAL)}, only_new={_param(SLURM)})
    forced = ParamsChange()  # rerun for another reason (a new submission): not the backend's
    jobs = [(_run(tmp_path, a, "bwrap"), "execute", switched) for a in ("ref", "null")]
    jobs.append((_run(tmp_path, "other", "bwrap"), "execute", forced))
    changes = runtime_changes(_workflow(jobs))
    assert [c.record for c in changes] == [jobs[0][0], jobs[1][0]]
    line = runtime_change_line(changes)
    assert line is not None and "\n" not in line
    assert line.startswith("2 completed runs of this results folder will be re-executed")
    assert "backend: auto -> apptainer,bwrap" in line
    assert 'image_cache: unset -> "/repo/.cache/images"' in line
    assert "ran under bwrap" in line  # what auto picked, from each run's execution.json
    assert "runtime.backend: auto, runtime.image_cache unset" in line  # how to keep them
    assert "own results= folder" in line


def test_same_backend_or_no_runs_no_warning(tmp_path: Path) -> None:
    same = ParamsChange()  # Snakemake found the settings unchanged
    record = _run(tmp_path, "ref", "bwrap")
    assert runtime_change_line(runtime_changes(_workflow([(record, "execute", same)]))) is None
    assert runtime_change_line(runtime_changes(_workflow([]))) is None
    # another rule's params (a judge's settings) are no backend switch
    judge = ParamsChange(only_old={_param(LOCAL)}, only_new={_param(SLURM)})
    assert runtime_changes(_workflow([(record, "judge", judge)])) == []


def test_runs_under_several_old_settings_are_counted_together(tmp_path: Path) -> None:
    docker = {**LOCAL, "backend": "docker"}
    changes = [
        RuntimeChange(_run(tmp_path, "a", "bwrap"), LOCAL, SLURM),
        RuntimeChange(_run(tmp_path, "b", "docker"), docker, SLURM),
    ]
    line = runtime_change_line(changes)
    assert line is not None
    assert "backend: auto|docker -> apptainer,bwrap" in line
    assert "ran under bwrap (1), docker (1)" in line
    assert "runtime settings they ran with, or give" in line  # no one old value to name


def _snakemake(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SNAKEMAKE")}
    proc = subprocess.run(
        [SNAKEMAKE, "--cores", "1", *args], cwd=REPO, capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


@pytest.mark.workflow
def test_switching_to_the_slurm_settings_warns_before_the_rerun(tmp_path: Path) -> None:
    """For real: one run executed locally, then with the Slurm profile's runtime settings
    (the null agent submits nothing, so no sandbox starts under either)."""
    results = tmp_path / "results"
    record = results / "runs" / "null" / "ridge-gd" / "0" / "execution.json"
    grid = (str(record), "--config", f"results={results}", "papers=ridge-gd")
    first = _snakemake(*grid)
    assert "re-executed" not in first.stderr, "a new folder has nothing to redo"
    again = _snakemake(*grid, "--forcerun", "execute")
    assert "re-executed" not in again.stderr, "a rerun with the same backend is no switch"
    profile = yaml.safe_load((REPO / "profiles" / "slurm" / "sabench.yaml").read_text())
    switched = _snakemake(*grid, f"runtime={json.dumps(profile['runtime'])}")
    warnings = [line for line in switched.stderr.splitlines() if "re-executed" in line]
    assert len(warnings) == 1, switched.stderr[-4000:]
    assert warnings[0].startswith("warning: 1 completed run of this results folder")
    assert "backend: auto -> apptainer,bwrap" in warnings[0]
    assert "runtime.backend: auto" in warnings[0]
    assert json.loads(record.read_text())["backend"] == "apptainer,bwrap", "not blocked"
