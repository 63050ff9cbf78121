"""A fake nvidia-smi with two GPUs (no GPU on the test machine): the inventory, or samples every
-lms milliseconds. ``install`` points sabench at it and gives the device locks their own folder."""

from __future__ import annotations

from pathlib import Path

import pytest

FAKE_SMI = """#!/bin/sh
case "$*" in
  *--query-gpu=index,uuid*) printf '0, GPU-aaaa, Fake H200, 143771\\n1, GPU-bbbb, Fake H200, 143771\\n';;
  *-lms*) i=0; while :; do i=$((i+1)); printf '0, %d, %d\\n' $((i*10 % 100)) $((1000+i)); sleep 0.1; done;;
esac
"""


def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two fake GPUs for this test; returns the lock folder every allocation uses."""
    from sabench.sandbox import gpu

    smi = tmp_path / "nvidia-smi"
    smi.write_text(FAKE_SMI)
    smi.chmod(0o755)
    monkeypatch.setenv("SABENCH_NVIDIA_SMI", str(smi))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    locks = tmp_path / "gpu-locks"
    monkeypatch.setattr(gpu, "DEFAULT_LOCK_DIR", locks)
    return locks
