"""Executing mutants: each mutant's reproduce.sh runs in the project's sandbox as the workflow's
execute step runs a submission (:func:`sabench.execute.execute_run`: a fresh ``executed/`` copy,
the execution trace, the runtime limits), so the judges that read results (exec's
expected results and checks, static's result claims) get the record a real run of that code gives.

Only code that brings its environment can run: the demo papers' reference submissions need nothing
but the sandbox Python env; SA-Bench's runs come without theirs (no datasets, no packages), so they
are judged unexecuted. A sandbox that cannot start says nothing of the mutant: it is a
:class:`~sabench.faults.Fault`, which :func:`sabench.drift.evaluate.judge_mutants` records instead
of a score.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sabench.faults import Fault

#: The sandbox of a mutant's run: bwrap (no engine to start), no network; the demo runs take about a
#: second, so limits far below the workflow's stop a mutant that loops or grows as the run's status.
DRIFT_RUNTIME: dict[str, Any] = {
    "backend": "bwrap",
    "network": "none",
    "time_limit_s": 120,
    "mem_mb": 2048,
    "pids": 256,
    "output_limit_mb": 256,
}


@dataclass(frozen=True)
class Execution:
    """How the mutants are executed: the sandbox settings (also given to the judges that run
    code, so checks use the same sandbox)."""

    runtime: dict[str, Any] = field(default_factory=dict)

    def run(self, run_dir: Path) -> dict[str, Any]:
        """Execute ``run_dir/submission`` into ``run_dir/executed``; the execution record. Raises
        :class:`Fault` when the sandbox could not run it (the record then means nothing)."""
        from sabench.execute import execute_run

        record = execute_run(
            run_dir / "submission",
            run_dir / "executed",
            run_dir / "execution.json",
            run_dir / "execution.log",
            self.runtime,
        )
        if record["status"] == "sandbox_error":
            raise Fault("sandbox_error", f"execute: {record['message']}")
        return record


def sandbox_execution(runtime: Mapping[str, Any] | None = None) -> Execution:
    """Resolve the sandbox settings of the mutants' executions (:data:`DRIFT_RUNTIME`, then
    ``runtime``; the sandbox Python env by default), so a broken configuration is a user error
    before any mutant runs. reproduce.sh is shown no paper, as in the workflow."""
    from sabench.sandbox.settings import default_python_env, resolve_runtime

    given = {**DRIFT_RUNTIME, **(runtime or {})}
    if given.get("backend") == "local" or given.get("network", "none") != "none":
        from sabench.errors import UserError

        raise UserError(
            None,
            "--runtime",
            "mutants run only in a sandbox without network (got backend="
            f"{given.get('backend')!r}, network={given.get('network')!r})",
        )
    given["python_env"] = given.get("python_env") or default_python_env()
    resolve_runtime(given)  # raises UserError naming the runtime key at fault
    return Execution(given)
