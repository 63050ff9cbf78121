"""Atomic outputs have the modes a plain open/mkdir would give: the umask's, not mkstemp's 0600."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pandas as pd
import pytest
from sandbox_access import umask

from sabench.io import atomic_path, current_umask, write_json, write_parquet, write_text
from sabench.llm.cache import LLMCache

MASKS = [pytest.param(0o022, id="umask022"), pytest.param(0o027, id="umask027")]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("mask", MASKS)
def test_current_umask_reads_without_changing_it(mask: int) -> None:
    with umask(mask):
        assert current_umask() == mask
        assert current_umask() == mask
        assert os.umask(mask) == mask  # still in force


@pytest.mark.parametrize("mask", MASKS)
def test_atomic_outputs_follow_the_umask(tmp_path: Path, mask: int) -> None:
    """Tables, records and folders a cluster group can read (0644/0755 under 022, 0640/0750
    under 027), where mkstemp/mkdtemp alone leave 0600/0700."""
    with umask(mask):
        write_text(tmp_path / "report.md", "# report\n")
        write_json(tmp_path / "record.json", {"a": 1})
        write_parquet(tmp_path / "table.parquet", pd.DataFrame({"x": [1, 2]}))
        with atomic_path(tmp_path / "folder", directory=True) as tmp:
            (tmp / "inside.txt").write_text("x")
        with atomic_path(tmp_path / "raw.bin") as tmp, open(tmp, "wb") as fh:
            fh.write(b"\0")
        LLMCache(tmp_path / "cache").put("ab" * 32, {"response": "hi"})
    files = ["report.md", "record.json", "table.parquet", "raw.bin", "folder/inside.txt"]
    for name in files:
        assert mode(tmp_path / name) == 0o666 & ~mask, name
    assert mode(tmp_path / "folder") == 0o777 & ~mask
    (entry,) = (tmp_path / "cache").glob("??/*.json")
    assert mode(entry) == 0o666 & ~mask
    assert not list(tmp_path.glob(".*tmp*"))  # nothing left behind


def test_a_failed_write_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), atomic_path(tmp_path / "out", directory=True) as tmp:
        (tmp / "half").write_text("x")
        raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []
