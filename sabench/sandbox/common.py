"""Shared by the backends: the sandbox's Python env, its environment, the capped log, waiting,
the host tools they call and the clean-up of folders left by killed runs."""

from __future__ import annotations

import contextlib
import os
import resource
import select
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from sabench.errors import UserError
from sabench.io import atomic_path
from sabench.sandbox import SUBMISSION_TARGET, SandboxSpec

#: Host folders every sandbox sees read-only (where they exist); an env under one needs no bind.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: Where host tools (mount, cp, unshare, bwrap) are looked up: never the caller's PATH.
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: The sandbox user (inside the user namespace; bwrap maps it to the caller outside).
SANDBOX_UID = 1000
SANDBOX_USER = "sandbox"
SIGXFSZ_EXIT = 128 + signal.SIGXFSZ
#: What bash prints when a child dies of SIGXFSZ (the file-size rlimit).
XFSZ_MESSAGE = b"File size limit exceeded"
#: Lines of a log tail that say the command ran out of memory under an address-space rlimit.
_OOM_HINTS = (b"MemoryError", b"Cannot allocate memory", b"std::bad_alloc", b"out of memory")


@dataclass(frozen=True)
class PythonEnv:
    """The project's sandbox Python: a venv (or prefix) plus what it needs to run elsewhere."""

    root: Path
    bin_dir: Path
    #: Host paths to show read-only at the same path: the env and the base interpreter it links to.
    binds: tuple[Path, ...]


def which(name: str) -> str | None:
    """A host tool on :data:`SYSTEM_PATH`, or None."""
    return shutil.which(name, path=SYSTEM_PATH)


def reap_control_dirs(prefix: str) -> None:
    """Unmount and remove the per-run folders (``{prefix}{pid}-*`` in the temp folder) of runs
    whose process died; a folder whose ``stage`` mount will not go stays (the next run retries)."""
    tmp = Path(tempfile.gettempdir())
    for d in tmp.glob(f"{prefix}*-*"):
        pid = d.name[len(prefix) :].split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            stage = d / "stage"
            if os.path.ismount(stage):
                subprocess.run(["umount", "-l", str(stage)], capture_output=True)
            if not os.path.ismount(stage):
                shutil.rmtree(d, ignore_errors=True)


def _under_system(path: Path) -> bool:
    return any(path == Path(d) or Path(d) in path.parents for d in SYSTEM_DIRS)


def resolve_python_env(path: Path | str) -> PythonEnv:
    """Check a sandbox env and find its base interpreter (``pyvenv.cfg`` ``home``), never a shim.

    A venv's ``bin/python`` is a link to the interpreter it was made from, so that prefix must be
    visible inside the sandbox too; pyenv's shims are scripts a sandbox user cannot run.
    """
    root = Path(path).expanduser().resolve()
    bin_dir = root / "bin"
    python = next((bin_dir / n for n in ("python", "python3") if (bin_dir / n).exists()), None)
    if python is None:
        raise UserError(
            root,
            "runtime.python_env",
            "not a Python env (no bin/python); build it from envs/sandbox.txt",
        )
    binds: list[Path] = [root]
    cfg = root / "pyvenv.cfg"
    if cfg.is_file():
        values = {}
        for line in cfg.read_text(encoding="utf-8").splitlines():
            key, sep, value = line.partition("=")
            if sep:
                values[key.strip()] = value.strip()
        home = Path(values.get("home", "")).resolve()
        if not values.get("home") or not home.is_dir():
            raise UserError(cfg, "home", "missing or not a folder: the venv's base Python is gone")
        binds.append(home.parent if home.name == "bin" else home)
    real = python.resolve()
    binds.append(real.parent.parent if real.parent.name == "bin" else real.parent)
    chosen: list[Path] = []
    for bind in binds:
        if "shims" in bind.parts:
            raise UserError(
                root,
                "runtime.python_env",
                f"links to pyenv shims ({bind}); build it from a real Python",
            )
        if _under_system(bind):
            continue  # every sandbox sees it already
        if bind in (Path("/"), Path.home()):
            raise UserError(root, "runtime.python_env", f"would expose {bind} to the sandbox")
        if not any(bind == c or c in bind.parents for c in chosen):
            chosen = [c for c in chosen if bind not in c.parents] + [bind]
    return PythonEnv(root=root, bin_dir=bin_dir, binds=tuple(chosen))


def base_env(
    spec: SandboxSpec, *, penv: PythonEnv | None, home: str, tmpdir: str
) -> dict[str, str]:
    """The whole environment of the sandboxed command: a few fixed variables plus ``spec.env``."""
    path = ([str(penv.bin_dir)] if penv else []) + ["/usr/local/bin", "/usr/bin", "/bin"]
    env = {
        "PATH": ":".join(path),
        "HOME": home,
        "TMPDIR": tmpdir,
        "LANG": "C.UTF-8",
        "USER": SANDBOX_USER,
        "LOGNAME": SANDBOX_USER,
    }
    if penv is not None:
        env["VIRTUAL_ENV"] = str(penv.root)
    env.update(spec.env)
    return env


