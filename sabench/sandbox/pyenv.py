"""Build the sandbox Python env (a venv from envs/sandbox.txt), idempotently and under a lock.

The sandbox never runs the host's pyenv shims or the bare system python3: it gets this pinned env,
mounted read-only. A stamp file holds the requirements' hash, so a changed pin rebuilds it.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from sabench.steps import ArgumentParser, command

STAMP = ".sabench-requirements.sha256"


def _base_python() -> str:
    """The real interpreter behind this one (a venv's base, never a shim)."""
    return getattr(sys, "_base_executable", None) or sys.executable


def ensure_sandbox_env(path: Path | str, requirements: Path | str, *, timeout_s: int = 900) -> Path:
    """Create or refresh the venv at ``path``; return it. Raises ``RuntimeError`` if pip fails."""
    path, requirements = Path(path), Path(requirements)
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()
    stamp = path / STAMP
    if stamp.is_file() and stamp.read_text().strip() == digest and (path / "bin/python").exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    # The lock lives outside the tree (not a stray file in the repo), one per env path.
    key = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    with open(Path(tempfile.gettempdir()) / f"sabench-env-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.is_file() and stamp.read_text().strip() == digest:
            return path
        if path.exists() and not (path / "bin/python").exists():
            shutil.rmtree(path)
        if not path.exists():
            subprocess.run([_base_python(), "-m", "venv", str(path)], check=True, timeout=120)
        done = subprocess.run(
            [str(path / "bin/python"), "-m", "pip", "install", "-q", "-r", str(requirements)],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        if done.returncode:
            raise RuntimeError(
                f"pip install -r {requirements} failed: {done.stderr.strip()[-2000:]}"
            )
        stamp.write_text(digest + "\n")
    return path


@command
def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(description="Build the sandbox Python env when missing or stale.")
    parser.add_argument("path", type=Path)
    parser.add_argument("requirements", type=Path)
    args = parser.parse_args(argv)
    ensure_sandbox_env(args.path, args.requirements)
    print(f"sandbox Python env: {args.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
