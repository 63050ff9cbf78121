"""Running one check on the host: the sandbox programs, the sandbox spec, and how it ended."""

from __future__ import annotations

import ast
import json
import secrets
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sabench.checks.outcome import OUTCOMES, Outcome

SUBMISSION = "/submission"
#: The runner and everything it is told (check, nonce, limits, the calls to replay) arrive as two
#: files in the working folder that the runner reads and deletes before any submission code runs:
#: the code under test finds no mount, file, variable or argument naming the check or the SAU.
RUNNER_FILE = ".sabench-runner.py"
PARAMS_FILE = ".sabench-check.json"
MARKER = "[sabench-check "
#: How many of the run's recorded calls of the modules a check imports it may replay.
MAX_REPLAY_CALLS = 256
#: Limits of one check; the runtime config gives the backend, image and Python env.
DEFAULT_LIMITS: dict[str, Any] = {
    "time_limit_s": 60,
    "mem_mb": 1024,
    "pids": 128,
    "output_limit_mb": 64,
    "log_limit_kb": 64,
}


def _program(name: str) -> str:
    """The text of one sandbox program of this package (sent to the sandbox byte for byte)."""
    return Path(__file__).with_name(name).read_text(encoding="utf-8")


# The wire both processes speak: length-prefixed JSON, values as data (never pickle). Arrays cross
# as {dtype, shape, base64 bytes}; objects that are not data stay where they live and cross as a
# handle ("__ref__" from the child, "__cb__" for a function of the check).
_WIRE = _program("sandbox_wire.py")

# The child: the submission's own interpreter. It imports what the check asks for and serves the
# check's calls; its results go back as data (or handles), its exceptions as descriptions.
# It starts as ``python -c`` in the submission's folder, which puts that folder ('') first on its
# path: its own imports (the standard library's) come before the submission's folder goes on it,
# or a submission's traceback.py would be the harness's traceback.
CHILD = 'import sys\nsys.path[:1] = [] if sys.path[:1] == [""] else sys.path[:1]\n'
CHILD += _WIRE + _program("sandbox_serve.py") + _program("sandbox_child.py")

# A worker of the code under test (a process it started that imports anew): the trace site of
# every Python process joins a check's runner where one listens, and runs this program it sends.
WORKER = _WIRE + _program("sandbox_serve.py") + _program("sandbox_worker.py")

# The program that runs inside the sandbox: the check's interpreter. Standard library only;
# everything it needs is imported before /submission goes on sys.path, and it never imports the
# submission's code: an import hook turns each submission module into a proxy whose attributes
# live in the child above (one per check, started on the first such import with the environment
# of the real run, its own pipes and its output relayed under a prefix). Its inputs come in a file
# it deletes before the child starts, and it is made non-dumpable so that the child cannot read
# its memory through /proc. It prints a canary as it starts the child (a report missing after it
# is the code under test's doing), and always ends with os._exit, so threads or atexit handlers
# cannot hold the sandbox open. The child's source replaces its "@CHILD@", and where a check's
# target lives (sandbox_targets.py) its "@TARGETS@", and its callers in the code under test
# (sandbox_peers.py) its "@PEERS@".
RUNNER = _WIRE + (
    _program("sandbox_runner.py")
    .replace('"@CHILD@"', repr(CHILD))
    .replace('"@WORKER@"', repr(WORKER))
    .replace('"@TARGETS@"\n', _program("sandbox_targets.py"))
    .replace('"@PEERS@"\n', _program("sandbox_peers.py"))
)


