"""The execution trace, host side (docs/architecture.md, "The execution trace").

Every Python process of a submission's run (the sandbox program ``sandbox/trace_site.py``,
installed as ``sitecustomize.py`` by :func:`install_site`) says hello on the trace channel when it
starts; sends, as they happen (sys.monitoring), each line of the submission's own files the first
time it runs, the first calls of its module-level functions, the Python interpreters it starts and
the processes it ends; and, when it ends (exit, os._exit, exec), a bye with every line it ran
(before Python 3.12, when the lines and calls come only then, also on SIGTERM). The channel
(:class:`TraceChannel`) is a unix socket that sabench holds outside the sandbox, so the record is
kept where the run cannot delete or rewrite it: ``<run>/trace.json`` beside ``executed/``.
:func:`read_trace` reads it; :func:`with_lines` gives a judge's execution record the lines that ran.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import selectors
import shutil
import socket
import struct
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sabench.sandbox.pyenv import SITE_TARGET

log = logging.getLogger("sabench.runtrace")

#: The run's trace, kept by the host beside its executed copy (never inside it).
TRACE_FILE = "trace.json"
#: The record's format: 2 is the channel's (1 was files the run wrote itself).
TRACE_VERSION = 2
#: Where the channel's folder (its socket) appears inside a sandbox.
CHANNEL_TARGET = "/opt/sabench-channel"
CHANNEL_SOCKET = "trace.sock"
#: What one process may send (calls are capped at 4 MB per process by the sender).
MAX_PROCESS_BYTES = 64 << 20
#: A trace file larger than this is not read.
MAX_TRACE_BYTES = 256 << 20
_PROGRAMS = Path(__file__).resolve().parent


@dataclass(frozen=True)
class RunTrace:
    """What a run's Python processes recorded, merged: lines per file (paths relative to the
    submission), calls in file order, the recorder(s) and how many process files were read;
    ``raised``: per file, the lines an uncaught exception that ended a process was raised through
    (statements that did not complete)."""

    lines: dict[str, frozenset[int]]
    calls: tuple[dict[str, Any], ...]
    recorder: str
    processes: int
    raised: dict[str, frozenset[int]] = field(default_factory=dict)
    #: why the record cannot be trusted whole (empty: every process accounted for, each record
    #: whole): the run is then ``untraced`` (sabench.execute)
    problems: tuple[str, ...] = ()
    #: the submission's files its processes opened (relative paths): a setting is evidence only
    #: where the run read its file
    opened: frozenset[str] = frozenset()
    #: the command line of the run's first Python process that no traced process started (the
    #: entry point reproduce.sh ran), as its code saw it in ``sys.argv``: replay gives it again
    entry_argv: tuple[str, ...] = ()

    def summary(self) -> dict[str, Any]:
        """The execution record's ``trace`` key."""
        return {
            "recorder": self.recorder,
            "processes": self.processes,
            "files": len(self.lines),
            "lines": sum(len(v) for v in self.lines.values()),
            "problems": list(self.problems),
        }


def site_program(
    root: str = "/submission",
    channel: str = "",
    recorder: str = "",
    calls: bool = True,
    reseed: int = 0,
    workers: str = "",
) -> str:
    """The text of the sitecustomize.py the sandbox runs: the checks' wire encoding, its settings
    (the submission's ``root``, the ``channel``'s socket as the sandbox sees it; a forced
    ``recorder`` and ``calls=False``, lines only, are for benchmarks), then the trace program
    (``sandbox/trace_wrapping.py``, ``sandbox/trace_site.py`` and ``sandbox/trace_join.py``; all
    standard library only).
    Settings live in the program, not the environment, where a run could change them and a
    detector could read them."""
    wire = (_PROGRAMS / "checks" / "sandbox_wire.py").read_text(encoding="utf-8")
    # the calls' recorder before Python 3.12 first: the trace program installs itself as it ends
    trace = "\n".join(
        (_PROGRAMS / "sandbox" / name).read_text(encoding="utf-8")
        for name in ("trace_wrapping.py", "trace_site.py", "trace_join.py")
    )
    settings = {
        "root": root,
        "channel": channel,
        "recorder": recorder,
        "calls": calls,
        "reseed": reseed,
        "workers": workers,
    }
    return f"{wire}\n_TRACE_SETTINGS = {settings!r}\n{trace}"


