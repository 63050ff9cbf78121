"""Content hashes of what a check sees, the key of its outcome, and the on-disk cache of outcomes."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sabench.checks.outcome import Outcome
from sabench.checks.run import DEFAULT_LIMITS

#: Bump when the meaning of an outcome changes (the source hash covers the rest).
HARNESS_VERSION = "1"
#: Folders and files left out of the content hash of the executed copy (derived from the sources).
_DIGEST_SKIP_DIRS = frozenset({"__pycache__", ".pytest_cache", ".ipynb_checkpoints"})
_DIGEST_SKIP_SUFFIXES = (".pyc", ".pyo")
#: Files that are bookkeeping, not content (Snakemake marks directory outputs with one).
IGNORED_FILES = frozenset({".snakemake_timestamp"})


def tree_digest(root: Path | None) -> str | None:
    """Content hash of a folder (paths, sizes, bytes, link targets); bytecode caches left out."""
    if root is None or not Path(root).is_dir():
        return None
    digest = hashlib.sha256()
    base = str(root)
    for dirpath, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d not in _DIGEST_SKIP_DIRS)
        for name in sorted(files):
            if name.endswith(_DIGEST_SKIP_SUFFIXES) or name in IGNORED_FILES:
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, base)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                digest.update(f"L {rel}\0{os.readlink(path)}\0".encode("utf-8", "surrogateescape"))
            elif stat.S_ISREG(st.st_mode):
                digest.update(f"F {rel}\0{st.st_size}\0".encode("utf-8", "surrogateescape"))
                try:
                    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
                    with os.fdopen(fd, "rb") as fh:
                        for block in iter(lambda fh=fh: fh.read(1 << 20), b""):
                            digest.update(block)
                except OSError:
                    digest.update(b"<unreadable>")
        # links to folders are listed among dirs by os.walk (never followed): hash them too
        for name in list(dirs):
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                rel = os.path.relpath(path, base)
                digest.update(f"L {rel}\0{os.readlink(path)}\0".encode("utf-8", "surrogateescape"))
                dirs.remove(name)
    return digest.hexdigest()


def _sha(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


#: The harness's own code (this package, the sandbox programs included, and the trace site every
#: process of a check loads, which joins its workers to the check): any change to it invalidates
#: every cached outcome.
_SITE = Path(__file__).parents[1] / "sandbox"
HARNESS_HASH = _sha(
    HARNESS_VERSION.encode()
    + b"".join(path.read_bytes() for path in sorted(Path(__file__).parent.glob("*.py")))
    + b"".join(
        (_SITE / name).read_bytes()
        for name in ("trace_wrapping.py", "trace_site.py", "trace_join.py")
    )
)


def env_identity(backend: str, runtime: Mapping[str, Any]) -> dict[str, Any]:
    """What the sandbox's software is: backend, image, Python env, its interpreter and its pins."""
    ident: dict[str, Any] = {"backend": backend, "image": runtime.get("image")}
    env = runtime.get("python_env")
    if env:
        root = Path(env).expanduser().resolve()
        python = root / "bin" / "python"
        stamp = root / ".sabench-requirements.sha256"
        ident["python_env"] = str(root)
        ident["python"] = str(python.resolve()) if python.exists() else None
        ident["requirements"] = stamp.read_text().strip() if stamp.is_file() else None
        cfg = root / "pyvenv.cfg"
        ident["pyvenv"] = _sha(cfg.read_bytes())[:16] if cfg.is_file() else None
    return ident


def cache_key(
    check_text: str,
    submission_digest: str | None,
    env: Mapping[str, Any],
    limits: Mapping[str, Any],
) -> str:
    """The content address of one check's outcome: what the sandbox gets (the executed copy with
    the run's trace, the check, the env, the limits) and nothing it does not (no SAU, no paper)."""
    data = {
        "harness": HARNESS_HASH,
        "check": _sha(check_text),
        "submission": submission_digest,
        "env": dict(env),
        "limits": {k: limits[k] for k in sorted(DEFAULT_LIMITS) if k in limits},
    }
    return _sha(json.dumps(data, sort_keys=True, default=str))


def default_cache_dir() -> Path:
    """``$SABENCH_EXEC_CACHE``, else ``.cache/sabench/exec`` in the repository (git-ignored)."""
    env = os.environ.get("SABENCH_EXEC_CACHE")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / ".cache" / "sabench" / "exec"


class CheckCache:
    """One JSON file per key under ``root/<2 hex>/``, written by atomic rename."""

    def __init__(self, root: Path | str | None) -> None:
        self.root = Path(root) if root else None

    def _path(self, key: str) -> Path:
        assert self.root is not None
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Outcome | None:
        if self.root is None:
            return None
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
            outcome = Outcome(**data)
        except (OSError, ValueError, TypeError):
            return None
        outcome.cached = True
        return outcome

    def put(self, key: str, outcome: Outcome) -> None:
        if self.root is None or outcome.kind == "error":  # faults may be transient: retry them
            return
        from sabench.io import write_json

        with contextlib.suppress(OSError):  # a read-only or full cache never fails a judgment
            write_json(self._path(key), outcome.to_json())


# --- running one check -----------------------------------------------------------------------
