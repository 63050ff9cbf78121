"""The local backend: a plain subprocess. UNSANDBOXED: for trusted replays and tests only.

It sees the whole host as the calling user. What it does enforce: a fresh environment (never the
host's), a new session whose whole process group is killed at the time limit and at the end, and
rlimits (address space, CPU time, file size, core dumps; process count when not root), and
``CUDA_VISIBLE_DEVICES`` = the devices allocated to the run (none for a run without GPUs).
Read-only mounts cannot be shown at their targets; the log says so.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sabench.sandbox import RunResult, Sandbox, SandboxSpec
from sabench.sandbox.common import (
    TERM_GRACE_S,
    XFSZ_MESSAGE,
    LogCapture,
    PythonEnv,
    base_env,
    classify,
    end_group,
    exit_code,
    kill_group,
    looks_like_oom,
    resolve_python_env,
    tree_bytes,
    wait_for_exit,
    wait_or_end,
    write_log,
)
from sabench.sandbox.gpu import cuda_visible_devices

log = logging.getLogger("sabench.sandbox.local")

WARNING = (
    "WARNING: backend 'local' is UNSANDBOXED: the command runs as this user with full access to "
    "the host (files, network, processes). Use it for trusted code only."
)
#: Applies rlimits then execs the command (no preexec_fn: the caller may have threads).
_SHIM = (
    "import json,os,resource,sys\n"
    "for k,v in json.loads(sys.argv[1]).items():\n"
    " r=getattr(resource,k);h=resource.getrlimit(r)[1]\n"
    " v=v if h==resource.RLIM_INFINITY else min(v,h)\n"
    " resource.setrlimit(r,(v,v))\n"
    "os.execvp(sys.argv[2],sys.argv[2:])\n"
)


def _user_process_count(uid: int) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    count += 1
            except OSError:
                continue
    return count


class LocalSandbox(Sandbox):
    """A subprocess with limits; labelled UNSANDBOXED everywhere it is recorded."""

    name = "local"
    isolation = "UNSANDBOXED (local subprocess: host files, network and user; rlimits only)"
    needs_python_env = False

    def available(self) -> tuple[bool, str]:
        return True, "always (unsandboxed)"

    def run(self, spec: SandboxSpec, log_path: Path) -> RunResult:
        log_path = Path(log_path)
        log.warning(WARNING)
        capture = LogCapture(spec.log_limit_kb * 1024)
        header = [WARNING, f"backend local; command: {shlex.join(spec.command)}"]
        header += [
            f"mount {m.target} is NOT applied (local); its host path is {m.source}"
            for m in spec.ro_mounts
        ]
        if spec.network == "none":
            header.append("network=none is NOT enforced (local)")
        penv = resolve_python_env(spec.python_env) if spec.python_env is not None else None
        home = Path(tempfile.mkdtemp(prefix="sabench-home-"))
        try:
            return self._run(spec, log_path, capture, header, penv, home)
        finally:
            shutil.rmtree(home, ignore_errors=True)

    def _run(
        self,
        spec: SandboxSpec,
        log_path: Path,
        capture: LogCapture,
        header: list[str],
        penv: PythonEnv | None,
        home: Path,
    ) -> RunResult:
        env = base_env(spec, penv=penv, home=str(home), tmpdir=str(home))
        visible = cuda_visible_devices(spec.gpus)
        if visible is not None and "CUDA_VISIBLE_DEVICES" not in spec.env:
            env["CUDA_VISIBLE_DEVICES"] = visible
            if visible:
                header.append(f"GPUs: CUDA_VISIBLE_DEVICES={visible}")
        used = tree_bytes(spec.workdir)
        limits = {
            "RLIMIT_FSIZE": used + spec.output_limit_bytes,
            "RLIMIT_CORE": 0,
            # CPU seconds over all cores: a backstop if this process dies and cannot kill it.
            "RLIMIT_CPU": int(spec.time_limit_s * (os.cpu_count() or 1)) + 10,
        }
        enforcement = {
            "time": f"wall clock; SIGTERM of the process group, SIGKILL {TERM_GRACE_S:g} s later "
            "(+ RLIMIT_CPU backstop)",
            "output": "RLIMIT_FSIZE per file + total size checked after the run",
        }
        if spec.gpus:
            enforcement["memory"] = "NOT enforced (an address-space limit breaks CUDA)"
        else:
            limits["RLIMIT_AS"] = spec.mem_bytes
            enforcement["memory"] = "RLIMIT_AS (address space)"
        if os.geteuid() == 0:
            enforcement["pids"] = "NOT enforced (RLIMIT_NPROC does not bind root)"
        else:
            limits["RLIMIT_NPROC"] = _user_process_count(os.geteuid()) + spec.pids
            enforcement["pids"] = "RLIMIT_NPROC (counts all of this user's processes)"
        argv = [sys.executable, "-I", "-S", "-c", _SHIM, json.dumps(limits), *spec.command]
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                argv,
                cwd=spec.workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            write_log(log_path, header, capture, [f"status=sandbox_error: {exc}"])
            return RunResult("sandbox_error", None, 0.0, None, 0, f"cannot start: {exc}")
        assert proc.stdout is not None
        reader = capture.start_reader(proc.stdout.fileno())
        waited = wait_or_end(proc.pid, spec.time_limit_s)
        timed_out = waited is None
        if timed_out:  # SIGTERM, TERM_GRACE_S to end as they would, then SIGKILL
            waited = end_group(proc.pid)
        kill_group(proc.pid)  # stragglers left in the background after the run
        if waited is None:
            waited = wait_for_exit(proc.pid, None)
        assert waited is not None
        wall = round(time.monotonic() - started, 3)
        status_word, usage = waited
        proc.returncode = os.waitstatus_to_exitcode(status_word)
        capture.stop(reader)
        proc.stdout.close()
        code = exit_code(status_word)
        output_full = (
            tree_bytes(spec.workdir) - used > spec.output_limit_bytes
            or XFSZ_MESSAGE in capture.render()
        )
        oom = code != 0 and "RLIMIT_AS" in limits and looks_like_oom(capture)
        status = classify(
            started=True, exit_code=code, timed_out=timed_out, oom=oom, output_full=output_full
        )
        parts = ["UNSANDBOXED (local backend)"]
        if status == "timeout":
            parts.append(f"killed after time_limit_s={spec.time_limit_s:g}")
        elif status == "failed":
            parts.append(f"reproduce command exited {code}")
        elif status == "oom":
            parts.append(f"out of memory under RLIMIT_AS (mem_mb={spec.mem_mb})")
        elif status == "output_limit":
            parts.append(f"output exceeded output_limit_mb={spec.output_limit_mb}")
        peak = round(usage.ru_maxrss / 1024, 1)
        enforcement["peak_mem"] = "largest process's max RSS"
        footer = [
            f"status={status} exit_code={code} wall_s={wall:.2f} peak_mem_mb={peak} "
            f"log_bytes={capture.total}",
            WARNING,
        ]
        write_log(log_path, header, capture, footer)
        return RunResult(status, code, wall, peak, capture.total, "; ".join(parts), enforcement)