def install_site(
    folder: Path,
    root: str = "/submission",
    channel: str = "",
    recorder: str = "",
    calls: bool = True,
    reseed: int = 0,
    workers: str = "",
) -> Path:
    """Write the site folder (``sitecustomize.py``, world-readable) into ``folder``; return it.
    ``root``: where the submission is as the traced processes see it (see :func:`site_program`)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "sitecustomize.py"
    target.write_text(
        site_program(root, channel, recorder, calls, reseed, workers), encoding="utf-8"
    )
    target.chmod(0o644)
    folder.chmod(0o755)
    return folder


def _valid_lines(value: Any) -> dict[str, list[int]] | None:
    if not isinstance(value, dict):
        return None
    out = {}
    for rel, nums in value.items():
        if not isinstance(rel, str) or not isinstance(nums, list):
            return None
        if rel.startswith(("/", "../")) or rel == "..":
            continue
        out[rel] = [n for n in nums if isinstance(n, int) and not isinstance(n, bool) and n > 0]
    return out


class _Process:
    """What one connection said: a hello; then, as they happen, lines that ran for the first time
    (``line``), finished calls (``call``), Python interpreters it started (``spawned``) and
    processes it ended (``killed``); and last a bye (``ended``) with how it ended, the frames an
    uncaught exception went through and every line it ran (with its calls, where the recorder
    sends none as they happen)."""

    def __init__(self, peer: int) -> None:
        self.peer = peer
        self.buffer = b""
        self.received = 0
        self.hello: dict[str, Any] | None = None
        self.lines: dict[str, set[int]] = {}
        self.calls: list[Any] = []
        self.spawned: list[Any] = []
        self.killed: list[Any] = []
        self.raised: list[Any] = []
        self.opened: list[Any] = []
        self.ended: str | None = None
        self.problem = ""
        #: the same process's connections still open when this one opened (see :meth:`as_dict`)
        self.beside: list[_Process] = []

    def feed(self, data: bytes) -> None:
        self.received += len(data)
        if self.received > MAX_PROCESS_BYTES:
            self.problem = self.problem or f"sent over {MAX_PROCESS_BYTES} bytes"
            return
        self.buffer += data
        *complete, self.buffer = self.buffer.split(b"\n")
        for line in complete:
            self._message(line)

    def _message(self, line: bytes) -> None:
        if self.problem:
            return
        try:
            message = json.loads(line)
            (kind, body), *more = message.items()
        except (ValueError, AttributeError):
            self.problem = "sent a message that is not the trace's"
            return
        if more or not isinstance(body, dict | list) or self.ended is not None:
            self.problem = "sent a message that is not the trace's, or after its end"
        elif kind == "hello" and self.hello is None and isinstance(body, dict):
            self.hello = body
        elif self.hello is None:
            self.problem = "sent a record before saying hello"
        elif kind == "line" and len(body) == 2 and isinstance(body[0], str):
            self.lines.setdefault(body[0], set()).add(body[1])
        elif kind in ("call", "spawned", "killed"):
            getattr(self, "calls" if kind == "call" else kind).append(body)
        elif kind == "bye" and isinstance(body, dict):
            self.ended = str(body.get("how") or "exit")
            lines, calls, raised = body.get("lines"), body.get("calls"), body.get("raised")
            for rel, nums in (lines if isinstance(lines, dict) else {}).items():
                self.lines.setdefault(rel, set()).update(nums if isinstance(nums, list) else [])
            self.calls += calls if isinstance(calls, list) else []
            self.raised = raised if isinstance(raised, list) else []
            opened = body.get("opened")
            self.opened = opened if isinstance(opened, list) else []
        else:
            self.problem = f"sent an unknown message {kind!r}"

    def as_dict(self) -> dict[str, Any]:
        return {
            **(self.hello or {}),
            "peer": self.peer,
            "ended": self.ended,
            "problem": self.problem or self._late_problem() or None,
            "lines": {
                rel: sorted(n for n in nums if isinstance(n, int))
                for rel, nums in self.lines.items()
            },
            "calls": self.calls,
            "raised": self.raised,
            "spawned": self.spawned,
            "killed": self.killed,
            "opened": self.opened,
        }

    def _late_problem(self) -> str:
        """A message cut short, or a second voice: a process speaks once, on one connection, and
        again only after an exec replaced its program (the old record ends ``exec``). A process
        that opens another connection while its own is open is writing someone else's record.
        (A pid the kernel reuses belongs to a process that starts after the first one's
        connection closed: never beside it.)"""
        if self.buffer:
            return "left a message unfinished"
        if any(other.ended != "exec" for other in self.beside):
            return "opened a second connection beside its own (a record it did not run)"
        return ""


class TraceChannel:
    """The run's trace channel: a unix socket in a fresh folder that sabench serves from a thread
    while the sandbox runs, mounted into it read-only at :data:`CHANNEL_TARGET`. Each connection
    is one process's; the kernel names its peer (``SO_PEERCRED``), so a process speaks only for
    itself. Use as a context manager; :meth:`write` keeps what arrived as ``trace.json``."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="sabench-channel-"))
        self.folder.chmod(0o755)
        self.path = self.folder / CHANNEL_SOCKET
        #: the abstract socket where a check's runner serves the workers of the code under test
        #: (sabench/checks/sandbox_runner.py); a run's has no listener
        self.workers = secrets.token_hex(12)
        self.processes: list[_Process] = []
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(self.path))
        self.path.chmod(0o777)  # the sandbox's user is not ours
        self._server.listen(128)
        self._server.setblocking(False)
        self._wake_r, self._wake_w = os.pipe()
        self._closing, self._closed = threading.Lock(), False
        self._thread = threading.Thread(target=self._serve, name="sabench-trace", daemon=True)

    def __enter__(self) -> TraceChannel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving once every connection has ended or after a few seconds: the sandbox's
        processes are gone by now, and their last bytes are already in the socket. Once: a file
        descriptor closed twice may be another thread's by then."""
        with self._closing:
            if self._closed:
                return
            self._closed = True
        if self._thread.is_alive():
            os.write(self._wake_w, b"x")
            self._thread.join(10)
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._server.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def _serve(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self._server, selectors.EVENT_READ, None)
        selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        open_conns: dict[socket.socket, _Process] = {}
        stopping = False
        while not stopping or open_conns:
            events = selector.select(timeout=None if not stopping else 0.2)
            if stopping and not events:
                break
            for key, _ in events:
                if key.data == "wake":
                    stopping = True
                    selector.unregister(self._wake_r)
                elif key.fileobj is self._server:
                    with contextlib.suppress(OSError):
                        conn, _ = self._server.accept()
                        creds = conn.getsockopt(
                            socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")
                        )
                        process = _Process(struct.unpack("3i", creds)[0])
                        process.beside = [p for p in open_conns.values() if p.peer == process.peer]
                        self.processes.append(process)
                        open_conns[conn] = process
                        selector.register(conn, selectors.EVENT_READ, process)
                else:
                    conn = key.fileobj
                    try:
                        data = conn.recv(1 << 20)  # type: ignore[union-attr]
                    except OSError:
                        data = b""
                    if data:
                        key.data.feed(data)
                    else:
                        selector.unregister(conn)
                        conn.close()  # type: ignore[union-attr]
                        open_conns.pop(conn, None)  # type: ignore[call-overload]
        for conn in open_conns:
            conn.close()
        selector.close()

    def record(self) -> dict[str, Any]:
        """What arrived: every process's hello, record and end."""
        return {"version": TRACE_VERSION, "processes": [p.as_dict() for p in self.processes]}

    def write(self, path: Path) -> None:
        """Keep the record at ``path`` (atomically)."""
        path = Path(path)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(self.record(), separators=(",", ":")), encoding="utf-8")
        os.replace(tmp, path)


