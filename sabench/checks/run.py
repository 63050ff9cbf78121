"""Running one check on the host: the sandbox programs, the sandbox spec, and how it ended."""

from __future__ import annotations

import json
import secrets
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sabench.checks.outcome import OUTCOMES, Outcome

CHECK_DIR = "/sabench-check"
CHECK_PATH = f"{CHECK_DIR}/check.py"
RUNNER_PATH = f"{CHECK_DIR}/_sabench_runner.py"
MARKER = "[sabench-check "
NONCE_FILE = ".sabench-check-nonce"
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
CHILD = _WIRE + _program("sandbox_child.py")

# The program that runs inside the sandbox: the check's interpreter. Standard library only;
# everything it needs is imported before /submission goes on sys.path, and it never imports the
# submission's code: an import hook turns each submission module into a proxy whose attributes
# live in the child above (one per check, started on the first such import with a clean env,
# its own pipes and its output relayed under a prefix). The nonce comes in a file the runner
# deletes before the child starts, and the runner is made non-dumpable so that the child cannot
# read its memory or environment through /proc. It always ends with os._exit, so threads or
# atexit handlers cannot hold the sandbox open. The child's source replaces its "@CHILD@".
RUNNER = _WIRE + _program("sandbox_runner.py").replace('"@CHILD@"', repr(CHILD))


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


def _parse_log(text: str, nonce: str) -> tuple[dict[str, Any] | None, str]:
    """(the runner's report, the check's own output without sabench's lines)."""
    report = None
    kept = []
    tag = f"{MARKER}{nonce}] "
    for line in text.splitlines():
        if line.startswith(tag):
            try:
                report = json.loads(line[len(tag) :])
            except ValueError:
                report = None
            continue
        if line.startswith("[sabench] ") and not line.startswith("[sabench] ..."):
            continue
        kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    return report, "\n".join(kept)


def run_check(
    check_text: str,
    executed: Path,
    agent_view: Path | None,
    runtime: Mapping[str, Any],
    limits: Mapping[str, Any] | None = None,
    *,
    backend: Any = None,
    sau_id: str = "",
    tail_chars: int = 1500,
) -> Outcome:
    """Run one check in a fresh sandbox on a fresh copy of ``executed``; never raises for what
    the check does. ``runtime`` is resolved (:func:`sabench.sandbox.settings.resolve_runtime`)."""
    from sabench.execute import fresh_copy
    from sabench.sandbox import Mount, SandboxSpec, get_backend

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
        check_dir = scratch / "check"
        check_dir.mkdir()
        (check_dir / "check.py").write_text(check_text, encoding="utf-8")
        (check_dir / "_sabench_runner.py").write_text(RUNNER, encoding="utf-8")
        for path in (check_dir, check_dir / "check.py", check_dir / "_sabench_runner.py"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        mounts = [Mount(check_dir, CHECK_DIR)]
        if agent_view is not None and Path(agent_view).is_dir():
            mounts.append(Mount(Path(agent_view), "/paper"))
        nonce = secrets.token_hex(8)
        # a file the runner reads and deletes: the sandbox's command line and env are visible
        # to every process inside it (/proc/1/cmdline), a deleted file is not
        (work / NONCE_FILE).write_text(nonce, encoding="ascii")
        spec = SandboxSpec(
            command=["python", "-I", "-B", "-u", RUNNER_PATH, CHECK_PATH, "/submission"],
            workdir=work,
            ro_mounts=mounts,
            env={
                "PYTHONPATH": "/submission",
                "PYTHONDONTWRITEBYTECODE": "1",
                "SABENCH_SAU_ID": sau_id,
                "MPLBACKEND": "Agg",
            },
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
        log_path = scratch / "check.log"
        try:
            sandbox = backend or get_backend(runtime.get("backend", "auto"))
            result = sandbox.run(spec, log_path)
        except Exception as exc:  # a broken backend or env: the judgment is an error, not a crash
            return Outcome(
                "error",
                f"sandbox fault: {type(exc).__name__}: {exc}",
                status="sandbox_error",
                wall_s=time.monotonic() - t0,
            )
        text = log_path.read_text(encoding="utf-8", errors="replace") if log_path.is_file() else ""
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    report, output = _parse_log(text, nonce)
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
    if result.status in problems:
        return Outcome("error", problems[result.status], **common)
    if report is None or report.get("kind") not in OUTCOMES:
        return Outcome(
            "error",
            f"the check process ended with status {result.exit_code} before the runner could "
            "report (killed, or os._exit in the code under test)",
            **common,
        )
    where = report.get("where")
    detail = str(report.get("detail") or "")
    if report["kind"] == "pass" and not detail:
        detail = pass_detail(output)
    return Outcome(
        report["kind"],
        detail,
        where=tuple(where) if isinstance(where, list) and len(where) == 2 else None,
        **common,
    )
