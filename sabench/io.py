"""Atomic writes and table I/O: a killed job never leaves a half-written file."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sabench import SCHEMA_VERSION, __version__


def current_umask() -> int:
    """The process's umask, read without changing it (``/proc/self/status``); elsewhere set and
    restored at once (another thread creating a file in that instant would get mode 022)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def output_mode(*, directory: bool = False) -> int:
    """The mode a plain ``open``/``mkdir`` would give: 0666 (0777 for a folder) less the umask.
    mkstemp/mkdtemp make 0600/0700 whatever the umask, which would hide every output from the
    rest of a cluster group."""
    return (0o777 if directory else 0o666) & ~current_umask()


@contextmanager
def atomic_path(path: str | Path, *, directory: bool = False) -> Iterator[Path]:
    """Yield a temporary sibling of ``path``; rename it onto ``path`` only on success. It has the
    mode of a plain new file or folder (the umask's, see :func:`output_mode`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{path.name}.tmp-"
    if directory:
        tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=path.parent))
        os.chmod(tmp, output_mode(directory=True))
    else:
        fd, name = tempfile.mkstemp(prefix=prefix, dir=path.parent)
        try:
            os.fchmod(fd, output_mode())
        finally:
            os.close(fd)
        tmp = Path(name)
    try:
        yield tmp
        if directory and path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    except BaseException:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.unlink(missing_ok=True)
        raise


def write_text(path: str | Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path: str | Path, data: Any) -> None:
    write_text(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def read_json(path: str | Path) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def write_parquet(path: str | Path, frame: Any, **metadata: str) -> None:
    """Write a pandas DataFrame as Parquet with the schema version in its metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = table.replace_schema_metadata(sabench_metadata(table.schema.metadata, **metadata))
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


def sabench_metadata(meta: dict[bytes, bytes] | None, **metadata: str) -> dict[bytes, bytes]:
    """A Parquet schema's metadata plus ours: the schema version, sabench's, and ``metadata``."""
    out = dict(meta or {})
    out[b"sabench.schema_version"] = SCHEMA_VERSION.encode()
    out[b"sabench.version"] = __version__.encode()
    for key, value in metadata.items():
        out[f"sabench.{key}".encode()] = str(value).encode()
    return out


def read_parquet_metadata(path: str | Path) -> dict[str, str]:
    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    return {
        k.decode()[len("sabench.") :]: v.decode()
        for k, v in meta.items()
        if k.startswith(b"sabench.")
    }