class LogCapture:
    """Keeps the first and last halves of ``limit`` bytes of a stream and counts the true size.

    A flooding command must not fill the disk, yet the start (setup errors) and the end (the final
    traceback) are what a reader needs.
    """

    def __init__(self, limit_bytes: int) -> None:
        self.head_limit = limit_bytes // 2
        self.tail_limit = limit_bytes - self.head_limit
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_len = 0
        self.total = 0
        self._stop = threading.Event()

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail.append(bytes(chunk))
        self.tail_len += len(chunk)
        while self.tail and self.tail_len - len(self.tail[0]) >= self.tail_limit:
            self.tail_len -= len(self.tail.popleft())

    def render(self) -> bytes:
        tail = b"".join(self.tail)[-self.tail_limit :] if self.tail else b""
        omitted = self.total - len(self.head) - len(tail)
        if omitted <= 0:
            return bytes(self.head) + tail
        marker = f"\n[sabench] ... {omitted} bytes of output omitted (log_limit_kb) ...\n".encode()
        return bytes(self.head) + marker + tail

    def tail_bytes(self, n: int = 4096) -> bytes:
        return self.render()[-n:]

    def start_reader(self, fd: int) -> threading.Thread:
        """Drain ``fd`` in a thread until EOF or :meth:`stop` (which a straggler cannot block)."""

        def loop() -> None:
            poller = select.poll()
            poller.register(fd, select.POLLIN | select.POLLHUP)
            while True:
                if not poller.poll(100):
                    if self._stop.is_set():
                        return
                    continue
                try:
                    chunk = os.read(fd, 1 << 16)
                except OSError:
                    return
                if not chunk:
                    return
                self.feed(chunk)

        thread = threading.Thread(target=loop, name="sabench-log", daemon=True)
        thread.start()
        return thread

    def stop(self, thread: threading.Thread, grace_s: float = 0.5) -> None:
        thread.join(grace_s)
        self._stop.set()
        thread.join(1.0)


def write_log(path: Path, header: list[str], capture: LogCapture, footer: list[str]) -> None:
    """Write header, the capped output and a footer atomically (a killed job leaves no half log)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        for line in header:
            fh.write(f"[sabench] {line}\n".encode())
        body = capture.render()
        fh.write(body)
        if body and not body.endswith(b"\n"):
            fh.write(b"\n")
        for line in footer:
            fh.write(f"[sabench] {line}\n".encode())


def wait_for_exit(pid: int, timeout: float | None) -> tuple[int, resource.struct_rusage] | None:
    """Reap child ``pid`` with its rusage, or None after ``timeout`` s (pidfd: no polling delay)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    if pidfd is not None:
        try:
            poller = select.poll()
            poller.register(pidfd, select.POLLIN)
            wait_ms = (
                None if deadline is None else max(0, int((deadline - time.monotonic()) * 1000))
            )
            if not poller.poll(wait_ms):
                return None
        finally:
            os.close(pidfd)
        _, status, usage = os.wait4(pid, 0)
        return status, usage
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            return status, usage
        if deadline is not None and time.monotonic() >= deadline:
            return None
        time.sleep(0.02)


def exit_code(status: int) -> int:
    """A wait status as a shell would report it (128 + signal for a killed process)."""
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


def looks_like_oom(capture: LogCapture) -> bool:
    """Whether the end of the log says an allocation failed (rlimit fallback; a heuristic)."""
    tail = capture.tail_bytes(8192)
    return any(hint in tail for hint in _OOM_HINTS)


def classify(
    *,
    started: bool,
    exit_code: int | None,
    timed_out: bool,
    oom: bool,
    output_full: bool,
) -> str:
    """One status; the cause beats the symptom (an OOM-killed or disk-full run also fails)."""
    if not started:
        return "sandbox_error"
    if oom:
        return "oom"
    if output_full or exit_code == SIGXFSZ_EXIT:
        return "output_limit"
    if timed_out:
        return "timeout"
    return "ok" if exit_code == 0 else "failed"


def tree_bytes(root: Path) -> int:
    """Apparent size of the regular files under ``root`` (no symlink is followed)."""
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
    return total


#: At a time limit a run's processes get SIGTERM, then this long to end as they would (send their
#: trace, save what a program saves on SIGTERM) before SIGKILL: a timed-out run is a failed run
#: with its record, never one cut off without it.
TERM_GRACE_S = 5.0