def trace_path(executed: Path) -> Path:
    """Where a run's trace is kept: beside its executed copy, out of the run's reach."""
    return Path(executed).parent / TRACE_FILE


def _problems(processes: list[dict[str, Any]]) -> list[str]:
    """Why the record cannot be trusted whole: a process that broke the protocol, one that ended
    without its end and that no process of the run ended (SIGKILL from outside, a crash in C), a
    Python interpreter a process started that never said hello (``-I``, ``-S``, a cleared
    environment). A process another one ended (Pool.terminate) sent what it ran as it ran."""
    out = []
    by_parent: dict[Any, int] = {}
    killed = set()
    for p in processes:
        if p.get("pid") is not None:
            by_parent[p.get("ppid")] = by_parent.get(p.get("ppid"), 0) + 1
        for entry in p.get("killed") or []:
            if isinstance(entry, list) and entry:
                killed.add(entry[0])
    for p in processes:
        name = f"process {p.get('pid', '?')} ({' '.join(map(str, (p.get('argv') or [])[:3]))})"
        if p.get("problem"):
            out.append(f"{name} {p['problem']}")
        elif p.get("ended") is None and not (p.get("streams") and p.get("pid") in killed):
            out.append(f"{name} ended without sending its record (killed, or crashed in C)")
        spawned = [s for s in p.get("spawned") or [] if isinstance(s, list) and s[:1] == ["spawn"]]
        if len(spawned) > by_parent.get(p.get("pid"), 0):
            what = " ".join(map(str, (spawned[-1][2] if len(spawned[-1]) > 2 else [])[:4]))
            out.append(f"{name} started a Python that sent no trace: {what}")
    return out


