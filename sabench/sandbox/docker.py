"""The Docker backend (the docker SDK); podman's API service is driven by the same code (podman.py).

One container per run, from the project's image (``images/python``, built when missing; see
``images.py``) or ``runtime.image``. Isolation by default (each relaxable in
``runtime.isolation``, with a warning): no network, user 1000 (never root), every capability
dropped, no-new-privileges, read-only root filesystem, the paper bound read-only at /paper, only
/submission writable, a private /tmp; memory (no swap), pids, time and output-size limits. The
container sees nothing else of the host: not the repo, not results/, not the SAUs, not the host's
environment (only HOME, TMPDIR, LANG, USER, LOGNAME and what the caller puts in ``spec.env``).

How each limit is enforced:
- output: /submission is a folder on a size-limited filesystem mounted on the host for this run
  (an ext4 image on a loop device, else a sized tmpfs; both need root) and bind-mounted in; the
  files are copied in before and back out after the run, links never followed and links pointing
  outside removed (``_stage._sanitize``). Without root: the workdir itself, a file-size ulimit and
  a size check afterwards.
- time: the engine's wait with a timeout, then SIGKILL of the container (its pid 1: the kernel
  ends every process of its pid namespace).
- memory / pids: the engine's cgroup limits; OOM from the engine's OOMKilled flag or the cgroup's
  oom_kill counter, read beside the run with the peak memory and pids-limit hits.
- a dying job: every container carries labels (the run, the owner ``host:pid:start``); a watchdog
  process kills the container if the job dies without finishing (SIGKILL included), SIGTERM is
  turned into a clean kill, and every run first reaps containers and mounts of dead owners.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from sabench.sandbox import (
    ISOLATION_KEYS,
    SUBMISSION_TARGET,
    RunResult,
    Sandbox,
    SandboxSpec,
    get_backend,
)
from sabench.sandbox import _stage as stage_helpers
from sabench.sandbox._common import (
    XFSZ_MESSAGE,
    LogCapture,
    access_faults,
    classify,
    share_read_only,
    tree_bytes,
    write_log,
)
from sabench.sandbox.cgroups import cgroup_dir, cgroup_mounts, read_stat_key
from sabench.sandbox.gpu import host_gpus, normalize_request
from sabench.sandbox.images import ImageError, ImageInfo, resolve_image

log = logging.getLogger("sabench.sandbox.docker")

LABEL_RUN = "org.sabench.run"
LABEL_OWNER = "org.sabench.owner"
LABEL_BACKEND = "org.sabench.backend"
CONTROL_PREFIX = "sabench-ctr-"
#: How long one backend instance trusts its image lookup and its last reaping (seconds).
REUSE_S = 60.0
SANDBOX_UID = 1000
HOME_INSIDE = "/tmp"
_SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
ISOLATION_WARNINGS = {
    "non_root": "the command runs as root inside the container",
    "drop_capabilities": "the container keeps the engine's default capabilities",
    "no_new_privileges": "setuid binaries can raise privileges inside the container",
    "read_only_root": "the container's root filesystem is writable",
    "read_only_paper": "the paper mount /paper is writable (and shared with other runs)",
}

#: Kills and removes the containers it is told about when its stdin closes without "done":
#: the job died (SIGKILL too). Either way it then unmounts the run's output filesystem and removes
#: its folder (an unmount takes tens of ms: off the run's critical path). stdlib only, run with
#: ``python -I -S``; ignores SIGTERM/INT/HUP so that a scheduler's kill of the whole job still
#: leaves it time to act.
_WATCHDOG = r"""
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


class _Terminated(BaseException):
    """SIGTERM arrived while a container ran (a scheduler cancelling the job)."""


def _which(name: str) -> str | None:
    return shutil.which(name, path=_SYSTEM_PATH)