def check_syntax(text: str) -> str | None:
    """The check's syntax error as one line, or None (compiling runs nothing)."""
    try:
        compile(text, "check.py", "exec")
    except (SyntaxError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


#: How the runner marks the relayed output of the code under test (``sandbox_runner.PREFIX``).
CODE_UNDER_TEST = "[code under test] "


def pass_detail(output: str) -> str:
    """What a passed check says: its own last line. Relayed output of the code under test arrives
    in no fixed order relative to it (that depends on the backend's pipes), so it never names a
    pass; the same run gives the same reasoning on every backend."""
    lines = [
        line.strip()
        for line in output.splitlines()
        if line.strip() and not line.startswith(CODE_UNDER_TEST)
    ]
    return lines[-1][:300] if lines else "the check ran to the end"


def ordered_output(output: str) -> str:
    """The relayed output of the code under test, then the check's own (whose end says why it
    ended, so a tail keeps it): each stream keeps its order, but how the two interleave depends on
    the backend's pipes, and the reasoning that quotes them must not differ between backends."""
    lines = output.splitlines()
    own = [line for line in lines if not line.startswith(CODE_UNDER_TEST)]
    relayed = [line for line in lines if line.startswith(CODE_UNDER_TEST)]
    return "\n".join(relayed + own)


def _parse_log(text: str, nonce: str) -> tuple[dict[str, Any] | None, bool, str]:
    """(the runner's report, whether its canary came (the code under test started), the check's
    own output without sabench's lines)."""
    report = None
    started = False
    kept = []
    tag = f"{MARKER}{nonce}] "
    for line in text.splitlines():
        if line.startswith(tag):
            try:
                said = json.loads(line[len(tag) :])
            except ValueError:
                said = None
            if isinstance(said, dict) and said.get("kind") == "started":
                started = True
            else:
                report = said
            continue
        if line.startswith("[sabench] ") and not line.startswith("[sabench] ..."):
            continue
        kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    return report, started, "\n".join(kept)


def replay_calls(executed: Path, check_text: str) -> list[dict[str, Any]]:
    """The calls the run's own execution recorded (:mod:`sabench.runtrace`) of the modules the
    check imports, for the runner to replay on the functions it uses; none without a trace."""
    from sabench.runtrace import read_trace

    trace = read_trace(executed)
    if trace is None:
        return []
    modules = set()
    for node in ast.walk(ast.parse(check_text)):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules.add(node.module)
        elif isinstance(node, ast.Import):
            modules.update(a.name for a in node.names)
    return [c for c in trace.calls if c.get("module") in modules][:MAX_REPLAY_CALLS]


def run_argv(executed: Path) -> list[str]:
    """The command line the run's entry point saw (``sys.argv``), for the check's child to see
    too: code that parses its arguments at a call answers as it did in its run."""
    from sabench.runtrace import read_trace

    trace = read_trace(executed)
    return list(trace.entry_argv) if trace is not None else []


def _sandbox_fault(exc: Exception, t0: float) -> Outcome:
    return Outcome(
        "error",
        f"sandbox fault: {type(exc).__name__}: {exc}",
        status="sandbox_error",
        wall_s=time.monotonic() - t0,
    )


def run_check(
    check_text: str,
    executed: Path,
    runtime: Mapping[str, Any],
    limits: Mapping[str, Any] | None = None,
    *,
    backend: Any = None,
    tail_chars: int = 1500,
) -> Outcome:
    """Run one check in a fresh sandbox on a fresh copy of ``executed``; never raises for what
    the check does. ``runtime`` is resolved (:func:`sabench.sandbox.settings.resolve_runtime`).
    The sandbox is the real run's (same environment, no paper, no check on disk)."""
    from sabench.execute import arm_trace, fresh_copy
    from sabench.sandbox import SandboxSpec, get_backend
    from sabench.sandbox.pyenv import TRACE_PTH_VARIABLE

    lim = {**DEFAULT_LIMITS, **(limits or {})}
    syntax = check_syntax(check_text)
    if syntax:
        return Outcome("error", f"the check does not parse: {syntax}")
    if not Path(executed).is_dir():
        return Outcome("error", f"no executed copy at {executed}: nothing to check")
    t0 = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="sabench-check-"))
    try:
        work = scratch / "submission"
        fresh_copy(Path(executed), work)
        nonce = secrets.token_hex(8)
        params = {
            "nonce": nonce,
            "check": check_text,
            "time_limit_s": float(lim["time_limit_s"]),
            "replay": replay_calls(Path(executed), check_text),
            "argv": run_argv(Path(executed)),
        }
        (work / RUNNER_FILE).write_text(RUNNER, encoding="utf-8")
        try:
            sandbox = backend or get_backend(runtime.get("backend", "auto"))
        except Exception as exc:  # a broken backend or env: the judgment is an error, not a crash
            return _sandbox_fault(exc, t0)
        log_path = scratch / "check.log"
        # the execution's own trace site, channel and environment: the code under test sees its
        # run's (what the channel receives here is not kept)
        with arm_trace(getattr(sandbox, "name", ""), work) as (channel, env, mounts):
            # where the runner serves the workers of the code under test (their trace site knows)
            params["workers"] = channel.workers
            (work / PARAMS_FILE).write_text(json.dumps(params), encoding="utf-8")
            spec = SandboxSpec(
                command=["python", "-I", "-B", "-u", f"{SUBMISSION}/{RUNNER_FILE}", SUBMISSION],
                workdir=work,
                ro_mounts=mounts,
                env={**env, TRACE_PTH_VARIABLE: "off"},
                time_limit_s=float(lim["time_limit_s"]),
                mem_mb=int(lim["mem_mb"]),
                pids=int(lim["pids"]),
                output_limit_mb=int(lim["output_limit_mb"]),
                log_limit_kb=int(lim["log_limit_kb"]),
                network="none",
                gpus=0,
                image=runtime.get("image"),
                python_env=runtime.get("python_env"),
            )
            try:
                result = sandbox.run(spec, log_path)
            except Exception as exc:
                return _sandbox_fault(exc, t0)
        text = log_path.read_text(encoding="utf-8", errors="replace") if log_path.is_file() else ""
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    report, started, output = _parse_log(text, nonce)
    tail = ordered_output(output)[-tail_chars:] if tail_chars > 0 else ""
    common = {
        "tail": tail,
        "exit_code": result.exit_code,
        "status": result.status,
        "wall_s": round(result.wall_s, 3),
    }
    problems = {
        "sandbox_error": f"sandbox fault: {result.message or 'see log'}",
        "timeout": f"the check did not finish within {lim['time_limit_s']:g} s",
        "oom": f"the check ran out of memory ({lim['mem_mb']} MB)",
        "output_limit": f"the check wrote more than {lim['output_limit_mb']} MB",
    }
    if report is None and started and result.status not in problems:
        # the runner was up and never reported: only the code under test can have ended it
        return Outcome(
            "crash",
            f"the check's process ended (status {result.exit_code}) while the code under test ran:"
            " it killed the check (os.kill of its parent, a signal to every process)",
            **common,
        )
    if result.status in problems:
        return Outcome("error", problems[result.status], **common)
    if report is None or report.get("kind") not in OUTCOMES:
        return Outcome(
            "error",
            f"the check's process ended with status {result.exit_code} without a report, before "
            "any code under test ran (a fault of the check or the harness)",
            **common,
        )
    where = report.get("where")
    detail = str(report.get("detail") or "")
    if report["kind"] == "pass" and not detail:
        detail = pass_detail(output)
    lines = report.get("lines")
    return Outcome(
        report["kind"],
        detail,
        where=tuple(where) if isinstance(where, list) and len(where) == 2 else None,
        lines=_lines(lines) if isinstance(lines, dict) else None,
        **common,
    )


def _lines(raw: dict[Any, Any]) -> dict[str, list[int]]:
    return {
        str(rel): sorted({n for n in nums if isinstance(n, int) and not isinstance(n, bool)})
        for rel, nums in raw.items()
        if isinstance(nums, list)
    }
