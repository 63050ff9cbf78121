"""The bubblewrap backend: a daemonless local sandbox for untrusted reproduce.sh runs.

Isolation: new user (uid 1000 inside, no capabilities, no nested user namespaces), pid, network
(none unless ``network="full"``), ipc, uts and cgroup namespaces; a read-only root with only the
system folders, a few /etc files, the sandbox Python env and the read-only mounts;
``/submission`` is the one writable folder. Limits: a per-run cgroup (memory, pids; rlimits
when cgroups are unavailable), a size-limited filesystem under /submission (see ``staging.py``),
a wall-clock timeout that kills the sandbox's pid 1 (which ends every process of its pid
namespace), a capped log.
"""

from __future__ import annotations

import functools
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
from typing import Any

from sabench.errors import UserError
from sabench.sandbox import SUBMISSION_TARGET, RunResult, Sandbox, SandboxSpec
from sabench.sandbox.cgroups import CgroupUnavailable, RunCgroup
from sabench.sandbox.common import (
    SANDBOX_UID,
    SANDBOX_USER,
    SYSTEM_PATH,
    TERM_GRACE_S,
    XFSZ_MESSAGE,
    LogCapture,
    PythonEnv,
    access_faults,
    base_env,
    classify,
    kill_group,
    looks_like_oom,
    reap_control_dirs,
    resolve_python_env,
    share_read_only,
    tree_bytes,
    wait_for_exit,
    wait_or_end,
    which,
    write_log,
)

log = logging.getLogger("sabench.sandbox.bwrap")

STAGE_SCRIPT = Path(__file__).with_name("staging.py")
HOME_INSIDE = "/tmp/home"
#: /etc entries every sandbox gets (linker cache, Debian's alternatives links, the time zone).
ETC_ALWAYS = ("ld.so.cache", "alternatives", "localtime")
#: Extra /etc entries with ``network="full"`` (name resolution, TLS roots for package indexes).
ETC_NETWORK = (
    "resolv.conf",
    "hosts",
    "host.conf",
    "gai.conf",
    "nsswitch.conf",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
)
ROOT_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
#: Placeholders the helper replaces (the mounted output folder, the status pipe's fd number).
SUBMISSION_PLACEHOLDER = "@SUBMISSION@"
STATUS_FD_PLACEHOLDER = "@STATUSFD@"
CONTROL_PREFIX = "sabench-bwrap-"