def _entry_argv(processes: list[dict[str, Any]]) -> tuple[str, ...]:
    pids = {p.get("pid") for p in processes}
    for p in processes:
        if p.get("ppid") not in pids and isinstance(p.get("argv"), list):
            return tuple(str(a) for a in p["argv"])
    return ()


def read_trace(executed: Path) -> RunTrace | None:
    """The run's trace (kept beside ``executed``); None when there is none (a run from before the
    channel, or one not executed). A record that does not read is a trace with a problem."""
    path = trace_path(executed)
    if not path.is_file():
        return None
    try:
        if path.stat().st_size > MAX_TRACE_BYTES:
            raise ValueError(f"over {MAX_TRACE_BYTES} bytes")
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("version") != TRACE_VERSION:
            raise ValueError(f"not a version {TRACE_VERSION} trace")
        processes = [p for p in data.get("processes") or [] if isinstance(p, dict)]
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        log.warning("trace %s unreadable: %s", path, str(exc)[:200])
        return RunTrace({}, (), "", 0, problems=(f"the trace does not read: {exc}",))
    lines: dict[str, set[int]] = {}
    raised: dict[str, set[int]] = {}
    calls: list[dict[str, Any]] = []
    opened: set[str] = set()
    recorders = {str(p.get("recorder")) for p in processes if p.get("recorder")}
    for p in processes:
        found = _valid_lines(p.get("lines", {}))
        for rel, nums in (found or {}).items():
            lines.setdefault(os.path.normpath(rel), set()).update(nums)
        for frame in p.get("raised") or []:
            if isinstance(frame, list) and len(frame) == 2 and isinstance(frame[1], int):
                raised.setdefault(os.path.normpath(str(frame[0])), set()).add(frame[1])
        opened.update(
            os.path.normpath(f) for f in p.get("opened") or [] if isinstance(f, str) and f
        )
        got_calls = p.get("calls") or []
        calls += [
            c
            for c in (got_calls if isinstance(got_calls, list) else [])
            if isinstance(c, dict) and isinstance(c.get("function"), str) and "result" in c
        ]
    return RunTrace(
        lines={rel: frozenset(nums) for rel, nums in sorted(lines.items())},
        calls=tuple(calls),
        recorder=", ".join(sorted(recorders)),
        processes=sum(1 for p in processes if p.get("pid") is not None),
        raised={rel: frozenset(nums) for rel, nums in sorted(raised.items())},
        problems=tuple(_problems(processes)),
        entry_argv=_entry_argv(processes),
        opened=frozenset(opened),
    )


@contextlib.contextmanager
def armed(
    root: str, local: bool, reseed: int = 0
) -> Iterator[tuple[TraceChannel, Path, dict[str, str]]]:
    """A channel served while the sandbox runs, and the site program that talks to it installed
    into a fresh site folder (removed afterwards); yields the channel, the site folder and the
    environment that arms the trace (the site folder first on PYTHONPATH). ``local``: the sandbox
    sees host paths (the local backend); ``reseed``: the salt of a re-seeded run
    (:mod:`sabench.reseed`)."""
    site = Path(tempfile.mkdtemp(prefix="sabench-site-"))
    try:
        with TraceChannel() as channel:
            socket_path = str(channel.path) if local else f"{CHANNEL_TARGET}/{CHANNEL_SOCKET}"
            install_site(
                site, root=root, channel=socket_path, reseed=reseed, workers=channel.workers
            )
            yield channel, site, {"PYTHONPATH": str(site) if local else SITE_TARGET}
    finally:
        shutil.rmtree(site, ignore_errors=True)


def with_lines(execution: dict[str, Any] | None, executed: Path) -> dict[str, Any] | None:
    """``execution`` with ``lines_run`` ({relpath: sorted lines}) and ``files_read`` (the
    submission's files its processes opened, sorted) when the run left a trace, and
    ``lines_raised`` (the same shape as lines_run) when an uncaught exception ended one of its
    processes; the record unchanged otherwise (and None stays None)."""
    if execution is None:
        return None
    trace = read_trace(executed)
    if trace is None:
        return execution
    out = {**execution, "lines_run": {rel: sorted(nums) for rel, nums in trace.lines.items()}}
    out["files_read"] = sorted(trace.opened)
    if trace.raised:
        out["lines_raised"] = {rel: sorted(nums) for rel, nums in trace.raised.items()}
    return out


__all__ = [
    "CHANNEL_TARGET",
    "MAX_TRACE_BYTES",
    "SITE_TARGET",
    "TRACE_FILE",
    "RunTrace",
    "TraceChannel",
    "armed",
    "install_site",
    "read_trace",
    "site_program",
    "trace_path",
    "with_lines",
]
