"""`make setup` on a host without root (a cluster login node): scripts/dev/host.sh, run as the
unprivileged user nobody with a PATH that has no bubblewrap and a sudo that refuses."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOBODY = 65534
TOOLS = ("sh", "id", "make", "cat")


@pytest.fixture
def host() -> Iterator[Path]:
    """A folder nobody can read and write: a copy of the Makefile, what it builds from and host.sh,
    and bin/ with the basic tools only (no bwrap, no apt-get, no python)."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to run as nobody")
    root = Path(tempfile.mkdtemp(prefix="sabench-host-"))
    root.chmod(0o777)
    (root / "scripts" / "dev").mkdir(parents=True)
    for name in ("Makefile", "pyproject.toml", "requirements.lock", "requirements-dev.lock"):
        shutil.copy(REPO / name, root / name)
    shutil.copy(REPO / "scripts" / "dev" / "host.sh", root / "scripts" / "dev" / "host.sh")
    (root / "bin").mkdir()
    for tool in TOOLS:
        (root / "bin" / tool).symlink_to(shutil.which(tool))
    for path in root.rglob("*"):
        if not path.is_symlink():
            path.chmod(0o777)
    yield root
    shutil.rmtree(root)


def stub(host: Path, name: str, script: str) -> Path:
    path = host / "bin" / name
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)
    return path


def real_python() -> str:
    """A Python >= 3.11 with venv that nobody may run (the system's: pyenv's live under /root)."""
    for name in ("python3.13", "python3.12", "python3.11", "python3"):
        for folder in ("/usr/bin", "/usr/local/bin"):
            path = Path(folder) / name
            check = "import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))"
            if path.exists() and as_nobody(Path("/"), str(path), "-c", check).returncode == 0:
                return str(path)
    pytest.fail("no system Python >= 3.11 with venv (apt-get install python3-venv)")


def as_nobody(host: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            shutil.which("setpriv"),
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            *argv,
        ],
        cwd=host,
        env={"PATH": str(host / "bin"), "HOME": "/nonexistent"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_finds_the_first_python_that_is_new_enough(host: Path) -> None:
    # python3 is too old (as on many login nodes); the versioned one from a module is not
    stub(host, "python3", "exit 1")
    (host / "bin" / "python3.12").symlink_to(real_python())
    proc = as_nobody(host, "sh", "scripts/dev/host.sh", "python")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(host / "bin" / "python3.12")


def test_no_python_is_one_line(host: Path) -> None:
    stub(host, "python3", "exit 1")
    proc = as_nobody(host, "sh", "scripts/dev/host.sh", "python")
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: no Python >= 3.11 with venv on PATH")
    assert len(proc.stderr.splitlines()) == 1


def test_setup_without_root_installs_nothing_and_says_what_remains(host: Path) -> None:
    (host / "bin" / "python3").symlink_to(real_python())
    stub(host, "apt-get", f'echo apt-get "$@" >> {host}/calls; exit 1')
    # a user's sudo: exists, asks for a password, so `sudo -n` refuses
    stub(host, "sudo", f'echo sudo "$@" >> {host}/calls; exit 1')
    stub(host, "apptainer", "exit 0")  # as after `module load apptainer`
    proc = as_nobody(host, "make", "--no-print-directory", "system-deps")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout
    assert lines[0].startswith(
        "no root, so no bubblewrap installed; sandbox backends on PATH: apptainer"
    )
    assert "module load apptainer" in lines[0] and "runtime.backend: local" in lines[0]
    calls = (host / "calls").read_text().splitlines() if (host / "calls").exists() else []
    assert calls == ["sudo -n true"]  # asked whether it may, never installed anything


def test_no_backend_on_path_says_none(host: Path) -> None:
    (host / "bin" / "python3").symlink_to(real_python())
    proc = as_nobody(host, "sh", "scripts/dev/host.sh", "system-deps")
    assert proc.returncode == 0, proc.stderr
    assert "sandbox backends on PATH: none" in proc.stdout


def test_setup_with_a_bad_python_stops_in_one_line(host: Path) -> None:
    stub(host, "bwrap", "exit 0")  # nothing to install: straight to the venv
    proc = as_nobody(host, "make", "--no-print-directory", "setup", "PYTHON=/nonexistent/python3")
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: PYTHON=/nonexistent/python3 is not a Python >= 3.11 with venv and ensurepip"
    ]
    assert not (host / ".venv").exists()


def sandbox_check(*args: str, path: str) -> subprocess.CompletedProcess[str]:
    """`make demo`'s first step: which backend the demo's config picks here."""
    return subprocess.run(
        [sys.executable, "-m", "sabench.sandbox", *args],
        cwd=REPO,
        env={**os.environ, "PATH": path},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_demo_check_names_the_backend() -> None:
    proc = sandbox_check("--config", "config/config.yaml", path=os.environ["PATH"])
    assert proc.returncode == 0, proc.stderr
    assert re.fullmatch(r"sandbox: runtime\.backend auto -> \w+\n", proc.stdout)


def test_demo_check_without_a_backend_is_one_line(tmp_path: Path) -> None:
    proc = sandbox_check("apptainer", path=str(tmp_path))
    assert proc.returncode == 1
    assert proc.stderr == (
        "error: runtime.backend: apptainer: apptainer (or singularity) is not installed\n"
    )