@functools.lru_cache(maxsize=4)
def _probe(bwrap: str) -> tuple[bool, str, str, frozenset[str]]:
    """Run a trivial sandbox once per process: (works, why not, version, optional flags known).

    ``--disable-userns`` (0.8) and ``--size`` (0.7) are used where this bwrap has them.
    """
    try:
        version = subprocess.run(
            [bwrap, "--version"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
        helptext = subprocess.run(
            [bwrap, "--help"], capture_output=True, text=True, timeout=10
        ).stdout
        done = subprocess.run(
            [bwrap, "--unshare-all", "--unshare-user", "--cap-drop", "ALL", "--die-with-parent",
             "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"],
            capture_output=True, text=True, timeout=20,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"{bwrap}: {exc}", "", frozenset()
    flags = frozenset(f for f in ("--disable-userns", "--size") if f in helptext)
    if done.returncode:
        why = f"{bwrap} cannot create namespaces: {done.stderr.strip()[-300:]}"
        return False, why, version, flags
    return True, "", version, flags


def _etc_files(control: Path, network: str) -> dict[str, Path]:
    """Generated /etc files: a passwd/group naming the sandbox user, and a loopback-only hosts."""
    files = {
        "passwd": f"root:x:0:0:root:/root:/usr/sbin/nologin\n"
        f"{SANDBOX_USER}:x:{SANDBOX_UID}:{SANDBOX_UID}:{SANDBOX_USER}:{HOME_INSIDE}:/bin/bash\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
        "group": f"root:x:0:\n{SANDBOX_USER}:x:{SANDBOX_UID}:\nnogroup:x:65534:\n",
    }
    if network == "none":
        files["hosts"] = "127.0.0.1 localhost\n::1 localhost\n"
    out = {}
    for name, text in files.items():
        path = control / f"etc-{name}"
        path.write_text(text, encoding="utf-8")
        out[name] = path
    return out


def image_capacity(workdir: Path, output_limit: int) -> tuple[int, int, int]:
    """(bytes the workdir occupies, 4 KiB blocks per file/dir; image size; inodes to make)."""
    used = 0
    entries = 0
    for dirpath, dirs, files in os.walk(workdir):
        used += 4096
        entries += 1 + len(dirs) + len(files)
        for name in files:
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            used += -(-st.st_size // 4096) * 4096 + 4096
    need = used + output_limit
    # ext4 keeps a few % for inode tables and group descriptors; the surplus is filled by the
    # helper with a hidden file, so the limit stays exact. Inodes: the existing files plus
    # one per 16 KiB of output allowed.
    inodes = entries + max(16384, output_limit // 16384)
    return used, need + max(16 << 20, need // 16) + inodes * 256, inodes


def _refuse_shadowed(penv: PythonEnv, targets: list[str]) -> None:
    """The sandbox's own mounts come after the python env's binds: one at or above them would
    hide the interpreter (bwrap: "execvp python: No such file or directory")."""
    for bind in penv.binds:
        for target in targets:
            if Path(target) == bind or Path(target) in bind.parents:
                raise UserError(
                    penv.root,
                    "runtime.python_env",
                    f"{bind} lies under {target}, where the sandbox mounts its own files; "
                    "keep the project (or the env) elsewhere",
                )


class BwrapSandbox(Sandbox):
    """bubblewrap with user namespaces; see the module docstring for what it isolates."""

    name = "bwrap"
    isolation = (
        "sandboxed (bubblewrap): user/pid/net/ipc/uts/cgroup namespaces, no capabilities, "
        f"uid {SANDBOX_UID}, read-only system, only {SUBMISSION_TARGET} writable"
    )
    needs_python_env = True

    def __init__(
        self, bwrap: str | None = None, output_fs: tuple[str, ...] = ("ext4", "tmpfs")
    ) -> None:
        """``output_fs``: filesystems to try for /submission, in order ("ext4" on a loop device,
        "tmpfs"); empty binds the workdir itself (file-size rlimit and an after-the-fact check)."""
        self.bwrap = bwrap or which("bwrap") or "/usr/bin/bwrap"
        self.output_fs = tuple(output_fs)

    def available(self) -> tuple[bool, str]:
        if not os.path.exists(self.bwrap):
            return False, "bubblewrap is not installed (apt-get install bubblewrap)"
        ok, why, _, _ = _probe(self.bwrap)
        return ok, why

    def describe(self, spec: SandboxSpec | None = None) -> dict[str, Any]:
        info = super().describe(spec)
        info["version"] = _probe(self.bwrap)[2] if os.path.exists(self.bwrap) else ""
        return info

    def build_argv(
        self,
        spec: SandboxSpec,
        penv: PythonEnv,
        etc_files: dict[str, Path],
        *,
        submission: str = SUBMISSION_PLACEHOLDER,
        status_fd: str = STATUS_FD_PLACEHOLDER,
    ) -> list[str]:
        """The bwrap command line (pure: no I/O beyond looking at which host paths exist)."""
        flags = _probe(self.bwrap)[3] if os.path.exists(self.bwrap) else frozenset()
        argv = [self.bwrap, "--unshare-all"]
        if spec.network == "full":
            argv.append("--share-net")
        argv.append("--unshare-user")  # as root, without it the sandbox keeps CAP_SYS_ADMIN
        if "--disable-userns" in flags:  # no nested user namespaces (kernel attack surface)
            argv.append("--disable-userns")
        argv += [
            "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
            "--cap-drop", "ALL",
            "--die-with-parent",
            "--new-session",
            "--hostname", "sandbox",
            "--clearenv",
        ]  # fmt: skip
        env = base_env(spec, penv=penv, home=HOME_INSIDE, tmpdir="/tmp")
        for key, value in env.items():
            argv += ["--setenv", key, value]
        argv += ["--ro-bind", "/usr", "/usr"]
        for name in ROOT_DIRS:
            host = Path("/") / name
            if host.is_symlink():
                argv += ["--symlink", os.readlink(host), str(host)]
            elif host.is_dir():
                argv += ["--ro-bind", str(host), str(host)]
        # Sized scratch tmpfs (memory, charged to the run's cgroup); old bwraps cannot size them.
        shm = ["--size", str(max(64 << 20, spec.mem_bytes // 2))] if "--size" in flags else []
        tmp = ["--size", str(spec.output_limit_bytes)] if "--size" in flags else []
        argv += [
            "--proc", "/proc",
            "--dev", "/dev",
            *shm, "--tmpfs", "/dev/shm",
            "--remount-ro", "/dev",
            *tmp, "--tmpfs", "/tmp",
            "--dir", HOME_INSIDE,
            "--dir", "/etc",
        ]  # fmt: skip
        names = ETC_ALWAYS + (ETC_NETWORK if spec.network == "full" else ())
        for name in names:
            if name in etc_files:
                continue
            host = Path("/etc") / name
            if host.exists():
                argv += ["--ro-bind", str(host), str(host)]
        for name, path in sorted(etc_files.items()):
            argv += ["--ro-bind", str(path), f"/etc/{name}"]
        for bind in penv.binds:
            argv += ["--ro-bind", str(bind), str(bind)]
        for mount in spec.ro_mounts:
            argv += ["--ro-bind", str(mount.source.resolve()), mount.target]
        argv += [
            "--bind", submission, SUBMISSION_TARGET,
            "--chdir", SUBMISSION_TARGET,
            "--remount-ro", "/",
            "--json-status-fd", status_fd,
            "--",
            *spec.command,
        ]  # fmt: skip
        return argv

    def run(self, spec: SandboxSpec, log_path: Path) -> RunResult:
        try:
            return self._run(spec, Path(log_path))
        except OSError as exc:  # host trouble setting the sandbox up: a status, not a crash
            log.exception("bwrap sandbox setup failed")
            header = [f"backend bwrap; command: {shlex.join(spec.command)}"]
            return self._fail(Path(log_path), header, LogCapture(1024), f"setup failed: {exc}")

    def _run(self, spec: SandboxSpec, log_path: Path) -> RunResult:
        capture = LogCapture(spec.log_limit_kb * 1024)
        limits = (
            f"time {spec.time_limit_s:g} s, memory {spec.mem_mb} MB, pids {spec.pids}, "
            f"output {spec.output_limit_mb} MB, network {spec.network}"
        )
        header = [f"backend bwrap; command: {shlex.join(spec.command)}", f"limits: {limits}"]
        ok, why = self.available()
        if not ok:
            return self._fail(log_path, header, capture, f"bwrap unavailable: {why}")
        if spec.python_env is None:
            raise UserError(None, "runtime.python_env", "the bwrap backend needs the sandbox env")
        penv = resolve_python_env(spec.python_env)
        _refuse_shadowed(penv, [SUBMISSION_TARGET, *(m.target for m in spec.ro_mounts)])
        if not spec.workdir.is_dir():
            return self._fail(log_path, header, capture, f"workdir {spec.workdir} is not a folder")
        workdir = spec.workdir.resolve()
        is_root = os.geteuid() == 0
        enforcement: dict[str, str] = {}
        notes: list[str] = []
        # uid 1000 inside is this user outside, without capabilities: root's DAC override is gone
        uid, gid = os.geteuid(), os.getegid()
        if is_root:
            widened = share_read_only(spec, uid, gid)
            if widened:
                notes.append(f"made {widened} read-only mount entries readable for the sandbox")
        faults = access_faults(spec, workdir, uid, {gid, *os.getgroups()})
        if faults:
            return self._fail(log_path, header, capture, "; ".join(faults))
        reap_control_dirs(CONTROL_PREFIX)
        control = Path(tempfile.mkdtemp(prefix=f"{CONTROL_PREFIX}{os.getpid()}-"))
        cgroup: RunCgroup | None = None
        try:
            try:
                cgroup = RunCgroup.create(spec.mem_bytes, spec.pids)
            except CgroupUnavailable as exc:
                notes.append(f"cgroups unavailable ({exc}): memory/pids fall back to rlimits")
            used, image_bytes, inodes = image_capacity(workdir, spec.output_limit_bytes)
            fs_bytes = used + spec.output_limit_bytes
            # A file-size cap just above the filesystem's: ENOSPC comes first; it stops sparse
            # giants (and is the only output cap where no filesystem can be mounted).
            rlimits = {"RLIMIT_FSIZE": fs_bytes + (1 << 20), "RLIMIT_CORE": 0}
            if cgroup is not None:
                enforcement["memory"] = f"{cgroup.describe()} hard limit"
                enforcement["pids"] = f"{cgroup.describe()} pids.max"
            else:
                if not spec.gpus:  # CUDA maps huge address ranges: an AS limit would break it
                    rlimits["RLIMIT_AS"] = spec.mem_bytes
                enforcement["memory"] = (
                    "RLIMIT_AS (address space; no cgroup)" if not spec.gpus else "NOT enforced"
                )
                enforcement["pids"] = "NOT enforced (no cgroup; RLIMIT_NPROC is per user)"
            enforcement["time"] = (
                f"wall clock; SIGTERM of the run's processes, {TERM_GRACE_S:g} s later SIGKILL of "
                "the sandbox's pid 1 (it ends its namespace)"
            )
            stage_dir = control / "stage"
            stage_dir.mkdir()
            etc = _etc_files(control, spec.network)
            argv = self.build_argv(spec, penv, etc)
            fs_order = list(self.output_fs) if is_root and which("unshare") else []
            if self.output_fs and not fs_order:
                notes.append("not root: /submission is the workdir itself (no size-limited fs)")
            plan = {
                "parent_pid": os.getpid(),
                "workdir": str(workdir),
                "stage_dir": str(stage_dir),
                "image_dir": str(workdir.parent),
                "image_bytes": image_bytes,
                "inodes": inodes,
                "fs_bytes": fs_bytes,
                "fs_order": fs_order,
                "tools": {
                    "mount": which("mount"),
                    "umount": which("umount"),
                    "mkfs": which("mkfs.ext4"),
                    "cp": which("cp"),
                },
                "bwrap_argv": argv,
                "cgroup_procs": cgroup.procs_files if cgroup else [],
                "rlimits": rlimits,
                "time_limit_s": spec.time_limit_s,
                "term_grace_s": TERM_GRACE_S,
                "status_path": str(control / "status.json"),
                "result_path": str(control / "result.json"),
            }
            (control / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
            helper = [sys.executable, "-I", "-S", str(STAGE_SCRIPT), str(control / "plan.json")]
            if fs_order:
                helper = [
                    which("unshare") or "unshare",
                    "--mount",
                    "--propagation",
                    "private",
                    "--",
                    *helper,
                ]
            started = time.monotonic()
            try:
                proc = subprocess.Popen(
                    helper,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    env={"PATH": SYSTEM_PATH, "LANG": "C.UTF-8"},
                )
            except OSError as exc:
                return self._fail(log_path, header, capture, f"cannot start the helper: {exc}")
            assert proc.stdout is not None
            reader = capture.start_reader(proc.stdout.fileno())
            # Copying in and out is the helper's; give it time on top of the command's limit.
            grace = 60 + 2 * image_bytes / (100 << 20)
            waited = wait_or_end(proc.pid, spec.time_limit_s + grace)
            if waited is None:
                notes.append("the sandbox helper hung and was killed")
                kill_group(proc.pid)
                if cgroup is not None:
                    cgroup.kill_all()
                waited = wait_for_exit(proc.pid, None)
            assert waited is not None
            proc.returncode = os.waitstatus_to_exitcode(waited[0])
            capture.stop(reader)
            proc.stdout.close()
            total_wall = time.monotonic() - started
            try:
                res = json.loads((control / "result.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                res = {"error": f"the helper exited {proc.returncode} without a result (see log)"}
            oom_kills = cgroup.oom_kills() if cgroup else 0
            peak = cgroup.peak_bytes() if cgroup else None
            pid_hits = cgroup.pids_limit_hits() if cgroup else 0
        finally:
            if cgroup is not None:
                cgroup.kill_all()
                if not cgroup.remove():
                    log.warning("could not remove cgroup %s", cgroup.dirs)
            shutil.rmtree(control, ignore_errors=True)
        return self._finish(
            spec,
            log_path,
            header,
            capture,
            res,
            enforcement,
            notes,
            {
                "oom_kills": oom_kills,
                "peak": peak,
                "pid_hits": pid_hits,
                "total_wall": total_wall,
                "used": used,
                "has_cgroup": cgroup is not None,
            },
        )

    def _finish(
        self,
        spec: SandboxSpec,
        log_path: Path,
        header: list[str],
        capture: LogCapture,
        res: dict[str, Any],
        enforcement: dict[str, str],
        notes: list[str],
        stats: dict[str, Any],
    ) -> RunResult:
        """Turn the helper's result and the cgroup's counters into a status and a message."""
        notes = list(notes) + list(res.get("messages", []))
        fs = res.get("fs", "none")
        if fs == "none":
            enforcement["output"] = "RLIMIT_FSIZE per file + total size checked after the run"
        else:
            enforcement["output"] = (
                f"{fs} filesystem holding the existing files + output_limit_mb"
                f" ({(res.get('fs_total') or 0) >> 20} MiB image)"
            )
        exit_code = res.get("exit_code")
        started = bool(res.get("started")) and not res.get("error")
        output_full = bool(res.get("output_full")) or XFSZ_MESSAGE in capture.render()
        if fs == "none" and started:
            grown = tree_bytes(spec.workdir) - stats["used"]
            output_full = output_full or grown > spec.output_limit_bytes
        oom = exit_code not in (0, None) and (
            stats["oom_kills"] > 0 if stats["has_cgroup"] else looks_like_oom(capture)
        )
        status = classify(
            started=started,
            exit_code=exit_code,
            timed_out=bool(res.get("timed_out")),
            oom=oom,
            output_full=output_full,
        )
        parts: list[str] = []
        if res.get("error"):
            parts.append(f"sandbox error: {res['error']}")
        elif not started:
            text = capture.render().decode(errors="replace")
            bwrap_lines = [line for line in text.splitlines() if line.startswith("bwrap:")]
            parts.append(
                "bwrap could not start: " + (bwrap_lines[-1] if bwrap_lines else "see log")
            )
        if status == "timeout":
            parts.append(f"killed after time_limit_s={spec.time_limit_s:g}")
        if status == "oom":
            how = (
                f"{stats['oom_kills']} OOM kill(s) in the cgroup"
                if stats["has_cgroup"]
                else "an allocation failed under RLIMIT_AS (read from the log)"
            )
            parts.append(f"out of memory (mem_mb={spec.mem_mb}; {how})")
        if status == "output_limit":
            parts.append(f"output exceeded output_limit_mb={spec.output_limit_mb}")
        if status == "failed":
            parts.append(f"reproduce command exited {exit_code}")
        if spec.gpus:
            parts.append(f"gpus={spec.gpus!r} recorded; the bwrap backend exposes no GPU devices")
        if stats["pid_hits"]:
            parts.append(f"pids limit ({spec.pids}) reached {stats['pid_hits']} time(s)")
        cleaned = res.get("sanitized") or {}
        if cleaned.get("setid_cleared"):
            parts.append(f"cleared setuid/setgid bits on {cleaned['setid_cleared']} file(s)")
        if cleaned.get("special_removed"):
            parts.append(f"removed {cleaned['special_removed']} fifo(s)/socket(s)")
        if cleaned.get("links_removed"):
            parts.append(f"removed {cleaned['links_removed']} link(s) pointing outside /submission")
        parts += notes
        peak = stats["peak"]
        if peak is not None:
            peak_mb: float | None = round(peak / (1 << 20), 1)
        elif res.get("maxrss_kb") is not None:
            peak_mb = round(res["maxrss_kb"] / 1024, 1)
            enforcement["peak_mem"] = "largest process's max RSS (no cgroup)"
        else:
            peak_mb = None
        wall = float(res.get("wall_s") or 0.0)
        message = "; ".join(parts)
        footer = [
            f"status={status} exit_code={exit_code} wall_s={wall:.2f} "
            f"peak_mem_mb={peak_mb} log_bytes={capture.total} "
            f"(helper total {stats['total_wall']:.2f} s)",
            *(f"note: {p}" for p in parts),
        ]
        write_log(log_path, header, capture, footer)
        return RunResult(
            status=status,
            exit_code=exit_code,
            wall_s=wall,
            peak_mem_mb=peak_mb,
            log_bytes=capture.total,
            message=message,
            enforcement=enforcement,
        )

    def _fail(self, log_path: Path, header: list[str], capture: LogCapture, why: str) -> RunResult:
        write_log(log_path, header, capture, [f"status=sandbox_error: {why}"])
        return RunResult("sandbox_error", None, 0.0, None, 0, why)
