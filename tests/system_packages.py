"""System packages a test needs, installed from Debian's archive when missing (as root)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest


def debian_binary(names: tuple[str, ...], package: str) -> str:
    """The first of ``names`` on PATH; apt-get installs Debian's ``package`` when none is and this
    runs as root (as ``make test`` on a fresh machine does), else the test skips saying how."""
    found = next(filter(None, map(shutil.which, names)), None)
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip(
            f"{names[0]} is not installed and this is not root with apt-get: "
            f"apt-get install {package}"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    lock = ["-o", "DPkg::Lock::Timeout=600"]
    for argv in (
        ["apt-get", *lock, "update", "-qq"],
        ["apt-get", *lock, "install", "-y", "-qq", "--no-install-recommends", package],
    ):
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800)
        if done.returncode:
            pytest.skip(f"{' '.join(argv)} failed: {done.stderr.strip()[-400:]}")
    found = next(filter(None, map(shutil.which, names)), None)
    if not found:
        pytest.skip(f"apt-get installed {package} but {names[0]} is not on PATH")
    return found
