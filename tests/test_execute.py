"""The execute stage: a fresh executed/ copy, a sandboxed reproduce.sh, an exact execution.json."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sabench.errors import UserError
from sabench.execute import (
    RECORD_KEYS,
    diff_snapshots,
    execute_run,
    flatten_metrics,
    read_metrics,
)
from sabench.sandbox import get_backend
from sabench.sandbox.settings import resolve_runtime

REPO = Path(__file__).resolve().parents[1]

NORMAL = """set -e
mkdir -p out
python - <<'EOF'
import json, numpy as np
acc = float(np.mean([0.8, 1.0]))
json.dump({"acc": acc, "nested": {"loss": 0.25, "name": "mlp", "deep": {"ok": True}},
           "curve": [1, 2, 3], "none": None}, open("results.json", "w"))
EOF
test ! -e /paper && echo "# Paper (reproduce.sh sees no /paper)" > out/paper_copy.md
echo changed >> data.txt
echo "model" > out/model.txt
"""


@pytest.fixture(scope="session")
def bwrap_ok() -> None:
    ok, why = get_backend("bwrap").available()
    if not ok:
        pytest.skip(f"bwrap unavailable: {why}")


def make_run(
    tmp_path: Path,
    script: str | None,
    extra: dict[str, str] | None = None,
    *,
    python: bool = True,
) -> dict:
    """A submission (``script`` as reproduce.sh unless None; with a train.py unless ``python`` is
    False: a shell script that runs no Python beside Python code is ``untraced``) and output
    paths."""
    sub = tmp_path / "submission"
    sub.mkdir()
    (sub / "data.txt").write_text("original\n")
    if python:
        (sub / "train.py").write_text("print('hi')\n")
    if script is not None:
        (sub / "reproduce.sh").write_text(script)
    for name, text in (extra or {}).items():
        (sub / name).write_text(text)
    run = tmp_path / "run"
    return {
        "submission": sub,
        "executed": run / "executed",
        "record_path": run / "execution.json",
        "log_path": run / "execution.log",
    }


def settings(env: Path | None, **kw: object) -> dict:
    return {"backend": "bwrap", "python_env": env, "time_limit_s": 30, "mem_mb": 512, **kw}


# --- pure helpers --------------------------------------------------------------------------------


def test_flatten_metrics_keeps_scalars_with_dotted_keys() -> None:
    flat, dropped = flatten_metrics(
        {
            "a": 1,
            "b": {"c": 0.5, "d": {"e": "x", "f": True}},
            "g": [1],
            "h": None,
            "i": float("nan"),
        }
    )
    assert flat == {"a": 1, "b.c": 0.5, "b.d.e": "x", "b.d.f": True, "i": "nan"}
    assert dropped == 2


def test_diff_snapshots_uses_content_not_mtime() -> None:
    before = {
        "a": {"size": 1, "mtime_ns": 1, "sha256": "x"},
        "b": {"size": 1, "mtime_ns": 1, "sha256": "y"},
    }
    after = {
        "a": {"size": 1, "mtime_ns": 9, "sha256": "x"},
        "b": {"size": 1, "mtime_ns": 1, "sha256": "z"},
        "c": {"size": 2, "mtime_ns": 1, "sha256": "w"},
    }
    assert diff_snapshots(before, after) == (["c"], ["b"], [])


def test_read_metrics_notes_bad_files(tmp_path: Path) -> None:
    (tmp_path / "results.json").write_text("{not json")
    (tmp_path / "eval.json").write_text('{"f1": 0.7}')
    (tmp_path / "list.json").write_text("[1, 2]")
    os.symlink("/etc/passwd", tmp_path / "linked.json")
    metrics, notes = read_metrics(
        tmp_path, ["results.json", "eval.json", "list.json", "linked.json", "missing.json"]
    )
    assert metrics == {"eval.json:f1": 0.7}
    text = " | ".join(notes)
    assert "results.json: malformed JSON" in text and "list.json: top level is list" in text
    assert "linked.json: not a regular file" in text and "no missing.json" in text


def test_settings_defaults_and_errors() -> None:
    cfg = resolve_runtime({})
    assert cfg["backend"] == "auto" and cfg["metrics_files"] == ["results.json"]
    assert (cfg["time_limit_s"], cfg["mem_mb"], cfg["pids"], cfg["output_limit_mb"]) == (
        600,
        4096,
        512,
        1024,
    )
    with pytest.raises(UserError, match=r"runtime\.mem_mb"):
        resolve_runtime({"mem_mb": -1})
    with pytest.raises(UserError, match=r"runtime\.metrics_files"):
        resolve_runtime({"metrics_files": ["../x.json"]})
    with pytest.raises(
        UserError, match=r"runtime\.time_limit: unknown key; did you mean 'time_limit_s'"
    ):
        resolve_runtime({"time_limit": 5})  # a misspelt key is refused, as in the config


def test_one_home_for_runtime_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """The schema's defaults reach the resolved settings and a bare SandboxSpec alike."""
    from sabench import grid
    from sabench.sandbox import SandboxSpec

    schema = grid._runtime_schema()["properties"]["runtime"]["properties"]
    monkeypatch.setitem(schema["mem_mb"], "default", 3000)
    assert resolve_runtime({})["mem_mb"] == 3000
    assert SandboxSpec(["true"], REPO).mem_mb == 3000


