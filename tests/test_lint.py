"""Style gates users and contributors rely on: ruff, ruff format and snakefmt are clean."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    "command",
    [
        ["ruff", "check", "."],
        ["ruff", "format", "--check", "."],
        ["snakefmt", "--check", "Snakefile", "rules/"],
    ],
    ids=["ruff", "ruff-format", "snakefmt"],
)
def test_clean(command: list[str]) -> None:
    proc = subprocess.run(
        [str(BIN / command[0]), *command[1:]], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
