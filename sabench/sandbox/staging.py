"""Staging an untrusted workdir: the size-limited output filesystem, copying in and out without
following links, and making what a sandbox left inert on the host. The shared staging helpers of
the sandbox layer (the docker backend and the execute step import them by their public names).

Run as a script it is the bwrap backend's helper: as root in a private mount namespace
(``unshare --mount``) it mounts a size-limited filesystem (an ext4 image on a loop device, else a
sized tmpfs), copies the workdir in, runs bwrap on it with the cgroup and rlimits applied, enforces
the time limit, then copies the result back without following any link. Because the mount lives
only in this namespace it vanishes with the process, so a killed job never leaves a mount or a loop
device behind.

Standalone on purpose (stdlib only, run with ``python -I -S``): it imports nothing from the project.
Usage: ``python -I -S staging.py PLAN.json``; it writes the plan's ``result_path``.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from typing import Any

PR_SET_PDEATHSIG = 1


class StageError(Exception):
    """The sandbox could not be set up or its output could not be saved."""


def _die_with_parent(parent_pid: int) -> None:
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        sys.exit(70)


def _run(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, **kw)


def mount_ext4(plan: dict[str, Any], stage: str, *, noinit_itable: bool = False) -> None:
    """Make and loop-mount an ext4 image of the plan's size at ``stage``. ``noinit_itable``: a
    fresh, throwaway filesystem needs no background zeroing of its inode tables (ext4lazyinit
    writing ~16 MB per run next to a container costs more than the whole mount)."""
    tools = plan["tools"]
    if not tools.get("mkfs"):
        raise StageError("mkfs.ext4 not found")
    fd, image = tempfile.mkstemp(prefix=".sabench-output-", suffix=".img", dir=plan["image_dir"])
    try:
        os.ftruncate(fd, plan["image_bytes"])
        os.close(fd)
        made = _run(
            [tools["mkfs"], "-q", "-F", "-m", "0", "-N", str(plan["inodes"]),
             "-O", "^has_journal", "-E",
             "lazy_itable_init=1,nodiscard,root_owner=0:0", "-L", "sabench-out", image]
        )  # fmt: skip
        if made.returncode:
            raise StageError(f"mkfs.ext4: {made.stderr.strip()}")
        options = "loop,nosuid,nodev,noatime" + (",noinit_itable" if noinit_itable else "")
        mounted = _run([tools["mount"], "-o", options, image, stage])
        if mounted.returncode:
            raise StageError(f"loop mount: {mounted.stderr.strip()}")
    finally:
        # The loop device holds the image open; unlinking now frees it when the namespace ends.
        with contextlib.suppress(OSError):
            os.unlink(image)
    with contextlib.suppress(OSError):
        os.rmdir(os.path.join(stage, "lost+found"))
    # ext4's own overhead is only estimable: fill the surplus with a file the sandbox cannot see
    # (only the data/ folder is bound), so the space left is exactly what the plan allows.
    vfs = os.statvfs(stage)
    surplus = vfs.f_bavail * vfs.f_frsize - plan["fs_bytes"]
    if surplus > 0:
        fd = os.open(os.path.join(stage, "reserve"), os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            os.posix_fallocate(fd, 0, surplus)
        finally:
            os.close(fd)


def mount_tmpfs(plan: dict[str, Any], stage: str) -> None:
    opts = f"size={plan['fs_bytes']},mode=0755,nosuid,nodev"
    mounted = _run([plan["tools"]["mount"], "-t", "tmpfs", "-o", opts, "sabench-out", stage])
    if mounted.returncode:
        raise StageError(f"tmpfs mount: {mounted.stderr.strip()}")


def _mount_stage(plan: dict[str, Any], result: dict[str, Any]) -> str | None:
    """Mount the first filesystem that works; return the folder to bind as /submission.

    None: nothing could be mounted, bind the workdir itself (the caller checks sizes afterwards).
    """
    stage = plan["stage_dir"]
    for kind in plan["fs_order"]:
        try:
            {"ext4": mount_ext4, "tmpfs": mount_tmpfs}[kind](plan, stage)
        except (StageError, OSError) as exc:
            result["messages"].append(f"output fs {kind} unavailable: {exc}")
            _run([plan["tools"]["umount"], "-l", stage])
            continue
        result["fs"] = "ext4-loop" if kind == "ext4" else "tmpfs"
        data = os.path.join(stage, "data")
        os.mkdir(data, 0o755)
        return data
    return None


def clear(folder: str) -> None:
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)


def ignore_special(folder: str, names: list[str]) -> list[str]:
    """copytree filter: skip fifos, sockets and devices (reading a fifo would hang the copy)."""
    skipped = []
    for name in names:
        try:
            mode = os.lstat(os.path.join(folder, name)).st_mode
        except OSError:
            skipped.append(name)
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            skipped.append(name)
    return skipped


def _copy(src: str, dst: str, cp: str) -> None:
    """``cp -a``: keeps modes, times, and links as links (never followed: the tree is untrusted)."""
    done = _run([cp, "-a", "--", f"{src}/.", f"{dst}/"])
    if done.returncode:
        raise StageError(f"copy {src} -> {dst}: {done.stderr.strip()[-500:]}")


def sanitize(root: str) -> dict[str, int]:
    """Make what the sandbox left inert on the host (no sandbox process is left to race this).

    Clears setuid/setgid bits (files belong to the caller outside), removes fifos and sockets
    (a reader would hang on them) and links that point outside the folder (a judge following one
    would read the host).
    """
    counts = {"setid_cleared": 0, "special_removed": 0, "links_removed": 0}
    real_root = os.path.realpath(root)
    for dirpath, dirs, files in os.walk(root):
        for name in files + dirs:
            path = os.path.join(dirpath, name)
            try:
                st = os.lstat(path)
                kind = st.st_mode & 0o170000
                if kind == 0o120000:  # symlink: resolve the whole chain (a lexical check is
                    # fooled by "sub/L/../../x" with L -> ".") and keep it only if it stays inside
                    resolved = os.path.realpath(path)
                    absolute = os.path.isabs(os.readlink(path))
                    inside = resolved == real_root or resolved.startswith(real_root + os.sep)
                    if absolute or not inside:
                        os.unlink(path)
                        counts["links_removed"] += 1
                elif kind == 0o100000:
                    if st.st_mode & 0o6000:
                        os.chmod(path, st.st_mode & 0o7777 & ~0o6000)
                        counts["setid_cleared"] += 1
                elif kind != 0o040000:
                    os.unlink(path)
                    counts["special_removed"] += 1
            except OSError:
                continue
    return counts


def _status_docs(path: str) -> list[dict[str, Any]]:
    """bwrap's --json-status-fd output: one JSON object per event."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError:
        return []
    docs, pos, decoder = [], 0, json.JSONDecoder()
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return docs
        try:
            doc, pos = decoder.raw_decode(text, pos)
        except ValueError:
            return docs
        if isinstance(doc, dict):
            docs.append(doc)


