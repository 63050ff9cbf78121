"""On a host with a real NVIDIA GPU (skipped elsewhere): what the fake nvidia-smi of the other tests
stands in for. The inventory nvidia-smi gives, a reproduction that computes on the GPU it was
allocated (and sees no other), the record's samples of its utilisation and memory, and an agent's
command on its GPU. The local backend runs them: no container engine is needed, only the driver and
a Python with CUDA PyTorch (this interpreter's env; skipped without one).

Run: ``python -m pytest tests/test_gpu_host.py -m gpu``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sabench.agents import run_agent
from sabench.execute import execute_run
from sabench.sandbox.gpu import allocate, host_gpus

pytestmark = pytest.mark.gpu

SMI = None if os.environ.get("SABENCH_NVIDIA_SMI") else shutil.which("nvidia-smi")
GPUS, WHY = host_gpus(SMI) if SMI else ([], "no nvidia-smi on PATH")
if not GPUS:
    pytest.skip(f"no NVIDIA GPU on this host ({WHY})", allow_module_level=True)

#: Three seconds of 8192^2 matrix products on the one device the run sees.
LOAD = """import os, time
import torch
print("visible=[%s] count=%d" % (os.environ.get("CUDA_VISIBLE_DEVICES"), torch.cuda.device_count()))
x = torch.randn(8192, 8192, device="cuda")
start, n = time.time(), 0
while time.time() - start < 3:
    y = x @ x
    n += 1
torch.cuda.synchronize()
print("products", n)
"""


@pytest.fixture(scope="module")
def cuda_python() -> Path:
    """This interpreter's env, when its PyTorch sees a GPU (the sandbox runs its ``python``;
    PyTorch is asked in a subprocess, as the runs use it, and is no dependency of the tests)."""
    probe = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if probe.returncode:
        pytest.skip(f"{sys.executable} has no PyTorch")
    if probe.stdout.strip() != "True":
        pytest.skip(f"{sys.executable}'s PyTorch sees no GPU")
    return Path(sys.prefix)


@pytest.fixture(autouse=True)
def own_locks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sabench.sandbox import gpu

    monkeypatch.setattr(gpu, "DEFAULT_LOCK_DIR", tmp_path / "gpu-locks")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def test_inventory() -> None:
    for gpu in GPUS:
        assert gpu.index.isdigit() and gpu.uuid.startswith("GPU-"), gpu
        assert gpu.name and gpu.memory_mb and gpu.memory_mb > 1000, gpu


def test_a_reproduction_computes_on_its_gpu_and_is_sampled(
    cuda_python: Path, tmp_path: Path
) -> None:
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "load.py").write_text(LOAD)
    (submission / "reproduce.sh").write_text("python load.py\n")
    run = tmp_path / "run"
    last = GPUS[-1].index
    settings = {"backend": "local", "python_env": cuda_python, "time_limit_s": 120, "gpus": [last]}
    record = execute_run(
        submission, run / "executed", run / "execution.json", run / "execution.log", settings
    )
    log = (run / "execution.log").read_text()
    assert record["status"] == "ok", (record, log[-3000:])
    assert f"visible=[{last}] count=1" in log and "products" in log, log[-3000:]
    usage = record["gpu_usage"]
    assert usage["ids"] == [last] and usage["samples"] >= 2 and "error" not in usage, usage
    assert usage["util_max_pct"] > 0, usage
    assert usage["mem_peak_mb"] > 512, usage  # the two 256 MB matrices and the product
    print("gpu_usage", usage, "wall_s", record["wall_s"])


def test_an_agent_command_gets_a_free_gpu(cuda_python: Path, tmp_path: Path) -> None:
    view = tmp_path / "agent_view"
    view.mkdir()
    (view / "paper.md").write_text("# Paper\n")
    probe = "import os, torch; print(os.environ['CUDA_VISIBLE_DEVICES'], torch.cuda.device_count())"
    agent = {"kind": "command", "command": [sys.executable, "-c", probe], "gpus": 1}
    runtime = {"backend": "local", "python_env": str(cuda_python), "time_limit_s": 120}
    with allocate(len(GPUS) - 1) as held:  # all but one GPU busy elsewhere
        record = run_agent(
            "gpu-agent",
            agent,
            "paper",
            "0",
            tmp_path / "run" / "submission",
            tmp_path / "run" / "agent.json",
            tmp_path,
            view,
            runtime,
        )
    free = [g.index for g in GPUS if g.index not in held]
    assert record["status"] == "submitted" and record["gpu_ids"] == free, record
    log = (tmp_path / "run" / "agent-command.log").read_text()
    assert f"{free[0]} 1" in log, log[-2000:]
