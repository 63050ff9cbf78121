"""`--config` values as Snakemake hands them over, typed by the config schema before validation."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from sabench.errors import UserError
from sabench.grid import _schema, coerce_to_schema, load_settings

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
SCHEMA = _schema("config.schema.yaml")


def cli(*entries: str) -> dict:
    """What ``snakemake --config ENTRY...`` puts into ``config`` (its own parser)."""
    from snakemake.cli import parse_config

    return parse_config(list(entries))


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        (["seeds=[0, 1]"], {"seeds": [0, 1]}),
        (["seeds=0,1"], {"seeds": [0, 1]}),
        (["seeds=2"], {"seeds": [2]}),
        (["judges=static,exec"], {"judges": ["static", "exec"]}),
        (["judges=llm:openai/gpt-4o"], {"judges": ["llm:openai/gpt-4o"]}),
        (
            ["runtime={time_limit_s: 60, mem_mb: 512}"],
            {"runtime": {"time_limit_s": 60, "mem_mb": 512}},
        ),
        (
            ["runtime={isolation: {non_root: false}}"],
            {"runtime": {"isolation": {"non_root": False}}},
        ),
        (
            ['runtime={backend: "apptainer,bwrap"}'],
            {"runtime": {"backend": ["apptainer", "bwrap"]}},
        ),
        (["runtime={backend: local, gpus: 1}"], {"runtime": {"backend": "local", "gpus": 1}}),
        (["runtime={gpus: all}"], {"runtime": {"gpus": "all"}}),
        (["runtime={gpus: [0, GPU-ab]}"], {"runtime": {"gpus": [0, "GPU-ab"]}}),
        (["drift_injection=true"], {"drift_injection": True}),
        (["drift_injection=False"], {"drift_injection": False}),
        (["llm_budget_usd=2.5"], {"llm_budget_usd": 2.5}),
        (["agents_file=null"], {"agents_file": None}),
        (
            ["saus_extraction={dimensions: [D1, D3]}"],
            {"saus_extraction": {"dimensions": ["D1", "D3"]}},
        ),
        (
            ["judge_settings={llm:m: {concurrency: 8, cache: no, temperature: 0.5}}"],
            {"judge_settings": {"llm:m": {"concurrency": 8, "cache": False, "temperature": 0.5}}},
        ),
        # strings stay strings where the schema wants them, whatever they look like
        (["papers=a,b"], {"papers": "a,b"}),
        (["papers=2024"], {"papers": "2024"}),
        (["agents=null"], {"agents": "null"}),
        (["results=2024"], {"results": "2024"}),
        (["runtime={network: none}"], {"runtime": {"network": "none"}}),
    ],
)
def test_cli_values_are_typed(entries: list[str], expected: dict) -> None:
    coerced = coerce_to_schema(cli(*entries), SCHEMA)
    assert coerced == expected
    assert [type(v) for v in coerced.values()] == [type(v) for v in expected.values()]


def test_config_file_values_pass_unchanged() -> None:
    import yaml

    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    assert coerce_to_schema(config, SCHEMA) == config


def _workdir(tmp_path: Path) -> Path:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "agents.yaml").write_text(
        "ref:\n  kind: replay\n  path: subs/{paper}/{seed}\n"
    )
    folder = tmp_path / "resources" / "papers" / "p1"
    folder.mkdir(parents=True)
    (folder / "paper.md").write_text("# P\n")
    (folder / "saus.yaml").write_text("saus: []\n")
    return tmp_path


def test_load_settings_takes_cli_values(tmp_path: Path) -> None:
    settings = load_settings(
        {"runtime": {"backend": "auto"}, **cli("seeds=[0, 1]", "judges=static,exec")},
        _workdir(tmp_path),
    )
    assert settings.runs == [("ref", "p1", "0"), ("ref", "p1", "1")]
    assert settings.judges == ["static", "exec"]


def test_what_does_not_fit_is_still_one_line(tmp_path: Path) -> None:
    with pytest.raises(UserError) as err:
        load_settings(cli("seeds=0,x"), _workdir(tmp_path), config_path="cfg")
    assert str(err.value) == "cfg: seeds[1]: 'x' is not of type 'integer'"


def snakemake_dry_run(*config: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SNAKEMAKE")}
    proc = subprocess.run(
        [SNAKEMAKE, "--cores", "1", "-n", "-p", "--config", *config],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    return out


@pytest.mark.parametrize("seeds", ["seeds=[0, 1]", "seeds=0,1"])
def test_dry_run_with_typed_config(tmp_path: Path, seeds: str) -> None:
    agents = tmp_path / "agents.yaml"
    agents.write_text(
        "seeded:\n  kind: replay\n  path: resources/submissions/reference/{paper}/{seed}\n"
    )
    out = snakemake_dry_run(
        f"results={tmp_path}",
        f"agents_file={agents}",
        "papers=ridge-gd",
        seeds,
        "judges=static,exec",
        "runtime={time_limit_s: 60}",
    )
    assert f"{tmp_path}/runs/seeded/ridge-gd/1/judge/exec.parquet" in out
    assert f"{tmp_path}/runs/seeded/ridge-gd/1/judge/static.parquet" in out
    settings = [
        json.loads(m) for m in re.findall(r"sabench\.execute .*--settings '(\{[^']*\})'", out)
    ]
    assert len(settings) == 2  # seeds 0 and 1
    # merged into config/config.yaml's runtime, as a number
    assert all(s["time_limit_s"] == 60 and s["mem_mb"] == 4096 for s in settings)


def test_judge_settings_from_the_command_line_are_typed() -> None:
    typed = coerce_to_schema(cli("judge_settings={exec: {time_limit_s: 30}}"), SCHEMA)
    assert typed["judge_settings"] == {"exec": {"time_limit_s": 30}}


def snakemake(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SNAKEMAKE")}
    return subprocess.run(
        [SNAKEMAKE, "--cores", "2", *args], cwd=REPO, capture_output=True, text=True, env=env
    )


@pytest.mark.workflow
@pytest.mark.bwrap
def test_a_judge_setting_on_the_command_line_is_the_config_files(tmp_path: Path) -> None:
    """``--config 'judge_settings={exec: {time_limit_s: 30}}'`` judges with the number 30 (it
    reached the exec judge as the string '30' once, and every exec job failed), and a config
    file saying the same is the same run: nothing to redo. A misspelled setting stops the run
    before any job, with the key it most likely means."""
    from sabench.grid import judge_fingerprint

    agents = tmp_path / "agents.yaml"
    agents.write_text(
        "reference:\n  kind: replay\n  path: resources/submissions/reference/{paper}\n"
    )
    papers = tmp_path / "papers"  # one paper, not a narrowed grid: its tables are complete
    shutil.copytree(REPO / "resources" / "papers" / "ridge-gd", papers / "ridge-gd")
    base = [f"results={tmp_path / 'results'}", f"agents_file={agents}", f"papers_dir={papers}"]
    base += ["judges=static,exec"]
    proc = snakemake("--config", *base, "judge_settings={exec: {time_limit_s: 30}}")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = tmp_path / "results" / "runs" / "reference" / "ridge-gd" / "0"
    exec_rows = pd.read_parquet(run / "judge" / "exec.parquet")
    assert set(exec_rows["judge_fingerprint"]) == {judge_fingerprint("exec", {"time_limit_s": 30})}
    assert (exec_rows["verdict"] == "aligned").all(), exec_rows[["sau_id", "verdict"]]

    config_file = tmp_path / "exec.yaml"
    config_file.write_text("judge_settings:\n  exec: {time_limit_s: 30}\n")
    same = snakemake("-n", "--configfile", str(config_file), "--config", *base)
    assert same.returncode == 0 and "Nothing to be done" in same.stdout + same.stderr, same.stdout[
        -3000:
    ]

    typo = snakemake("--config", *base, "judge_settings={exec: {time_limt_s: 30}}")
    assert typo.returncode != 0
    assert (
        "error: config (config/config.yaml + --config): judge_settings.exec.time_limt_s: "
        "unknown key; did you mean 'time_limit_s'?" in typo.stderr
    ), typo.stderr[-2000:]
    assert "Traceback" not in typo.stderr


@pytest.mark.workflow
@pytest.mark.bwrap
def test_a_one_paper_rejudge_under_other_settings_is_named_not_mixed_silently(
    tmp_path: Path,
) -> None:
    """A grid judged with the exec judge's defaults, then one paper rejudged with
    ``--config papers=ridge-gd 'judge_settings={exec: {time_limit_s: 30}}'``: the agent's exec
    score now averages two settings, and summary.md says so in one line naming the papers and
    the settings (only the provenance row's two fingerprints told it once)."""
    agents = tmp_path / "agents.yaml"
    agents.write_text(
        "reference:\n  kind: replay\n  path: resources/submissions/reference/{paper}\n"
    )
    papers = tmp_path / "papers"
    for paper in ("ridge-gd", "logreg-earlystop"):
        shutil.copytree(REPO / "resources" / "papers" / paper, papers / paper)
    base = [f"results={tmp_path / 'results'}", f"agents_file={agents}", f"papers_dir={papers}"]
    base += ["judges=static,exec"]
    whole = snakemake("--config", *base)
    assert whole.returncode == 0, whole.stdout[-3000:] + whole.stderr[-3000:]
    summary = tmp_path / "results" / "tables" / "summary.md"
    assert "Mixed judge settings" not in summary.read_text()

    one = snakemake(
        "--config", *base, "papers=ridge-gd", "judge_settings={exec: {time_limit_s: 30}}"
    )
    assert one.returncode == 0, one.stdout[-3000:] + one.stderr[-3000:]
    lines = [ln for ln in summary.read_text().splitlines() if "Mixed judge settings" in ln]
    assert len(lines) == 1, summary.read_text()
    assert (
        "`exec` of `reference` (logreg-earlystop with the defaults; ridge-gd with "
        "{time_limit_s: 30})" in lines[0]
    )
    assert "static" not in lines[0]
