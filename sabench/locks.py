"""One writer per results folder, one process per step of a run, no job outliving its snakemake.

Snakemake's own lock lives in its working directory's ``.snakemake/``, but ``results=`` can be
anywhere: two checkouts writing one results folder would delete each other's files. So a run holds
``<results>/.sabench.lock`` from ``onstart`` to its end (:func:`acquire_results`). Each step of a
run (``reproduce``, ``execute``, ``judge-<judge>``) holds ``<run>/.lock-<step>`` while it works
(:func:`job_guard`): a job whose snakemake was killed (``kill -9``) and a resumed job never run two
sandboxes for one run.

The lock is an fcntl (POSIX) lock on the file, which the kernel, or the NFS server, releases when
the holding process dies; the file also carries a record of the holder (host, pid, user, start,
command, a heartbeat every ``HEARTBEAT_S``), so a free lock with a record left in it is stale and
is taken over with a warning, unless the record is another host's and still beating (a mount whose
locks are host-local). Where the filesystem cannot lock (ENOLCK, EOPNOTSUPP) the record alone is
the lock: stale when its pid is dead on this host, or, from another host, when its heartbeat is
older than ``STALE_AFTER_S``. The holder never opens the lock file a second time: closing any descriptor of
a file drops the process's fcntl locks on it.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import fcntl
import getpass
import json
import logging
import os
import shlex
import signal
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

log = logging.getLogger("sabench.locks")

RESULTS_LOCK = ".sabench.lock"
#: ``host:pid`` of the snakemake that runs the job (set by rules/common.smk at parse time).
SNAKEMAKE_ENV = "SABENCH_SNAKEMAKE"
#: How often a record-only lock (no fcntl) refreshes its heartbeat, and when it counts as stale.
HEARTBEAT_S = 30.0
STALE_AFTER_S = 300.0
#: How often the watchdog looks at snakemake and a waiting job at the lock.
POLL_S = 2.0
#: How long a job ended with SIGTERM gets to remove its sandbox before SIGKILL.
TERM_GRACE_S = 30.0
HOST = socket.gethostname()
_UNSUPPORTED = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS}


def proc_start(pid: int) -> str:
    """The process's start time in clock ticks ('' when it is gone): tells a reused pid apart."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return ""
    return "" if fields[0] in ("Z", "X") else fields[19]


