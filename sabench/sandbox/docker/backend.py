"""The Docker backend class: one container per run through the docker SDK (the package docstring
says what it isolates and how each limit is enforced); podman's backend subclasses it."""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

from sabench.sandbox import SUBMISSION_TARGET, RunResult, Sandbox, SandboxSpec
from sabench.sandbox.common import (
    SANDBOX_UID,
    LogCapture,
    access_faults,
    reap_control_dirs,
    share_read_only,
    write_log,
)
from sabench.sandbox.docker.container import run_container, short_error
from sabench.sandbox.docker.options import (
    LABEL_BACKEND,
    LABEL_OWNER,
    LABEL_RUN,
    device_requests,
    effective_isolation,
    owner_alive,
    owner_label,
    run_label,
    sandbox_ids,
    spec_option,
    weakened,
)
from sabench.sandbox.docker.outcome import finish_run
from sabench.sandbox.docker.output import OutputStage, chown_tree, remove_giants
from sabench.sandbox.docker.watchdog import (
    Terminated,
    finish_watchdog,
    raise_terminated,
    start_watchdog,
)
from sabench.sandbox.gpu import host_gpus, normalize_request
from sabench.sandbox.images import ImageError, ImageInfo, resolve_image
from sabench.sandbox.staging import sanitize

log = logging.getLogger("sabench.sandbox.docker")

CONTROL_PREFIX = "sabench-ctr-"
#: How long one backend instance trusts its image lookup and its last reaping (seconds).
REUSE_S = 60.0
HOME_INSIDE = "/tmp"


def image_entrypoint(client: Any, image_id: str) -> list[str]:
    """The image's own ENTRYPOINT (empty when it has none)."""
    config = client.api.inspect_image(image_id).get("Config") or {}
    entrypoint = config.get("Entrypoint") or []
    return [entrypoint] if isinstance(entrypoint, str) else list(entrypoint)


class DockerSandbox(Sandbox):
    """A container per run through the docker SDK; see the module docstring."""

    name = "docker"
    engine: ClassVar[str] = "docker"
    isolation = (
        f"sandboxed (docker): uid {SANDBOX_UID}, no capabilities, no-new-privileges, "
        f"read-only root, only {SUBMISSION_TARGET} writable, no network"
    )
    needs_python_env = False
    runs_images = True
    keeps_entrypoint = True
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
            return False, f"{self.engine} engine at {url} does not answer: {short_error(exc)}"
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
        uid = sandbox_ids()[0] if iso["non_root"] else 0
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
        image_entrypoint: list[str] | None = None,
    ) -> dict[str, Any]:
        """What ``containers.create`` gets (pure: tested as the backend's "argv").

        ``options["launcher"]`` (the model gateway's forwarder) starts first and runs the image's
        own ENTRYPOINT (``image_entrypoint``) with the command as its arguments."""
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
        launcher = spec_option(spec, "launcher")
        if launcher:
            kwargs["entrypoint"] = list(launcher)
            kwargs["command"] = [*(image_entrypoint or []), *spec.command]
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
        except Terminated:
            raise
        except Exception as exc:  # the engine or the host failed us: a status, never a crash
            self._available = None  # ask the engine again next time
            log.warning("%s sandbox error: %s", self.name, short_error(exc))
            log.debug("%s sandbox error", self.name, exc_info=True)
            return self._fail(log_path, header, capture, f"{self.engine} error: {short_error(exc)}")

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
        uid, gid = sandbox_ids() if effective_isolation(spec)["non_root"] else (0, 0)
        order = self.output_fs if is_root else ()
        out_stage = OutputStage(workdir, control, spec.output_limit_bytes, order)
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
                    chown_tree(workdir, uid, gid)
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
                image_entrypoint=image_entrypoint(client, image.id)
                if spec_option(spec, "launcher")
                else None,
            )
            if self.watchdog:
                watchdog = start_watchdog(self.engine_url(), out_stage.mountpoint, control)
            if threading.current_thread() is threading.main_thread():
                old_handler = signal.signal(signal.SIGTERM, raise_terminated)
                handler_set = True
            try:
                from docker.models.containers import _create_container_args

                args = _create_container_args({**kwargs, "version": client.api._version})
                container_id = str(client.api.create_container(**args)["Id"])
            except Exception as exc:
                return self._fail(
                    log_path, header, capture, f"{self.engine} could not create: {short_error(exc)}"
                )
            if watchdog is not None and watchdog.stdin is not None:
                with contextlib.suppress(OSError):
                    watchdog.stdin.write(f"{container_id}\n".encode())
                    watchdog.stdin.flush()
            result = run_container(
                client.api,
                container_id,
                engine=self.engine,
                time_limit_s=spec.time_limit_s,
                cgroup_paths=self.cgroup_paths(container_id),
                capture=capture,
            )
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
                if watchdog is None or not finish_watchdog(watchdog):
                    out_stage.unmount()
                    shutil.rmtree(control, ignore_errors=True)
                if out_stage.kind == "none":
                    out_stage.giants += remove_giants(workdir, out_stage.fs_bytes)
                    if is_root:
                        chown_tree(workdir, os.getuid(), os.getgid())
                # whatever ran, nothing it left may point outside or stay set-id on the host
                sanitized = sanitize(str(workdir))
        return finish_run(
            spec,
            log_path,
            header,
            capture,
            result,
            enforcement,
            notes,
            sanitized,
            out_stage,
            engine=self.engine,
            oom_flag_reliable=self.oom_flag_reliable,
        )

    # --- reaping --------------------------------------------------------------------------------

    def reap(self, client: Any | None = None) -> list[str]:
        """Remove containers (of any sabench backend on this engine) whose owner process died,
        and the per-run folders/mounts of dead owners. Returns the container ids removed."""
        reap_control_dirs(CONTROL_PREFIX)
        client = client or self.client()
        removed = []
        try:
            found = client.api.containers(all=True, filters={"label": LABEL_OWNER})
        except Exception as exc:
            log.warning("could not list containers to reap: %s", short_error(exc))
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
