"""Atomic writes and table I/O: a killed job never leaves a half-written file."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
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


def write_parquet(path: str | Path, frame: Any, /, **metadata: str) -> None:
    """Write a pandas DataFrame as Parquet with the schema version in its metadata."""
    import pyarrow as pa

    write_table(path, pa.Table.from_pandas(frame, preserve_index=False), **metadata)


def spare_pandas() -> None:
    """For a step that uses pyarrow without pandas (a batch step's small tables): pyarrow imports
    pandas the first time it converts Python objects, only to ask whether they are pandas
    objects, and that import is half a second of CPU, most of such a step's start. Where pandas is
    not loaded yet, that first question is answered "no pandas" (pyarrow keeps the answer for its
    array conversions, and still imports pandas if the step ever converts to or from it)."""
    import sys

    import pyarrow as pa

    if "pandas" in sys.modules:
        return
    sys.meta_path.insert(0, _NoPandas)
    try:
        pa.array([None])
    finally:
        sys.meta_path.remove(_NoPandas)


class _NoPandas:
    """A module finder for which pandas is not installed (see :func:`spare_pandas`)."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


def arrow_table(
    rows: list[dict[str, Any]], columns: Sequence[str], types: dict[str, Any] | None = None
) -> Any:
    """Rows as an Arrow table with the types pandas would give them (strings as large_string,
    integers with a null as double, a column of nulls as null), without importing pandas: a
    batch step writing a few small tables would spend most of its time importing it. ``types``
    casts the named columns (e.g. a score that may be all null is still double)."""
    import pyarrow as pa

    arrays = []
    for name in columns:
        values = [row.get(name) for row in rows]
        kind = types.get(name) if types else None
        if kind is None:
            # the type first, then the array: no cast (pyarrow.compute's import is 0.1 s)
            kind = pa.infer_type(values)
            if pa.types.is_string(kind):
                kind = pa.large_string()
            elif pa.types.is_integer(kind) and None in values:
                kind = pa.float64()
        arrays.append(pa.array(values, type=kind))
    return pa.Table.from_arrays(arrays, names=list(columns))


def write_table(path: str | Path, table: Any, /, **metadata: str) -> None:
    """Write an Arrow table as Parquet with the schema version in its metadata (atomically)."""
    import pyarrow.parquet as pq

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