# --- whole runs ----------------------------------------------------------------------------------


@pytest.mark.bwrap
def test_normal_run_records_files_and_metrics(
    sandbox_env: Path, bwrap_ok: None, tmp_path: Path
) -> None:
    paths = make_run(tmp_path, NORMAL)
    stale = paths["executed"] / "stale.txt"
    stale.parent.mkdir(parents=True)
    stale.write_text("from an earlier run")
    record = execute_run(**paths, settings=settings(sandbox_env))
    assert tuple(sorted(record)) == tuple(sorted(RECORD_KEYS))
    assert json.loads(paths["record_path"].read_text()) == record
    assert record["status"] == "ok", (record, paths["log_path"].read_text())
    assert record["exit_code"] == 0 and record["backend"] == "bwrap"
    assert record["metrics"] == {
        "acc": 0.9,
        "nested.loss": 0.25,
        "nested.name": "mlp",
        "nested.deep.ok": True,
    }
    assert record["files_created"] == ["out/model.txt", "out/paper_copy.md", "results.json"]
    assert record["files_modified"] == ["data.txt"]
    assert "non-scalar" in record["message"]
    assert record["started_at"].endswith("Z") and record["sabench_version"]
    assert "bubblewrap" in record["isolation"] and "cgroup" in record["isolation"]
    assert record["gpus"] == 0 and record["image"] is None
    assert record["peak_mem_mb"] > 0 and record["log_bytes"] == 0
    # the pristine submission is untouched; the executed copy was made fresh
    assert sorted(p.name for p in paths["submission"].iterdir()) == [
        "data.txt",
        "reproduce.sh",
        "train.py",
    ]
    assert not stale.exists()
    assert (paths["executed"] / "out" / "paper_copy.md").read_text().startswith("# Paper")


@pytest.mark.bwrap
def test_failing_script_is_failed(sandbox_env: Path, bwrap_ok: None, tmp_path: Path) -> None:
    paths = make_run(tmp_path, "echo partial > partial.txt\nexit 3\n")
    record = execute_run(**paths, settings=settings(sandbox_env))
    assert (record["status"], record["exit_code"]) == ("failed", 3)
    assert record["files_created"] == ["partial.txt"]
    assert "exited 3" in record["message"] and "no results.json" in record["message"]


@pytest.mark.bwrap
def test_hostile_metrics_link_is_not_read(
    sandbox_env: Path, bwrap_ok: None, tmp_path: Path
) -> None:
    """A results.json linked to a host file must not pull that file into the record."""
    paths = make_run(
        tmp_path, "ln -s /etc/passwd results.json\necho '{bad' > eval.json\n", python=False
    )
    record = execute_run(
        **paths, settings=settings(sandbox_env, metrics_files=["results.json", "eval.json"])
    )
    assert record["status"] == "ok" and record["metrics"] == {}
    assert "removed 1 link(s) pointing outside" in record["message"]
    assert "no results.json" in record["message"] and "eval.json: malformed" in record["message"]
    assert not os.path.lexists(paths["executed"] / "results.json")