def _wait(pid: int, timeout: float | None) -> tuple[int, Any] | None:
    """``common.wait_for_exit`` again: as a script this file imports nothing from the project."""
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    if pidfd is not None:
        try:
            poller = select.poll()
            poller.register(pidfd, select.POLLIN)
            ms = None if deadline is None else max(0, int((deadline - time.monotonic()) * 1000))
            if not poller.poll(ms):
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


def _children() -> dict[int, list[int]]:
    """Every process's children, read off /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    return children


def _running(pid: int) -> bool:
    """Whether ``pid`` still runs (neither gone nor a zombie awaiting its parent)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _end_sandbox(proc: subprocess.Popen[bytes], status_path: str, grace_s: float) -> Any:
    """At the time limit: SIGTERM to every process of the run, ``grace_s`` for them to end as they
    would (send their trace, save their work), then SIGKILL of the sandbox's pid 1, which ends its
    namespace, and of bwrap; bwrap's wait result. The command pid 1 started (reproduce.sh's shell)
    is stopped meanwhile when processes run below it: it neither goes on to its next command nor
    ends, and with it the sandbox, before they have. Every process of the run is below pid 1 (its
    own pid namespace: orphans too)."""
    pid1 = [int(d["child-pid"]) for d in _status_docs(status_path) if "child-pid" in d]
    children = _children()
    termed = []
    for top in (p for root in pid1 for p in children.get(root, [])):
        below, todo = [], [top]
        while todo:
            for pid in children.get(todo.pop(), []):
                below.append(pid)
                todo.append(pid)
        with contextlib.suppress(OSError):
            os.kill(top, signal.SIGSTOP if below else signal.SIGTERM)
        termed += below if below else [top]
    for pid in termed:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while any(_running(p) for p in termed) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in pid1:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.kill(proc.pid, signal.SIGKILL)
    return _wait(proc.pid, None)


