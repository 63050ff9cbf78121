"""Executable SAUs: checks that run against the executed submission, and expected results.

A **check** is a short Python program (``check`` inline in saus.yaml, or ``check_file``). It runs in
a fresh sandbox on a fresh copy of the run's ``executed/`` folder, never on ``executed/`` itself:

* ``/submission``: the copy (the working directory, writable, size-limited) and first on sys.path;
  the runner and its inputs (the check, the nonce, the calls to replay) arrive there as two files it
  deletes before any submission code runs; no paper, no check mount, no variable naming the SAU:
  the environment is the real run's (docs/checks.md, "What the code under test can learn").

No network, time / memory / pids / output limits, the project's pinned sandbox Python. The runner
executes the check as ``__main__`` and reports how it ended on one marker line carrying a per-run
nonce, so a check is classified by what happened, not only by its exit status. The submission's
code never runs in the runner's interpreter: its modules are proxies for a child process, and what
crosses is data (docs/checks.md, "Keeping a check out of reach"):

============================================================  ===============================
how the check ended                                           outcome
============================================================  ===============================
ran to the end, or ``sys.exit(0)`` from the check itself      ``pass`` (aligned)
``assert`` failed, any exception, ``sys.exit(n != 0)``        ``fail`` (drifted)
``NotImplementedError`` from the code under test              ``placeholder``
an import of the submission's own code failed                 ``missing`` (omission)
the code under test exited, killed the check or hung it       ``crash`` (drifted)
passed, but a function it used returns on its own run's       ``inconsistent`` (drifted)
inputs what it did not return in that run
does not parse, a ``NameError`` in the check, tried the       ``error`` (never drift)
network or to write outside its folder, timed out computing,
ran out of memory or output, a sandbox fault, no report
before any code under test ran
============================================================  ===============================

Outcomes other than ``error`` are cached on disk (one JSON file per key, atomic rename), keyed by
the harness code, the check text and its SAU id, the content of the executed copy and of the agent
view, the sandbox (backend, image, Python env and its pinned requirements) and the check limits:
rerunning or adding judges never re-runs a check.

An **expected** result (``{metric, value, tolerance}`` or a list) is matched against the metrics the
execution captured: absent -> ``missing``, outside the tolerance -> ``drifted``, else aligned.
"""

from sabench.checks.cache import (
    HARNESS_HASH,
    HARNESS_VERSION,
    IGNORED_FILES,
    CheckCache,
    cache_key,
    default_cache_dir,
    env_identity,
    tree_digest,
)
from sabench.checks.expected import Expectation, ExpectedError, match_expected, parse_expected
from sabench.checks.outcome import OUTCOMES, Outcome
from sabench.checks.run import (
    CHILD,
    DEFAULT_LIMITS,
    MARKER,
    PARAMS_FILE,
    RUNNER,
    RUNNER_FILE,
    check_syntax,
    run_check,
)

__all__ = [
    "CHILD",
    "DEFAULT_LIMITS",
    "HARNESS_HASH",
    "HARNESS_VERSION",
    "IGNORED_FILES",
    "MARKER",
    "OUTCOMES",
    "PARAMS_FILE",
    "RUNNER",
    "RUNNER_FILE",
    "CheckCache",
    "Expectation",
    "ExpectedError",
    "Outcome",
    "cache_key",
    "check_syntax",
    "default_cache_dir",
    "env_identity",
    "match_expected",
    "parse_expected",
    "run_check",
    "tree_digest",
]