def kill_group(pgid: int) -> None:
    """SIGKILL a process group, ignoring one that is already gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def end_group(pid: int, grace_s: float = TERM_GRACE_S) -> tuple[int, resource.struct_rusage] | None:
    """At a time limit: SIGTERM the process group led by child ``pid``, wait up to ``grace_s`` for
    the group to end, then SIGKILL what is left. The leader's (status, rusage) when it ended
    within the grace, else None (it is killed, not reaped)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    waited = wait_for_exit(pid, grace_s)
    while time.monotonic() < deadline:
        try:
            os.killpg(pid, 0)  # a process of the group still runs
        except (ProcessLookupError, PermissionError):
            break
        time.sleep(0.05)
    kill_group(pid)
    return waited


def wait_or_end(pid: int, timeout: float | None) -> tuple[int, resource.struct_rusage] | None:
    """:func:`wait_for_exit` for a sandbox in its own session; when the wait itself is interrupted
    (SIGTERM from sabench.locks, Ctrl-C), the sandbox ends before the job does."""
    try:
        return wait_for_exit(pid, timeout)
    except BaseException:
        kill_group(pid)
        wait_for_exit(pid, None)
        raise


def _class_shift(st: os.stat_result, uid: int, gids: frozenset[int]) -> int:
    """Which permission bits apply to ``uid``: owner (6), group (3) or other (0), as the kernel
    checks a process without CAP_DAC_OVERRIDE (every sandbox user drops it)."""
    if st.st_uid == uid:
        return 6
    return 3 if st.st_gid in gids else 0


def _needs(st: os.stat_result, writable: bool) -> int:
    """r (files), r-x (folders), rwx for the writable root."""
    if stat.S_ISDIR(st.st_mode):
        return 7 if writable else 5
    return 6 if writable else 4


def _entries(root: Path) -> list[tuple[Path, os.stat_result]]:
    """``root`` and everything below it, links not followed (nor reported: their targets are)."""
    out = [(root, os.stat(root))]
    if stat.S_ISDIR(out[0][1].st_mode):
        for dirpath, dirs, files in os.walk(root):
            for name in dirs + files:
                path = Path(dirpath, name)
                with contextlib.suppress(OSError):
                    st = os.lstat(path)
                    if not stat.S_ISLNK(st.st_mode):
                        out.append((path, st))
    return out


def share_read_only(spec: SandboxSpec, uid: int, gid: int) -> int:
    """As root, let the sandbox user ``uid:gid`` read every read-only mount (the paper view):
    read (and search, for folders) bits added where its permission class lacks them, nothing
    taken away. A view made under umask 077, or by mkdtemp before sabench followed the umask, is
    0700 root's, which a container running as uid 1000 cannot open. Returns entries changed."""
    changed = 0
    for mount in spec.ro_mounts:
        for path, st in _entries(mount.source.resolve()):
            shift = _class_shift(st, uid, frozenset({gid}))
            want = _needs(st, False)
            if stat.S_ISREG(st.st_mode) and st.st_mode & 0o111:
                want |= 1  # an executable stays executable for the sandbox user
            if (st.st_mode >> shift) & want != want:
                try:
                    os.chmod(path, stat.S_IMODE(st.st_mode) | (want << shift))
                except OSError:  # read-only or immutable: access_faults names it
                    continue
                changed += 1
    return changed


def access_faults(
    spec: SandboxSpec, submission: Path, uid: int, gids: set[int] | frozenset[int]
) -> list[str]:
    """What the sandbox user ``uid`` (in groups ``gids``) could not do: read an entry of a
    read-only mount, or write the folder shown at /submission. A run that cannot read the paper or
    write its output is the sandbox's fault, not the agent's: the caller makes it a
    ``sandbox_error`` before the run instead of a hollow "ok". Judged by mode bits, as for a
    process without CAP_DAC_OVERRIDE; when the sandbox user is this (non-root) user, by
    ``os.access``, which also honours ACLs."""
    groups = frozenset(gids)
    ask_kernel = uid == os.geteuid() != 0
    faults = []
    checks = [(m.source.resolve(), m.target, False) for m in spec.ro_mounts]
    checks.append((Path(submission), SUBMISSION_TARGET, True))
    for source, target, writable in checks:
        try:
            entries = [(source, os.stat(source))] if writable else _entries(source)
        except OSError as exc:
            faults.append(f"cannot stat {target} (host {source}): {exc.strerror}")
            continue
        for path, st in entries:
            want = _needs(st, writable)
            if ask_kernel:
                flags = (want & 4 and os.R_OK) | (want & 2 and os.W_OK) | (want & 1 and os.X_OK)
                ok = os.access(path, flags)
            else:
                ok = (st.st_mode >> _class_shift(st, uid, groups)) & want == want
            if not ok:
                rel = path.relative_to(source).as_posix()
                inside = target if rel == "." else f"{target}/{rel}"
                what = "write" if writable else "read"
                faults.append(
                    f"the sandbox user (uid {uid} on the host) cannot {what} {inside} ({path}: mode "
                    f"{stat.S_IMODE(st.st_mode):04o}, owner {st.st_uid}:{st.st_gid})"
                )
                break  # one per mount says enough
    return faults