def _run_bwrap(plan: dict[str, Any], submission: str, result: dict[str, Any]) -> None:
    status_path = plan["status_path"]
    status_fd = os.open(status_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    argv = [
        submission if a == "@SUBMISSION@" else str(status_fd) if a == "@STATUSFD@" else a
        for a in plan["bwrap_argv"]
    ]
    procs_files = plan["cgroup_procs"]
    rlimits = [(getattr(resource, k), v) for k, v in plan["rlimits"].items()]

    def child_setup() -> None:  # this helper is single-threaded, so preexec_fn is safe here
        for f in procs_files:
            with open(f, "w") as fh:
                fh.write(str(os.getpid()))
        for res, value in rlimits:
            resource.setrlimit(res, (value, value))

    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, pass_fds=(status_fd,), preexec_fn=child_setup
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise StageError(f"cannot start bwrap: {exc}") from exc
    finally:
        os.close(status_fd)
    waited = _wait(proc.pid, plan["time_limit_s"])
    if waited is None:
        result["timed_out"] = True
        waited = _end_sandbox(proc, status_path, float(plan["term_grace_s"]))
    assert waited is not None
    status, usage = waited
    proc.returncode = os.waitstatus_to_exitcode(status)
    result["wall_s"] = round(time.monotonic() - started, 3)
    result["maxrss_kb"] = int(usage.ru_maxrss)
    docs = _status_docs(status_path)
    result["started"] = any("child-pid" in d for d in docs)
    code = next((int(d["exit-code"]) for d in docs if "exit-code" in d), None)
    if code is None:
        code = 128 - proc.returncode if proc.returncode < 0 else proc.returncode
    result["exit_code"] = code


def main(plan_path: str) -> int:
    with open(plan_path, encoding="utf-8") as fh:
        plan = json.load(fh)
    _die_with_parent(plan["parent_pid"])
    result: dict[str, Any] = {
        "started": False,
        "exit_code": None,
        "timed_out": False,
        "wall_s": 0.0,
        "maxrss_kb": None,
        "fs": "none",
        "fs_total": None,
        "fs_avail": None,
        "output_full": False,
        "sanitized": {},
        "messages": [],
        "error": None,
    }
    workdir = os.path.realpath(plan["workdir"])
    stage = None
    try:
        stage = _mount_stage(plan, result)
        if stage is not None:
            _copy(workdir, stage, plan["tools"]["cp"])
        try:
            _run_bwrap(plan, stage or workdir, result)
        finally:
            if stage is not None:
                vfs = os.statvfs(stage)
                total, avail = vfs.f_blocks * vfs.f_frsize, vfs.f_bavail * vfs.f_frsize
                result["fs_total"], result["fs_avail"] = total, avail
                result["output_full"] = avail < max(256 * 1024, total // 100) or vfs.f_favail == 0
                clear(workdir)
                _copy(stage, workdir, plan["tools"]["cp"])
            result["sanitized"] = sanitize(workdir)
    except (StageError, OSError) as exc:
        result["error"] = str(exc)
    finally:
        if stage is not None:
            _run([plan["tools"]["umount"], "-l", plan["stage_dir"]])
        tmp = plan["result_path"] + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(result, fh)
        os.replace(tmp, plan["result_path"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
