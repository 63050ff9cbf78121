"""One spending cap for every LLM request of a grid: agents, judges and SAU extraction, across jobs,
processes and (on a shared filesystem) cluster nodes.

Each request's cost is appended to one ledger file (JSON lines, under an exclusive ``flock``); before
a request, the ledger's total is read back and the request refused once the cap is reached. Answers
from the response cache cost nothing and are never refused. Requests already in flight when the cap
is reached still finish, so the total can pass the cap by what those cost. Calls that litellm cannot
price (and no ``prices`` setting covers) count as free.

The workflow hands the cap (``llm_budget_usd``) and the ledger (``<results>/logs/llm_spend.jsonl``)
to every job in the environment: ``SABENCH_LLM_BUDGET_USD`` and ``SABENCH_LLM_LEDGER``.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

BUDGET_ENV = "SABENCH_LLM_BUDGET_USD"
LEDGER_ENV = "SABENCH_LLM_LEDGER"


class BudgetSpent(Exception):
    """The cap is reached: no further request may be sent (a rerun with a higher cap continues)."""


class SpendLedger:
    """The ledger file and its cap; the running total is re-read from what was appended since."""

    def __init__(self, path: Path | str, limit_usd: float) -> None:
        self.path = Path(path)
        self.limit_usd = float(limit_usd)
        self._offset = 0
        self._total = 0.0

    @classmethod
    def from_env(cls) -> SpendLedger | None:
        """The grid's ledger when the workflow set one, else None (no cap)."""
        limit, path = os.environ.get(BUDGET_ENV), os.environ.get(LEDGER_ENV)
        if not limit or not path:
            return None
        try:
            return cls(path, float(limit))
        except ValueError:
            raise BudgetSpent(f"{BUDGET_ENV}={limit!r} is not a number of dollars") from None

    def spent(self) -> float:
        """Dollars recorded so far by every process (reads only what was appended since)."""
        try:
            with self.path.open("rb") as fh:
                fh.seek(self._offset)
                chunk = fh.read()
        except FileNotFoundError:
            return self._total
        complete = chunk[: chunk.rfind(b"\n") + 1]  # a line being written is read next time
        for line in complete.splitlines():
            try:
                self._total += float(json.loads(line)["cost_usd"])
            except (ValueError, KeyError, TypeError):
                continue  # a damaged line costs nothing rather than stopping the grid
        self._offset += len(complete)
        return self._total

    def check(self) -> None:
        """Raise :class:`BudgetSpent` when no further request may be sent."""
        spent = self.spent()
        if spent >= self.limit_usd:
            raise BudgetSpent(
                f"the grid's LLM budget of ${self.limit_usd:g} (llm_budget_usd) is spent: "
                f"${spent:.4f} recorded in {self.path}; raise it and rerun (answered calls come "
                "from the cache, free)"
            )

    def add(self, cost_usd: float, model: str, prompt_tokens: int, completion_tokens: int) -> None:
        """Record one request's cost (an append under an exclusive lock: whole lines only)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(
            {
                "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "model": model,
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "cost_usd": cost_usd,
                "pid": os.getpid(),
            }
        )
        with self.path.open("a", encoding="utf-8") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                fh.write(line + "\n")
                fh.flush()
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)
