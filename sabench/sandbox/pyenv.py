"""Build the sandbox Python env (a venv from envs/sandbox.txt), idempotently and under a lock.

The sandbox never runs the host's pyenv shims or the bare system python3: it gets this pinned env,
mounted read-only. A stamp file holds the requirements' hash, so a changed pin rebuilds it.

The base is the newest CPython >= 3.12 the host has (:func:`sandbox_base_python`): there the
execution trace uses ``sys.monitoring``, which disables each line's event after its first hit and
costs about 1.0x where 3.11's tracing costs 5-6x on pure-Python loops (docs/architecture.md, "The
execution trace"). Without one, the host's own interpreter, and the trace is slower.
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from sabench.steps import ArgumentParser, command

STAMP = ".sabench-requirements.sha256"
#: Where an execution sandbox shows the trace's site folder (its ``sitecustomize.py``).
SITE_TARGET = "/opt/sabench-site"
#: A ``.pth`` file in the env's site-packages that puts that folder first on ``sys.path`` wherever
#: it is mounted, so the trace loads in every Python process of the env even when the code under
#: test sets its own ``PYTHONPATH`` (``PYTHONPATH=src python3 -m pkg``) or runs ``python3 -I``:
#: Python reads ``.pth`` files before it imports ``sitecustomize`` (only ``-S`` skips both).
TRACE_PTH = "sabench_trace.pth"
#: Set to ``off`` in the environment of a check's runner, which must not load the trace (its
#: child and the code under test still get it through ``PYTHONPATH``).
TRACE_PTH_VARIABLE = "SABENCH_TRACE_PTH"
_TRACE_PTH_LINE = (
    f"import sys, os; {SITE_TARGET!r} in sys.path or not os.path.isfile("
    f"{SITE_TARGET + '/sitecustomize.py'!r}) or os.environ.get({TRACE_PTH_VARIABLE!r}) == 'off' "
    f"or sys.path.insert(0, {SITE_TARGET!r})\n"
)
#: An interpreter to build the sandbox env from, instead of the one found (a path).
PYTHON_VARIABLE = "SABENCH_SANDBOX_PYTHON"
#: The oldest Python whose ``sys.monitoring`` the trace uses.
FAST_TRACE_PYTHON = (3, 12)
_PROBE = "import sys; print(sys.version_info[0], sys.version_info[1], sys.executable)"
log = logging.getLogger("sabench.sandbox.pyenv")


def _host_python() -> str:
    """The real interpreter behind this one (a venv's base, never a shim)."""
    return getattr(sys, "_base_executable", None) or sys.executable


def _probe(candidate: str) -> tuple[tuple[int, int], str] | None:
    """(version, real executable) of an interpreter, or None where it does not run (a pyenv shim
    for a version not selected fails here)."""
    try:
        done = subprocess.run(
            [candidate, "-I", "-c", _PROBE], capture_output=True, text=True, timeout=20
        )
        major, minor, exe = done.stdout.split(maxsplit=2)
        return (int(major), int(minor)), exe.strip()
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


def sandbox_base_python() -> str:
    """The interpreter the sandbox env is built from: ``$SABENCH_SANDBOX_PYTHON`` when set, else
    the newest CPython >= 3.12 on PATH or under pyenv's root, else the host's own."""
    chosen = os.environ.get(PYTHON_VARIABLE)
    if chosen:
        return chosen
    pyenv_root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    candidates = [
        *filter(None, (shutil.which(f"python3.{m}") for m in range(20, 11, -1))),
        *sorted(glob.glob(os.path.join(pyenv_root, "versions", "3.*", "bin", "python3"))),
    ]
    found = []
    for candidate in candidates:
        probed = _probe(candidate)
        if probed and probed[0] >= FAST_TRACE_PYTHON and "t" not in Path(probed[1]).name[7:]:
            found.append(probed)
    if found:
        return max(found)[1]
    log.warning(
        "no Python >= 3.12 found (set %s): the sandbox env uses %s, and the execution trace "
        "costs more on pure-Python loops",
        PYTHON_VARIABLE,
        _host_python(),
    )
    return _host_python()


def ensure_sandbox_env(
    path: Path | str,
    requirements: Path | str | Sequence[Path | str],
    *,
    timeout_s: int = 900,
) -> Path:
    """Create or refresh the venv at ``path`` from one requirements file or several (an agent's
    env: the sandbox's pins and its own); return it. Raises ``RuntimeError`` if pip fails."""
    path = Path(path)
    files = (
        [Path(requirements)]
        if isinstance(requirements, str | Path)
        else list(map(Path, requirements))
    )
    contents = [f.read_bytes() for f in files]
    digest = hashlib.sha256(contents[0] if len(files) == 1 else b"\0".join(contents)).hexdigest()
    stamp = path / STAMP
    if stamp.is_file() and stamp.read_text().strip() == digest and (path / "bin/python").exists():
        return _with_trace_hook(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # The lock lives outside the tree (not a stray file in the repo), one per env path.
    key = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    with open(Path(tempfile.gettempdir()) / f"sabench-env-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.is_file() and stamp.read_text().strip() == digest:
            return path
        if path.exists():  # stale pins: built afresh, on the interpreter found now
            shutil.rmtree(path)
        base = sandbox_base_python()
        subprocess.run([base, "-m", "venv", str(path)], check=True, timeout=120)
        done = subprocess.run(
            [
                str(path / "bin/python"),
                "-m",
                "pip",
                "install",
                "-q",
                *(arg for f in files for arg in ("-r", str(f))),
            ],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        if done.returncode:
            raise RuntimeError(
                f"pip install -r {' -r '.join(map(str, files))} failed: {done.stderr.strip()[-2000:]}"
            )
        stamp.write_text(digest + "\n")
    return _with_trace_hook(path)


def _with_trace_hook(path: Path) -> Path:
    """``path`` with :data:`TRACE_PTH` in its site-packages (written when missing or stale: an
    env built before it gets it without a rebuild)."""
    for site_packages in glob.glob(str(path / "lib" / "python3*" / "site-packages")):
        target = Path(site_packages) / TRACE_PTH
        if not target.is_file() or target.read_text() != _TRACE_PTH_LINE:
            target.write_text(_TRACE_PTH_LINE)
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