@pytest.mark.bwrap
def test_results_beside_python_that_never_ran_are_untraced(
    sandbox_env: Path, bwrap_ok: None, tmp_path: Path
) -> None:
    """A reproduce.sh that writes its results with echo beside Python code it never runs: the
    record saw no Python process, so nothing it reports was computed by the code judged."""
    paths = make_run(tmp_path, "echo '{\"acc\": 1}' > results.json\n")
    record = execute_run(**paths, settings=settings(sandbox_env))
    assert record["status"] == "untraced" and record["exit_code"] == 0
    assert record["message"].startswith("untraced: no Python process")
    assert record["metrics"] == {"acc": 1} and record["trace"]["processes"] == 0
    # the same script running its Python is traced
    shutil.rmtree(tmp_path / "run")
    (paths["submission"] / "reproduce.sh").write_text("python train.py\n" + "echo '{}' > r.json\n")
    assert execute_run(**paths, settings=settings(sandbox_env))["status"] == "ok"


@pytest.mark.bwrap
def test_timeout_is_recorded(sandbox_env: Path, bwrap_ok: None, tmp_path: Path) -> None:
    paths = make_run(tmp_path, "echo '{\"step\": 1}' > results.json\nsleep 600\n")
    record = execute_run(**paths, settings=settings(sandbox_env, time_limit_s=1))
    assert record["status"] == "timeout" and record["metrics"] == {"step": 1}


def test_missing_reproduce_script(tmp_path: Path) -> None:
    paths = make_run(tmp_path, None)
    record = execute_run(**paths, settings={"backend": "bwrap"})
    assert record["status"] == "no_reproduce_script"
    assert tuple(sorted(record)) == tuple(sorted(RECORD_KEYS))
    assert json.loads(paths["record_path"].read_text()) == record
    assert "nothing to run" in paths["log_path"].read_text()
    assert (paths["executed"] / "train.py").exists()


def test_missing_submission_folder(tmp_path: Path) -> None:
    paths = make_run(tmp_path, None)
    paths["submission"] = tmp_path / "absent"
    record = execute_run(**paths, settings={})
    assert record["status"] == "no_reproduce_script" and "missing" in record["message"]


def test_config_errors_raise(tmp_path: Path) -> None:
    paths = make_run(tmp_path, "true\n")
    with pytest.raises(UserError, match=r"runtime\.backend"):
        execute_run(**paths, settings={"backend": "nope"})
    with pytest.raises(UserError, match=r"runtime\.python_env"):
        execute_run(**paths, settings={"backend": "bwrap"})


def test_local_backend_via_execute(sandbox_env: Path, tmp_path: Path) -> None:
    paths = make_run(tmp_path, "echo '{\"acc\": 1}' > results.json\n", python=False)
    record = execute_run(**paths, settings=settings(sandbox_env, backend="local"))
    assert record["status"] == "ok" and record["metrics"] == {"acc": 1}
    assert record["isolation"].startswith("UNSANDBOXED")


@pytest.mark.bwrap
def test_cli_prints_the_record(sandbox_env: Path, bwrap_ok: None, tmp_path: Path) -> None:
    paths = make_run(tmp_path, "echo '{\"acc\": 0.5}' > results.json\n", python=False)
    out = tmp_path / "cli"
    done = subprocess.run(
        [sys.executable, "-m", "sabench.execute", str(paths["submission"]),
         "--out", str(out), "--backend", "bwrap",
         "--python-env", str(sandbox_env), "--time-limit-s", "30"],
        capture_output=True, text=True, timeout=60, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["status"] == "ok" and record["metrics"] == {"acc": 0.5}
    assert json.loads((out / "execution.json").read_text()) == record
    assert (out / "execution.log").exists() and (out / "executed" / "results.json").exists()