def _proc_start(pid: int) -> str:
    """The process's start time in clock ticks (tells a reused PID apart)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def owner_label(pid: int | None = None) -> str:
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}:{pid}:{_proc_start(pid)}"


def owner_alive(label: str) -> bool:
    """Whether the process named by an owner label still runs (True for other hosts: not ours)."""
    host, _, rest = label.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return True
    return _proc_start(int(pid_text)) == start and start != ""


def run_label(workdir: Path) -> str:
    """``agent/paper/seed`` for a workflow run (``.../runs/A/P/S/executed``), else the path."""
    parts = workdir.resolve().parts
    if len(parts) >= 5 and parts[-5] == "runs":
        return "/".join(parts[-4:-1])
    return str(workdir.resolve())


def effective_isolation(spec: SandboxSpec) -> dict[str, bool]:
    given = dict(getattr(spec, "isolation", None) or {})
    return {key: bool(given.get(key, True)) for key in ISOLATION_KEYS}


def weakened(spec: SandboxSpec) -> list[str]:
    """What the spec relaxes, as warnings (network too)."""
    iso = effective_isolation(spec)
    out = [ISOLATION_WARNINGS[k] for k in ISOLATION_KEYS if not iso[k]]
    if spec.network != "none":
        out.append(f"network={spec.network}: the container can reach the network")
    return out


def device_requests(gpus: Any) -> list[dict[str, Any]]:
    """Docker device requests for ``spec.gpus`` (a count, ``"all"`` or device ids), as the CLI's
    ``--gpus`` makes them: the NVIDIA container toolkit shows exactly these devices."""
    count, ids = normalize_request(gpus)
    if count == 0:
        return []
    request: dict[str, Any] = {"Driver": "", "Capabilities": [["gpu"]], "Options": {}}
    if ids is not None:
        request.update(Count=0, DeviceIDs=ids)
    else:
        request.update(Count=count, DeviceIDs=None)
    return [request]


@dataclass
class _Poll:
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


def _poll_cgroup(groups: dict[str, Path], poll: _Poll, interval: float = 0.05) -> None:
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


class _OutputStage:
    """/submission's size-limited filesystem, mounted on the host for one run (root only)."""

    def __init__(self, workdir: Path, control: Path, output_limit: int, order: tuple[str, ...]):
        from sabench.sandbox.bwrap import image_capacity

        self.workdir = workdir
        self.mountpoint = control / "stage"
        self.kind = "none"
        self.used, image_bytes, inodes = image_capacity(workdir, output_limit)
        self.fs_bytes = self.used + output_limit
        self.plan = {
            "tools": {
                "mount": _which("mount"),
                "umount": _which("umount"),
                "mkfs": _which("mkfs.ext4"),
                "cp": _which("cp"),
            },
            "image_dir": str(workdir.parent),
            "image_bytes": image_bytes,
            "inodes": inodes,
            "fs_bytes": self.fs_bytes,
        }
        self.order = order
        self.notes: list[str] = []
        #: Sparse files larger than the filesystem itself, removed before anything reads them.
        self.giants = 0

    def mount(self) -> Path | None:
        """Mount the first filesystem that works; the folder to bind (None: bind the workdir)."""
        self.mountpoint.mkdir()
        for kind in self.order:
            mounter = {"ext4": _mount_ext4, "tmpfs": stage_helpers._mount_tmpfs}[kind]
            try:
                mounter(self.plan, str(self.mountpoint))
            except (stage_helpers.StageError, OSError) as exc:
                self.notes.append(f"output fs {kind} unavailable: {exc}")
                self.unmount()
                continue
            self.kind = "ext4-loop" if kind == "ext4" else "tmpfs"
            data = self.mountpoint / "data"
            data.mkdir(mode=0o755)
            return data
        return None

    def copy_in(self, data: Path, uid: int, gid: int) -> None:
        """The workdir into the stage (links stay links; fifos and devices are skipped)."""
        from sabench.execute import ignore_special

        shutil.copytree(
            self.workdir, data, symlinks=True, ignore=ignore_special, dirs_exist_ok=True
        )
        _chown_tree(data, uid, gid)

    def full(self) -> tuple[bool, int, int]:
        vfs = os.statvfs(self.mountpoint)
        total, avail = vfs.f_blocks * vfs.f_frsize, vfs.f_bavail * vfs.f_frsize
        return avail < max(256 * 1024, total // 100) or vfs.f_favail == 0, total, avail

    def copy_out(self, data: Path) -> None:
        """Replace the workdir with what the run left (links kept as links, owned by us)."""
        self.giants += remove_giants(data, self.fs_bytes)
        stage_helpers._clear(str(self.workdir))
        done = subprocess.run(
            [self.plan["tools"]["cp"] or "cp", "-a", "--no-preserve=ownership", "--",
             f"{data}/.", f"{self.workdir}/"],
            capture_output=True, text=True, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        if done.returncode:
            raise OSError(f"copy out of /submission failed: {done.stderr.strip()[-500:]}")

    def unmount(self) -> None:
        if os.path.ismount(self.mountpoint) and not _umount_detach(self.mountpoint):
            subprocess.run(
                [self.plan["tools"]["umount"] or "umount", "-l", str(self.mountpoint)],
                capture_output=True,
                stdin=subprocess.DEVNULL,
            )


def _mount_ext4(plan: dict[str, Any], stage: str) -> None:
    """``_stage._mount_ext4`` with ``noinit_itable``: a fresh, throwaway filesystem needs no
    background zeroing of its inode tables (ext4lazyinit writing ~16 MB per run next to the
    container costs more than the whole mount)."""
    tools = plan["tools"]
    if not tools.get("mkfs"):
        raise stage_helpers.StageError("mkfs.ext4 not found")
    fd, image = tempfile.mkstemp(prefix=".sabench-output-", suffix=".img", dir=plan["image_dir"])
    try:
        os.ftruncate(fd, plan["image_bytes"])
        os.close(fd)
        made = subprocess.run(
            [tools["mkfs"], "-q", "-F", "-m", "0", "-N", str(plan["inodes"]),
             "-O", "^has_journal", "-E", "lazy_itable_init=1,nodiscard,root_owner=0:0",
             "-L", "sabench-out", image],
            capture_output=True, text=True, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        if made.returncode:
            raise stage_helpers.StageError(f"mkfs.ext4: {made.stderr.strip()}")
        mounted = subprocess.run(
            [tools["mount"], "-o", "loop,nosuid,nodev,noatime,noinit_itable", image, stage],
            capture_output=True, text=True, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        if mounted.returncode:
            raise stage_helpers.StageError(f"loop mount: {mounted.stderr.strip()}")
    finally:
        with contextlib.suppress(OSError):  # the loop device holds it open until the unmount
            os.unlink(image)
    with contextlib.suppress(OSError):
        os.rmdir(os.path.join(stage, "lost+found"))
    # ext4's overhead is only estimable: a hidden file takes the surplus (only data/ is bound)
    vfs = os.statvfs(stage)
    surplus = vfs.f_bavail * vfs.f_frsize - plan["fs_bytes"]
    if surplus > 0:
        fd = os.open(os.path.join(stage, "reserve"), os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            os.posix_fallocate(fd, 0, surplus)
        finally:
            os.close(fd)


def _umount_detach(path: Path) -> bool:
    """umount2(path, MNT_DETACH) without a subprocess; False when it failed."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.umount2(os.fsencode(str(path)), 2) == 0
    except (OSError, AttributeError):
        return False


def remove_giants(root: Path, limit: int) -> int:
    """Remove regular files whose apparent size exceeds ``limit`` (sparse files claiming more
    than the whole output filesystem: hashing or judging them would read gigabytes of holes)."""
    removed = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            with contextlib.suppress(OSError):
                st = os.lstat(path)
                if stat.S_ISREG(st.st_mode) and st.st_size > limit:
                    os.unlink(path)
                    removed += 1
    return removed


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    """chown without following links (the tree is agent-written)."""
    os.chown(root, uid, gid)
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            with contextlib.suppress(OSError):
                os.chown(os.path.join(dirpath, name), uid, gid, follow_symlinks=False)


def _reap_control_dirs() -> None:
    """Unmount and remove the per-run folders of owners that died (the watchdog normally does)."""
    tmp = Path(tempfile.gettempdir())
    for d in tmp.glob(f"{CONTROL_PREFIX}*-*"):
        pid = d.name[len(CONTROL_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            stage = d / "stage"
            if os.path.ismount(stage):
                subprocess.run(["umount", "-l", str(stage)], capture_output=True)
            if not os.path.ismount(stage):
                shutil.rmtree(d, ignore_errors=True)


class DockerSandbox(Sandbox):
    """A container per run through the docker SDK; see the module docstring."""

    name = "docker"
    engine: ClassVar[str] = "docker"
    isolation = (
        f"sandboxed (docker): uid {SANDBOX_UID}, no capabilities, no-new-privileges, "
        f"read-only root, only {SUBMISSION_TARGET} writable, no network"
    )
    needs_python_env = False
    #: Whether the engine's OOMKilled flag can be trusted (podman's compat API leaves it False).
    oom_flag_reliable: ClassVar[bool] = True
    #: The network a ``network: full`` run joins.
    full_network: ClassVar[str] = "bridge"

    def __init__(
        self,
        base_url: str | None = None,
        output_fs: tuple[str, ...] = ("ext4", "tmpfs"),
        watchdog: bool = True,
    ) -> None:
        self.base_url = base_url
        self.output_fs = tuple(output_fs)
        self.watchdog = watchdog
        self._client: Any = None
        self._client_url: str | None = None
        self._available: tuple[float, bool, str, str] | None = None
        self._version = ""
        self._images: dict[str | None, ImageInfo] = {}
        self._resolved: dict[tuple[Any, ...], tuple[float, ImageInfo]] = {}
        self._reaped_at = -1e9

    # --- engine ---------------------------------------------------------------------------------

    def engine_url(self) -> str:
        return self.base_url or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"

    def client(self) -> Any:
        import docker

        url = self.engine_url()
        if self._client is None or self._client_url != url:
            self._client = docker.DockerClient(base_url=url, timeout=120)
            self._client_url = url
        return self._client

    def available(self) -> tuple[bool, str]:
        """Whether the engine answers (an answer is trusted for a minute, a failure for 5 s)."""
        now = time.monotonic()
        url = self.engine_url()
        if self._available is not None and self._available[3] == url:
            seen, ok, why, _ = self._available
            if now - seen < (REUSE_S if ok else 5):
                return ok, why
        ok, why = self._probe()
        self._available = (now, ok, why, url)
        return ok, why

    def _probe(self) -> tuple[bool, str]:
        url = self.engine_url()
        if url.startswith("unix://") and not os.path.exists(url[len("unix://") :]):
            return False, f"no {self.engine} engine socket at {url[len('unix://') :]}"
        try:
            import docker

            if self._client is None or self._client_url != url:
                self._client = docker.DockerClient(base_url=url, timeout=10)
                self._client_url = url
            self._version = str(self._client.version().get("Version", ""))
            self._client.api.timeout = 120
        except Exception as exc:
            self._client = None
            return False, f"{self.engine} engine at {url} does not answer: {_short(exc)}"
        return True, ""

    def describe(self, spec: SandboxSpec | None = None) -> dict[str, Any]:
        info = super().describe(spec)
        image = self._images.get(spec.image if spec is not None else None)
        if image is not None:
            info["image"] = image.pinned
        info["version"] = self._version
        if spec is not None:
            info["isolation"] = self._isolation_line(spec)
        return info

    def _isolation_line(self, spec: SandboxSpec) -> str:
        iso = effective_isolation(spec)
        uid = _sandbox_ids()[0] if iso["non_root"] else 0
        parts = [
            f"uid {uid}",
            "no capabilities" if iso["drop_capabilities"] else "default capabilities",
            "no-new-privileges" if iso["no_new_privileges"] else "new privileges allowed",
            "read-only root" if iso["read_only_root"] else "writable root",
            f"read-only {'/paper' if iso['read_only_paper'] else 'nothing'}",
            f"only {SUBMISSION_TARGET} writable" if iso["read_only_root"] else "",
            f"network {spec.network}",
        ]
        line = f"sandboxed ({self.engine} {self._version}".rstrip() + "): "
        line += ", ".join(p for p in parts if p)
        warn = weakened(spec)
        if warn:
            line += " | WEAKENED: " + "; ".join(warn)
        return line

    # --- the run --------------------------------------------------------------------------------

    def cgroup_paths(self, cid: str) -> list[str]:
        """Where the engine puts a container's cgroup (cgroupfs and systemd drivers)."""
        return [f"docker/{cid}", f"system.slice/docker-{cid}.scope"]

    def ulimits(self, fsize: int, staged: bool) -> list[tuple[str, int, int]]:
        """(name, soft, hard) to set: no core dumps; a file-size cap just above the output
        filesystem's size (ENOSPC comes first; it stops sparse giants, and it is the only cap
        where no sized filesystem could be mounted)."""
        return [("core", 0, 0), ("fsize", fsize, fsize)]

    def create_kwargs(
        self,
        spec: SandboxSpec,
        image: str,
        submission: Path,
        *,
        uid: int,
        gid: int,
        labels: dict[str, str],
        fsize: int,
        staged: bool = True,
    ) -> dict[str, Any]:
        """What ``containers.create`` gets (pure: tested as the backend's "argv")."""
        from docker.types import LogConfig, Mount, Ulimit

        iso = effective_isolation(spec)
        env = {
            "HOME": HOME_INSIDE,
            "TMPDIR": "/tmp",
            "LANG": "C.UTF-8",
            "USER": "sandbox" if iso["non_root"] else "root",
            "LOGNAME": "sandbox" if iso["non_root"] else "root",
            **spec.env,
        }
        mounts = [
            Mount(m.target, str(m.source.resolve()), type="bind", read_only=iso["read_only_paper"])
            for m in spec.ro_mounts
        ]
        mounts.append(Mount(SUBMISSION_TARGET, str(submission), type="bind", read_only=False))
        ulimits = [Ulimit(name=n, soft=s, hard=h) for n, s, h in self.ulimits(fsize, staged)]
        kwargs: dict[str, Any] = {
            "image": image,
            "command": list(spec.command),
            "user": f"{uid}:{gid}" if iso["non_root"] else "0:0",
            "working_dir": SUBMISSION_TARGET,
            "environment": env,
            "network_mode": "none" if spec.network == "none" else self.full_network,
            "read_only": iso["read_only_root"],
            "mem_limit": spec.mem_bytes,
            "memswap_limit": spec.mem_bytes,
            "pids_limit": spec.pids,
            "shm_size": max(64 << 20, spec.mem_bytes // 4),
            "tmpfs": {"/tmp": f"rw,nosuid,nodev,size={spec.output_limit_bytes},mode=1777"},
            "mounts": mounts,
            "labels": labels,
            "log_config": LogConfig(type="none"),
            "ulimits": ulimits or None,
            "hostname": "sandbox",
            "ipc_mode": "private",
            "stdin_open": False,
            "tty": False,
            "detach": True,
        }
        if iso["drop_capabilities"]:
            kwargs["cap_drop"] = ["ALL"]
        if iso["no_new_privileges"]:
            kwargs["security_opt"] = ["no-new-privileges"]
        requests = device_requests(spec.gpus)
        if requests:
            from docker.types import DeviceRequest

            kwargs["device_requests"] = [
                DeviceRequest(
                    driver=r["Driver"],
                    count=r["Count"],
                    device_ids=r["DeviceIDs"],
                    capabilities=r["Capabilities"],
                )
                for r in requests
            ]
        return kwargs

    def run(self, spec: SandboxSpec, log_path: Path) -> RunResult:
        log_path = Path(log_path)
        capture = LogCapture(spec.log_limit_kb * 1024)
        limits = (
            f"time {spec.time_limit_s:g} s, memory {spec.mem_mb} MB, pids {spec.pids}, "
            f"output {spec.output_limit_mb} MB, network {spec.network}"
        )
        header = [f"backend {self.name}; command: {shlex.join(spec.command)}", f"limits: {limits}"]
        for warning in weakened(spec):
            log.warning("%s backend: isolation weakened: %s", self.name, warning)
            header.append(f"WARNING: isolation weakened: {warning}")
        try:
            return self._run(spec, log_path, capture, header)
        except _Terminated:
            raise
        except Exception as exc:  # the engine or the host failed us: a status, never a crash
            self._available = None  # ask the engine again next time
            log.warning("%s sandbox error: %s", self.name, _short(exc))
            log.debug("%s sandbox error", self.name, exc_info=True)
            return self._fail(log_path, header, capture, f"{self.engine} error: {_short(exc)}")

    def _fail(
        self, log_path: Path, header: list[str], capture: LogCapture, message: str
    ) -> RunResult:
        write_log(log_path, header, capture, [f"status=sandbox_error: {message}"])
        return RunResult("sandbox_error", None, 0.0, None, capture.total, message)

    def _run(
        self, spec: SandboxSpec, log_path: Path, capture: LogCapture, header: list[str]
    ) -> RunResult:
        ok, why = self.available()
        if not ok:
            return self._fail(log_path, header, capture, f"{self.engine} unavailable: {why}")
        count, _ = normalize_request(spec.gpus)
        if count:
            gpus, why = host_gpus()
            if not gpus:
                msg = f"runtime.gpus={spec.gpus!r} asks for GPUs but this host has none ({why})"
                return self._fail(log_path, header, capture, msg)
        if not spec.workdir.is_dir():
            return self._fail(log_path, header, capture, f"workdir {spec.workdir} is not a folder")
        client = self.client()
        now = time.monotonic()
        if now - self._reaped_at > REUSE_S:  # once per job, and every minute in a long one
            self.reap(client)
            self._reaped_at = now
        key = (self._client_url, spec.image, spec_option(spec, "image_cache"))
        cached = self._resolved.get(key)
        if cached is not None and now - cached[0] < REUSE_S:
            image = cached[1]
        else:
            try:
                image = resolve_image(client, spec.image, cache=spec_option(spec, "image_cache"))
            except ImageError as exc:
                return self._fail(log_path, header, capture, f"image: {exc}")
            self._resolved[key] = (now, image)
        self._images[spec.image] = image
        header.append(f"image: {image.pinned}")
        workdir = spec.workdir.resolve()
        control = Path(tempfile.mkdtemp(prefix=f"{CONTROL_PREFIX}{os.getpid()}-"))
        is_root = os.geteuid() == 0
        uid, gid = _sandbox_ids() if effective_isolation(spec)["non_root"] else (0, 0)
        order = self.output_fs if is_root else ()
        out_stage = _OutputStage(workdir, control, spec.output_limit_bytes, order)
        notes: list[str] = []
        enforcement: dict[str, str] = {}
        watchdog: subprocess.Popen[bytes] | None = None
        container_id: str | None = None
        old_handler: Any = None
        handler_set = False
        sanitized: dict[str, int] = {}
        try:
            data = out_stage.mount()
            notes += out_stage.notes
            fsize = out_stage.fs_bytes + (1 << 20)
            if data is not None:
                out_stage.copy_in(data, uid, gid)
                submission = data
                enforcement["output"] = (
                    f"{out_stage.kind} filesystem holding the existing files + output_limit_mb"
                )
            else:
                submission = workdir
                enforcement["output"] = "file-size ulimit + total size checked after the run"
                if self.output_fs and not is_root:
                    notes.append("not root: /submission is the workdir itself (no sized fs)")
                if is_root:
                    _chown_tree(workdir, uid, gid)
            if is_root:  # root's files (a 0700 paper view) are closed to uid 1000
                widened = share_read_only(spec, uid, gid)
                if widened:
                    notes.append(f"made {widened} read-only mount entries readable for uid {uid}")
            faults = access_faults(spec, submission, uid, {gid})
            if faults:
                return self._fail(log_path, header, capture, "; ".join(faults))
            labels = {
                LABEL_RUN: run_label(workdir),
                LABEL_OWNER: owner_label(),
                LABEL_BACKEND: self.name,
            }
            kwargs = self.create_kwargs(
                spec,
                image.id,
                submission,
                uid=uid,
                gid=gid,
                labels=labels,
                fsize=fsize,
                staged=data is not None,
            )
            watchdog = self._start_watchdog(out_stage.mountpoint, control)
            if threading.current_thread() is threading.main_thread():
                old_handler = signal.signal(signal.SIGTERM, _raise_terminated)
                handler_set = True
            try:
                from docker.models.containers import _create_container_args

                args = _create_container_args({**kwargs, "version": client.api._version})
                container_id = str(client.api.create_container(**args)["Id"])
            except Exception as exc:
                return self._fail(
                    log_path, header, capture, f"{self.engine} could not create: {_short(exc)}"
                )
            if watchdog is not None and watchdog.stdin is not None:
                with contextlib.suppress(OSError):
                    watchdog.stdin.write(f"{container_id}\n".encode())
                    watchdog.stdin.flush()
            result = self._execute(client, container_id, spec, capture)
            if result.get("error"):
                return self._fail(log_path, header, capture, result["error"])
            if data is not None:
                full, total, _avail = out_stage.full()
                result["output_full"] = full
                enforcement["output"] += f" ({total >> 20} MiB)"
        finally:
            if container_id is not None:
                with contextlib.suppress(Exception):
                    client.api.remove_container(container_id, force=True, v=True)
            if handler_set:
                signal.signal(
                    signal.SIGTERM, old_handler if old_handler is not None else signal.SIG_DFL
                )
            try:
                if out_stage.kind != "none" and container_id is not None:
                    out_stage.copy_out(out_stage.mountpoint / "data")
            finally:
                # the watchdog unmounts and removes the folder; without one, do it here
                if watchdog is None or not _finish_watchdog(watchdog):
                    out_stage.unmount()
                    shutil.rmtree(control, ignore_errors=True)
                if out_stage.kind == "none":
                    out_stage.giants += remove_giants(workdir, out_stage.fs_bytes)
                    if is_root:
                        _chown_tree(workdir, os.getuid(), os.getgid())
                # whatever ran, nothing it left may point outside or stay set-id on the host
                sanitized = stage_helpers._sanitize(str(workdir))
        return self._finish(
            spec, log_path, header, capture, result, enforcement, notes, sanitized, out_stage
        )

    def _start_watchdog(self, mountpoint: Path, control: Path) -> subprocess.Popen[bytes] | None:
        url = self.engine_url()
        if not self.watchdog or not url.startswith("unix://"):
            return None
        try:
            return subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _WATCHDOG, url[len("unix://") :],
                 str(mountpoint), str(control), _which("umount") or "umount"],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, env={"PATH": _SYSTEM_PATH, "LANG": "C.UTF-8"},
            )  # fmt: skip
        except OSError as exc:
            log.warning("no watchdog for this run: %s", exc)
            return None

    def _execute(
        self, client: Any, cid: str, spec: SandboxSpec, capture: LogCapture
    ) -> dict[str, Any]:
        """Attach, start, wait (kill at the time limit), read the state; the run's facts."""
        import requests
        from docker.utils.socket import frames_iter

        api = client.api
        try:
            sock = api.attach_socket(cid, params={"stdout": 1, "stderr": 1, "stream": 1})
        except Exception as exc:  # podman prepares (creates) the container on attach
            return {"error": f"{self.engine} could not start the container: {_short(exc)}"}

        def read_frames() -> None:
            with contextlib.suppress(Exception):
                for _stream, chunk in frames_iter(sock, tty=False):
                    capture.feed(chunk)

        reader = threading.Thread(target=read_frames, name="sabench-attach", daemon=True)
        reader.start()
        poll = _Poll()
        poller: threading.Thread | None = None
        started = time.monotonic()
        try:
            api.start(cid)
        except Exception as exc:
            _close(sock)
            return {"error": f"{self.engine} could not start the container: {_short(exc)}"}
        groups = _guess_cgroup(self.cgroup_paths(cid))
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
            waited = api.wait(cid, timeout=spec.time_limit_s)
        except requests.exceptions.RequestException:
            timed_out = True
            with contextlib.suppress(Exception):
                api.kill(cid)
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

    def _finish(
        self,
        spec: SandboxSpec,
        log_path: Path,
        header: list[str],
        capture: LogCapture,
        res: dict[str, Any],
        enforcement: dict[str, str],
        notes: list[str],
        sanitized: dict[str, int],
        out_stage: _OutputStage,
    ) -> RunResult:
        code = res.get("exit_code")
        output_full = (
            bool(res.get("output_full")) or XFSZ_MESSAGE in capture.render() or out_stage.giants > 0
        )
        if out_stage.kind == "none":
            output_full = output_full or (
                tree_bytes(spec.workdir) - out_stage.used > spec.output_limit_bytes
            )
        peak = res.get("peak_bytes")
        oom = code not in (0, None) and (
            (res.get("oom_flag") and self.oom_flag_reliable)
            or res.get("oom_kills", 0) > 0
            or (
                code == 137
                and not res.get("timed_out")
                and peak is not None
                and peak >= 0.95 * spec.mem_bytes
            )
        )
        status = classify(
            started=True,
            exit_code=code,
            timed_out=bool(res.get("timed_out")),
            oom=bool(oom),
            output_full=output_full,
        )
        enforcement["memory"] = f"{self.engine} cgroup limit (memory = memory+swap = mem_mb)"
        enforcement["pids"] = f"{self.engine} pids limit"
        enforcement["time"] = "engine wait with a timeout, then SIGKILL of the container"
        enforcement["peak_mem"] = (
            "container cgroup high-water mark, polled every 50 ms"
            if res.get("cgroup")
            else "not measured (the container's cgroup is not readable here)"
        )
        parts = list(notes)
        if status == "timeout":
            parts.append(f"killed after time_limit_s={spec.time_limit_s:g}")
        if status == "oom":
            how = (
                "OOMKilled"
                if res.get("oom_flag")
                else f"{res.get('oom_kills', 0)} OOM kill(s) in the cgroup"
            )
            parts.append(f"out of memory (mem_mb={spec.mem_mb}; {how})")
        if status == "output_limit":
            parts.append(f"output exceeded output_limit_mb={spec.output_limit_mb}")
        if status == "failed":
            parts.append(f"reproduce command exited {code}")
            if res.get("engine_error"):
                parts.append(f"{self.engine}: {res['engine_error']}")
        if out_stage.giants:
            parts.append(f"removed {out_stage.giants} sparse file(s) larger than the output limit")
        if res.get("pid_hits"):
            parts.append(f"pids limit ({spec.pids}) reached {res['pid_hits']} time(s)")
        if spec.gpus:
            parts.append(f"gpus={spec.gpus!r} requested as {self.engine} device requests")
        if sanitized.get("setid_cleared"):
            parts.append(f"cleared setuid/setgid bits on {sanitized['setid_cleared']} file(s)")
        if sanitized.get("special_removed"):
            parts.append(f"removed {sanitized['special_removed']} fifo(s)/socket(s)")
        if sanitized.get("links_removed"):
            parts.append(
                f"removed {sanitized['links_removed']} link(s) pointing outside /submission"
            )
        peak_mb = round(peak / (1 << 20), 1) if peak is not None else None
        wall = float(res.get("wall_s") or 0.0)
        footer = [
            f"status={status} exit_code={code} wall_s={wall:.2f} peak_mem_mb={peak_mb} "
            f"log_bytes={capture.total}",
            *parts,
        ]
        write_log(log_path, header, capture, footer)
        return RunResult(status, code, wall, peak_mb, capture.total, "; ".join(parts), enforcement)

    # --- reaping --------------------------------------------------------------------------------

    def reap(self, client: Any | None = None) -> list[str]:
        """Remove containers (of any sabench backend on this engine) whose owner process died,
        and the per-run folders/mounts of dead owners. Returns the container ids removed."""
        _reap_control_dirs()
        client = client or self.client()
        removed = []
        try:
            found = client.api.containers(all=True, filters={"label": LABEL_OWNER})
        except Exception as exc:
            log.warning("could not list containers to reap: %s", _short(exc))
            return removed
        for c in found:
            owner = (c.get("Labels") or {}).get(LABEL_OWNER, "")
            if owner and not owner_alive(owner):
                with contextlib.suppress(Exception):
                    client.api.remove_container(c["Id"], force=True, v=True)
                    removed.append(c["Id"])
        if removed:
            log.warning("reaped %d container(s) left by dead sabench jobs", len(removed))
        return removed


def spec_option(spec: SandboxSpec, key: str) -> Any:
    options = getattr(spec, "options", None) or {}
    return options.get(key)


def _sandbox_ids() -> tuple[int, int]:
    """The user the container runs as: 1000 when we are root, else our own ids (files stay ours)."""
    if os.geteuid() == 0:
        return SANDBOX_UID, SANDBOX_UID
    return os.getuid(), os.getgid()


def _raise_terminated(signum: int, frame: Any) -> None:
    raise _Terminated()


def _finish_watchdog(proc: subprocess.Popen[bytes]) -> bool:
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


def _close(sock: Any) -> None:
    with contextlib.suppress(Exception):
        sock.close()


def _short(exc: BaseException) -> str:
    text = getattr(exc, "explanation", None) or str(exc) or type(exc).__name__
    text = str(text).strip()
    return text.splitlines()[0][:500] if text else type(exc).__name__


def main(argv: list[str] | None = None) -> int:
    """``python -m sabench.sandbox.docker reap``: for a Slurm epilog or by hand."""
    from sabench.steps import ArgumentParser

    parser = ArgumentParser(prog="python -m sabench.sandbox.docker")
    parser.add_argument("action", choices=["reap", "check"])
    parser.add_argument("--engine", choices=["docker", "podman"], default="docker")
    args = parser.parse_args(argv)
    backend: Any = get_backend(args.engine)  # podman's backend is a DockerSandbox too
    ok, why = backend.available()
    if args.action == "check":
        print(json.dumps({"available": ok, "why": why, "url": backend.engine_url()}))
        return 0 if ok else 1
    if not ok:
        print(why, file=sys.stderr)
        return 1
    print(f"removed {len(backend.reap())} container(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
