"""The watchdog beside each container run: a process that outlives the job to kill its containers
when the job dies (SIGKILL included) and to clean up the run's output mount; and SIGTERM turned
into a clean kill of the run."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

from sabench.sandbox.common import SYSTEM_PATH, which

log = logging.getLogger("sabench.sandbox.docker")

#: Kills and removes the containers it is told about when its stdin closes without "done":
#: the job died (SIGKILL too). Either way it then unmounts the run's output filesystem and removes
#: its folder (an unmount takes tens of ms: off the run's critical path). stdlib only, run with
#: ``python -I -S``; ignores SIGTERM/INT/HUP so that a scheduler's kill of the whole job still
#: leaves it time to act.
WATCHDOG = r"""
import os, shutil, signal, socket, subprocess, sys
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
sock_path, mountpoint, control, umount = sys.argv[1:5]
data = b""
while True:
    try:
        chunk = os.read(0, 4096)
    except InterruptedError:
        continue
    if not chunk:
        break
    data += chunk
words = data.decode(errors="replace").split()
def call(method, path):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(60)
        s.connect(sock_path)
        s.sendall(f"{method} {path} HTTP/1.0\r\nHost: docker\r\nContent-Length: 0\r\n\r\n".encode())
        s.recv(4096)
        s.close()
    except OSError:
        pass
if "done" not in words:
    for cid in words:
        if cid.isalnum():
            call("POST", f"/containers/{cid}/kill")
            call("DELETE", f"/containers/{cid}?force=1&v=1")
if mountpoint and os.path.ismount(mountpoint):
    subprocess.run([umount, "-l", mountpoint], capture_output=True)
if control:
    shutil.rmtree(control, ignore_errors=True)
"""


class Terminated(BaseException):
    """SIGTERM arrived while a container ran (a scheduler cancelling the job)."""


def raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated()


def start_watchdog(url: str, mountpoint: Path, control: Path) -> subprocess.Popen[bytes] | None:
    """The watchdog for one run on the engine at ``url`` (None: not a unix socket, or no start)."""
    if not url.startswith("unix://"):
        return None
    try:
        return subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", WATCHDOG, url[len("unix://") :],
             str(mountpoint), str(control), which("umount") or "umount"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, env={"PATH": SYSTEM_PATH, "LANG": "C.UTF-8"},
        )  # fmt: skip
    except OSError as exc:
        log.warning("no watchdog for this run: %s", exc)
        return None


def finish_watchdog(proc: subprocess.Popen[bytes]) -> bool:
    """Tell the watchdog the run ended normally: it leaves the containers alone and cleans up the
    output mount and the run's folder. False when it cannot be told (the caller cleans up)."""
    try:
        if proc.stdin is None or proc.poll() is not None:
            return False
        proc.stdin.write(b"done\n")
        proc.stdin.close()
    except OSError:
        return False
    return True
