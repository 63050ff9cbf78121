"""The packages a ResearchCodeBench paper's tests import that a Python env lacks: why a paper is
not runnable here, named (sabench.peer_data.rcb_drift.paper_environment)."""

from __future__ import annotations

import ast
import contextlib
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from sabench.peer_data.researchcodebench import RCBPaper


def imported_modules(paper: RCBPaper) -> list[str]:
    """The top-level modules, not the paper's own nor Python's, that the tests' entry point
    imports, directly or through the paper's own modules (any import, in a function too)."""
    own = {p[:-3].replace("/", ".").removesuffix(".__init__"): p for p in paper.files}
    own = {m: p for m, p in own.items() if p.endswith(".py")}
    found: set[str] = set()
    todo, seen = [paper.test_entry_point[:-3].replace("/", ".")], set()
    while todo:
        module = todo.pop()
        if module in seen or module not in own:
            continue
        seen.add(module)
        with contextlib.suppress(SyntaxError, ValueError):
            for node in ast.walk(ast.parse(paper.files[own[module]])):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                else:
                    continue  # relative imports stay in the paper
                todo += [n for n in names if n in own]
                found |= {n.split(".")[0] for n in names[:1] if not _local(n, own)}
    return sorted(m for m in found if m not in sys.stdlib_module_names)


def _local(name: str, own: Mapping[str, str]) -> bool:
    top = name.split(".")[0]  # a module of the paper's own packages, present or not
    return any(m == top or m.startswith(top + ".") for m in own)


def missing_modules(paper: RCBPaper, python_env: Path | str) -> list[str]:
    """:func:`imported_modules` that the Python env cannot find."""
    probe = (
        "import importlib.util as u, sys; print(*(m for m in sys.argv[1:] if not u.find_spec(m)))"
    )
    python = str(Path(python_env) / "bin" / "python")
    cmd = [python, "-I", "-c", probe, *imported_modules(paper)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    return done.stdout.split() if done.returncode == 0 else []
