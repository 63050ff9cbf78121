"""One container's life through the engine's API: attach to its output, start it, poll its
cgroup beside the run (peak memory, OOM kills, pids-limit hits), wait with the time limit, end it
there (SIGTERM, a grace period, SIGKILL), and read its final state."""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sabench.sandbox.cgroups import cgroup_dir, cgroup_mounts, read_stat_key
from sabench.sandbox.common import TERM_GRACE_S, LogCapture


@dataclass
class CgroupPoll:
    """Readings of the container's cgroup, taken beside the run."""

    peak_bytes: int = 0
    oom_kills: int = 0
    pid_hits: int = 0
    found: bool = False
    stop: threading.Event = field(default_factory=threading.Event)


def _container_cgroup(pid: int) -> dict[str, Path]:
    """controller -> the cgroup folder of process ``pid`` ('' for the v2 hierarchy)."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return {}
    mounts = cgroup_mounts()
    out: dict[str, Path] = {}
    for line in lines:
        _id, controllers, path = line.split(":", 2)
        for c in controllers.split(",") if controllers else [""]:
            if c not in ("memory", "pids", ""):
                continue
            mount = next(
                (
                    m
                    for m in mounts
                    if (m.fstype == "cgroup2" and c == "")
                    or (m.fstype == "cgroup" and c in m.options)
                ),
                None,
            )
            if mount is not None:
                folder = cgroup_dir(mount, path)
                if folder.is_dir():
                    out[c] = folder
    return out


def _guess_cgroup(candidates: list[str]) -> dict[str, Path]:
    """controller -> folder for the first candidate path that exists (no engine call)."""
    mounts = cgroup_mounts()
    for rel in candidates:
        out: dict[str, Path] = {}
        for m in mounts:
            if m.fstype == "cgroup" and ("memory" in m.options or "pids" in m.options):
                folder = m.mountpoint / rel
                if folder.is_dir():
                    out["memory" if "memory" in m.options else "pids"] = folder
        if "memory" not in out:
            v2 = next((m for m in mounts if m.fstype == "cgroup2"), None)
            if v2 is not None and (v2.mountpoint / rel / "memory.max").exists():
                out = {"": v2.mountpoint / rel}
        if out:
            return out
    return {}


def _poll_cgroup(groups: dict[str, Path], poll: CgroupPoll, interval: float = 0.05) -> None:
    mem = groups.get("memory")
    v2 = groups.get("") if mem is None else None
    pids = groups.get("pids") or v2
    while True:
        if mem is not None:
            with contextlib.suppress(OSError, ValueError):
                poll.peak_bytes = max(
                    poll.peak_bytes, int((mem / "memory.max_usage_in_bytes").read_text())
                )
                poll.found = True
            poll.oom_kills = max(
                poll.oom_kills, read_stat_key(mem / "memory.oom_control", "oom_kill")
            )
        elif v2 is not None:
            for name in ("memory.peak", "memory.current"):
                with contextlib.suppress(OSError, ValueError):
                    poll.peak_bytes = max(poll.peak_bytes, int((v2 / name).read_text()))
                    poll.found = True
            poll.oom_kills = max(poll.oom_kills, read_stat_key(v2 / "memory.events", "oom_kill"))
        if pids is not None:
            poll.pid_hits = max(poll.pid_hits, read_stat_key(pids / "pids.events", "max"))
        if poll.stop.wait(interval):
            return


def run_container(
    api: Any,
    cid: str,
    *,
    engine: str,
    time_limit_s: float,
    cgroup_paths: list[str],
    capture: LogCapture,
) -> dict[str, Any]:
    """Attach, start, wait (kill at the time limit), read the state; the run's facts.

    ``cgroup_paths``: where the engine puts this container's cgroup (before asking it for the pid).
    """
    import requests
    from docker.utils.socket import frames_iter

    try:
        sock = api.attach_socket(cid, params={"stdout": 1, "stderr": 1, "stream": 1})
    except Exception as exc:  # podman prepares (creates) the container on attach
        return {"error": f"{engine} could not start the container: {short_error(exc)}"}

    def read_frames() -> None:
        with contextlib.suppress(Exception):
            for _stream, chunk in frames_iter(sock, tty=False):
                capture.feed(chunk)

    reader = threading.Thread(target=read_frames, name="sabench-attach", daemon=True)
    reader.start()
    poll = CgroupPoll()
    poller: threading.Thread | None = None
    started = time.monotonic()
    try:
        api.start(cid)
    except Exception as exc:
        _close(sock)
        return {"error": f"{engine} could not start the container: {short_error(exc)}"}
    groups = _guess_cgroup(cgroup_paths)
    if not groups:  # another cgroup layout: ask the engine for the container's pid
        try:
            pid = int(api.inspect_container(cid)["State"].get("Pid") or 0)
        except Exception:
            pid = 0
        groups = _container_cgroup(pid) if pid else {}
    if groups:
        poller = threading.Thread(
            target=_poll_cgroup, args=(groups, poll), name="sabench-cgroup", daemon=True
        )
        poller.start()
    timed_out = False
    try:
        waited = api.wait(cid, timeout=time_limit_s)
    except requests.exceptions.RequestException:
        timed_out = True
        _end(api, cid)
        waited = api.wait(cid, timeout=60)
    wall = round(time.monotonic() - started, 3)
    poll.stop.set()
    if poller is not None:
        poller.join(2)
    reader.join(5)
    _close(sock)
    code = waited.get("StatusCode")
    # OOMKilled and the engine's error are only worth a call when the run did not succeed
    state = api.inspect_container(cid)["State"] if code != 0 else {}
    if code is None:
        code = state.get("ExitCode")
    return {
        "exit_code": int(code) if code is not None else None,
        "timed_out": timed_out,
        "oom_flag": bool(state.get("OOMKilled")),
        "engine_error": (waited.get("Error") or {}).get("Message") or state.get("Error") or "",
        "wall_s": wall,
        "peak_bytes": poll.peak_bytes if poll.found else None,
        "oom_kills": poll.oom_kills,
        "pid_hits": poll.pid_hits,
        "cgroup": bool(groups),
    }


def _close(sock: Any) -> None:
    with contextlib.suppress(Exception):
        sock.close()


def short_error(exc: BaseException) -> str:
    """The first line of an engine (or other) error, at most 500 characters."""
    text = getattr(exc, "explanation", None) or str(exc) or type(exc).__name__
    text = str(text).strip()
    return text.splitlines()[0][:500] if text else type(exc).__name__


def _end(api: Any, cid: str) -> None:
    """SIGTERM to the run's processes, TERM_GRACE_S to end as they would (a traced Python sends
    its record), then SIGKILL of the container. The container's pid 1 ignores a signal it has no
    handler for, so the SIGTERM is ``kill -TERM -1`` run inside it as the run's user: every
    process but pid 1 and itself."""
    import requests

    with contextlib.suppress(Exception):
        api.exec_start(api.exec_create(cid, ["/bin/sh", "-c", "kill -TERM -1"]), detach=True)
    try:
        api.wait(cid, timeout=TERM_GRACE_S)
        return
    except requests.exceptions.RequestException:
        pass
    with contextlib.suppress(Exception):
        api.kill(cid)