def alive(pid: int, start: str = "") -> bool:
    """Whether ``pid`` runs on this host (and is the process that started at ``start``)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    now = proc_start(pid)
    if not now and os.path.isdir("/proc/self"):
        return False  # a zombie, or gone since
    return not start or not now or now == start


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def _record(**extra: Any) -> dict[str, Any]:
    pid = os.getpid()
    return {
        "host": HOST,
        "pid": pid,
        "proc_start": proc_start(pid),
        "user": _user(),
        "since": _now(),
        "command": shlex.join(sys.argv),
        "token": uuid.uuid4().hex,
        "heartbeat": time.time(),
        **extra,
    }


def _parse(text: str) -> dict[str, Any] | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def read_record(path: Path) -> dict[str, Any] | None:
    """The holder's record, or None (no file, empty, or being written). Never call this in the
    holding process: closing the file would drop its lock."""
    try:
        return _parse(path.read_text(encoding="utf-8"))
    except OSError:
        return None


def describe(record: dict[str, Any] | None) -> str:
    """'host H, pid P, user U, since T' for messages."""
    if not record:
        return "an unknown holder (no readable record)"
    return (
        f"host {record.get('host', '?')}, pid {record.get('pid', '?')}, "
        f"user {record.get('user', '?')}, since {record.get('since', '?')}"
    )


def is_stale(record: dict[str, Any]) -> bool:
    """Record-only locking: the holder is gone (dead on this host, or no heartbeat for long)."""
    if record.get("host") == HOST:
        pid = record.get("pid")
        return not isinstance(pid, int) or not alive(pid, str(record.get("proc_start") or ""))
    beat = record.get("heartbeat")
    return not isinstance(beat, (int, float)) or time.time() - beat > STALE_AFTER_S


@dataclass
class Held:
    """A lock this process holds; ``previous`` is the stale record it took over, if any."""

    path: Path
    record: dict[str, Any]
    fd: int | None  # the locked descriptor; None: record-only locking
    previous: dict[str, Any] | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _mutex: threading.Lock = field(default_factory=threading.Lock)  # a beat never outlives fd

    def start_heartbeat(self) -> None:
        threading.Thread(target=self._beat, name=f"heartbeat {self.path}", daemon=True).start()

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            with self._mutex:
                if self._stop.is_set():
                    return
                self.record["heartbeat"] = time.time()
                if self.fd is not None:  # through the locked descriptor: never reopen the file
                    with contextlib.suppress(OSError):
                        _write_fd(self.fd, self.record)
                    continue
                current = read_record(self.path)
                if not current or current.get("token") != self.record["token"]:
                    return  # taken over, or removed by hand
                _write_replace(self.path, self.record)

    def release(self) -> None:
        """Remove the record and unlock; the file goes first so that no one locks a dead file."""
        with self._mutex:
            self._stop.set()
        if self.fd is None:
            current = read_record(self.path)
            if current and current.get("token") == self.record["token"]:
                with contextlib.suppress(OSError):
                    self.path.unlink()
            return
        with contextlib.suppress(OSError):
            if _same_file(self.fd, self.path):
                self.path.unlink()
        with contextlib.suppress(OSError):
            os.close(self.fd)
        self.fd = None


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    own = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)


def _write_replace(path: Path, record: dict[str, Any]) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record), encoding="utf-8")
    os.replace(tmp, path)


def _write_fd(fd: int, record: dict[str, Any]) -> None:
    data = json.dumps(record).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)
    os.fsync(fd)


def try_lock(
    path: Path, *, remote_beat_holds: bool = True, **extra: Any
) -> tuple[Held | None, dict[str, Any] | None]:
    """Take ``path`` now, or say who holds it: ``(Held, None)`` or ``(None, holder's record)``.
    ``remote_beat_holds``: a free lock whose record still beats on another host counts as held."""
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EACCES, errno.EAGAIN):
                return None, _holder(path)
            if exc.errno in _UNSUPPORTED:
                return _try_record_lock(path, extra)
            raise
        if not _same_file(fd, path):  # released (removed) between our open and our lock
            os.close(fd)
            continue
        previous = _parse(os.pread(fd, 1 << 16, 0).decode(errors="replace"))
        if (
            remote_beat_holds
            and previous
            and previous.get("host") != HOST
            and not is_stale(previous)
        ):
            # free here, yet beating on another host: a mount whose locks are host-local (nolock)
            os.close(fd)
            return None, previous
        record = _record(locking="fcntl", **extra)
        _write_fd(fd, record)
        held = Held(path, record, fd, previous)
        held.start_heartbeat()
        return held, None


def _holder(path: Path) -> dict[str, Any] | None:
    """The record of a held lock; the holder may be writing it this instant."""
    for _ in range(10):
        record = read_record(path)
        if record:
            return record
        time.sleep(0.1)
    return None


def _try_record_lock(path: Path, extra: dict[str, Any]) -> tuple[Held | None, dict | None]:
    """No fcntl on this filesystem: the record is the lock (created by link, which is atomic on
    NFS too); a stale one is replaced."""
    record = _record(locking="record (this filesystem has no fcntl locks)", **extra)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    for _ in range(10):
        previous = read_record(path)
        if previous and not is_stale(previous):
            return None, previous
        tmp.write_text(json.dumps(record), encoding="utf-8")
        try:
            if previous is None and not path.exists():
                os.link(tmp, path)
                tmp.unlink()
            else:
                os.replace(tmp, path)
        except FileExistsError:
            tmp.unlink()
            continue
        time.sleep(0.05)
        current = read_record(path)
        if current and current.get("token") == record["token"]:
            held = Held(path, record, None, previous)
            held.start_heartbeat()
            return held, None
    return None, read_record(path)


# The results folder: one snakemake at a time.

_results: Held | None = None


def acquire_results(results: str | Path) -> None:
    """Hold ``<results>/.sabench.lock`` until this process ends (release_results or exit); another
    run's live lock ends this one with one line (SystemExit), a stale one is taken over."""
    global _results
    if _results is not None:
        return
    root = Path(results).resolve()
    path = root / RESULTS_LOCK
    try:
        held, holder = try_lock(path, results=str(root), workdir=os.getcwd())
    except OSError as exc:
        sys.exit(f"error: {path}: cannot lock the results folder: {exc}")
    if held is None:
        sys.exit(
            f"error: results folder {root} is in use by another sabench run ({describe(holder)}"
            + (f": {holder['command']}" if holder and holder.get("command") else "")
            + f"); wait for it to end, or, if it is no longer running, delete {path} and start again"
        )
    if held.previous:
        print(
            f"warning: {path}: taking over the stale lock of a run that is no longer running "
            f"({describe(held.previous)})",
            file=sys.stderr,
        )
    _results = held
    atexit.register(release_results)


def release_results() -> None:
    """Give the results folder up (the last thing a run does; also at exit)."""
    global _results
    if _results is not None:
        _results.release()
        _results = None


# One step of one run: one process, ended with its snakemake.


def mark_snakemake() -> None:
    """Name this process (snakemake, at parse time) in its jobs' environment, for the watchdog."""
    os.environ[SNAKEMAKE_ENV] = f"{HOST}:{os.getpid()}"


def _snakemake() -> tuple[int, str] | None:
    """The snakemake that runs this job, when it runs on this host: ``(pid, start)``."""
    host, _, pid = os.environ.get(SNAKEMAKE_ENV, "").rpartition(":")
    if host != HOST or not pid.isdigit():
        return None
    return int(pid), proc_start(int(pid))


def _descendants(pid: int) -> list[int]:
    """``pid``'s descendants (from /proc), children before grandchildren."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def end_process(pid: int, start: str, grace_s: float = TERM_GRACE_S) -> None:
    """SIGTERM ``pid`` (its handler removes its sandbox), wait, then SIGKILL it and what is left
    of its process tree. The tree, not the process group: jobs share snakemake's group, which may
    be the user's shell's."""
    tree = _descendants(pid)
    starts = {p: proc_start(p) for p in tree}
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if alive(pid, start):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while alive(pid, start) and time.monotonic() < deadline:
        time.sleep(0.1)
    for victim, since in [(pid, start), *starts.items()]:
        if alive(victim, since):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(victim, signal.SIGKILL)


def _take_run_lock(path: Path, stage: str, snakemake: tuple[int, str] | None) -> Held:
    """Wait for ``path``; end a holder on this host whose snakemake is gone (an orphan)."""
    sm = {"snakemake": f"{HOST}:{snakemake[0]}:{snakemake[1]}"} if snakemake else {}
    said = ""
    while True:
        # a job killed on another node leaves a beating record: its free lock is trusted here
        held, holder = try_lock(path, remote_beat_holds=False, stage=stage, **sm)
        if held is not None:
            return held
        pid = holder.get("pid") if holder else None
        if holder and holder.get("host") == HOST and isinstance(pid, int):
            start = str(holder.get("proc_start") or "")
            if not alive(pid, start):
                time.sleep(0.2)  # a new holder is writing its record, or record-only locking
                continue
            sm_host, _, sm_rest = str(holder.get("snakemake") or "").partition(":")
            sm_pid, _, sm_start = sm_rest.partition(":")
            if not (sm_host == HOST and sm_pid.isdigit() and alive(int(sm_pid), sm_start)):
                log.warning(
                    "%s: ending the %s step left running by a killed snakemake (%s)",
                    path.parent, stage, describe(holder),
                )  # fmt: skip
                end_process(pid, start)
                continue
        message = f"{path.parent}: waiting for the {stage} step running there ({describe(holder)})"
        if message != said:
            log.warning("%s", message)
            said = message
        time.sleep(POLL_S)


def _on_sigterm(signum: int, _frame: Any) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one must not cut the cleanup short
    raise SystemExit(128 + signum)


def _watch(pid: int, start: str, stop: threading.Event) -> None:
    while not stop.wait(POLL_S):
        if not alive(pid, start):
            log.warning("snakemake (pid %d) is gone: ending this job and its sandbox", pid)
            os.kill(os.getpid(), signal.SIGTERM)
            if not stop.wait(TERM_GRACE_S):
                os.kill(os.getpid(), signal.SIGKILL)
            return


@contextlib.contextmanager
def job_guard(run_dir: str | Path, stage: str) -> Iterator[None]:
    """Run one step of one run alone: SIGTERM unwinds (so every sandbox is removed), the job ends
    itself when its snakemake on this host dies, and it holds ``<run>/.lock-<stage>``."""
    old = None
    if threading.current_thread() is threading.main_thread():
        old = signal.signal(signal.SIGTERM, _on_sigterm)
    stop = threading.Event()
    snakemake = _snakemake()
    if snakemake is not None:
        threading.Thread(target=_watch, args=(*snakemake, stop), daemon=True).start()
    try:
        held = _take_run_lock(Path(run_dir) / f".lock-{stage}", stage, snakemake)
        if held.previous:
            log.warning(
                "%s: the last %s step here (%s) ended without releasing its lock",
                run_dir, stage, describe(held.previous),
            )  # fmt: skip
        try:
            yield
        finally:
            held.release()
    finally:
        stop.set()
        if old is not None:
            signal.signal(signal.SIGTERM, old)
