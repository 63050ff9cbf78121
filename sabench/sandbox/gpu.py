"""GPUs for sandboxed runs: which the host has, a lock-file allocator, nvidia-smi sampling.

Snakemake's ``--resources gpu=N`` caps how many GPU jobs run at once but does not say which device
each gets, and it never sets ``CUDA_VISIBLE_DEVICES``. :func:`allocate` does: it picks free devices
among those the scheduler gave the job (``CUDA_VISIBLE_DEVICES`` when Slurm set it, else every GPU
``nvidia-smi`` lists) and holds one ``flock`` per device under a lock folder shared by all jobs on
the host; the kernel drops the lock when the job dies, so a killed job never strands a GPU.

A request on a host without GPUs raises :class:`NoGpuError` at once (a clear status, never a hang).
:class:`GpuSampler` runs ``nvidia-smi --query-gpu ... -lms`` beside the run and summarises
utilisation and peak memory for the execution record.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger("sabench.sandbox.gpu")

GpuRequest = int | str | list[int] | list[str] | None
#: Default lock folder (shared by every job on the host; one file per device).
DEFAULT_LOCK_DIR = Path(tempfile.gettempdir()) / "sabench-gpu-locks"


class NoGpuError(RuntimeError):
    """GPUs were asked for that this host (or this job's allocation) cannot give."""


@dataclass(frozen=True)
class Gpu:
    index: str
    uuid: str
    name: str
    memory_mb: float | None


def nvidia_smi() -> str | None:
    """The nvidia-smi to use (``$SABENCH_NVIDIA_SMI`` overrides, for tests and odd installs)."""
    override = os.environ.get("SABENCH_NVIDIA_SMI")
    if override:
        return override if os.access(override, os.X_OK) else None
    return shutil.which("nvidia-smi")


def host_gpus(smi: str | None = None) -> tuple[list[Gpu], str]:
    """(the GPUs nvidia-smi lists, why none) -- never raises."""
    smi = smi or nvidia_smi()
    if smi is None:
        return [], "nvidia-smi not found (no NVIDIA driver on this host)"
    try:
        done = subprocess.run(
            [smi, "--query-gpu=index,uuid,name,memory.total", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=20,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return [], f"nvidia-smi failed: {exc}"
    if done.returncode:
        return [], f"nvidia-smi failed: {(done.stderr or done.stdout).strip()[-300:]}"
    gpus = []
    for line in done.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3 and parts[0]:
            gpus.append(
                Gpu(parts[0], parts[1], parts[2], _number(parts[3] if len(parts) > 3 else ""))
            )
    return gpus, "" if gpus else "nvidia-smi lists no GPU"


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def normalize_request(request: GpuRequest) -> tuple[int, list[str] | None]:
    """(count, explicit ids): ``2`` -> (2, None); ``[0, 3]`` / ``"0,3"`` -> (2, ["0","3"]);
    ``"all"`` -> (-1, None); ``0``/None/``[]`` -> (0, None)."""
    if request is None or request is False or request == 0 or request in ("", [], "0"):
        return 0, None
    if isinstance(request, bool):
        return (1, None) if request else (0, None)
    if isinstance(request, int):
        if request < 0:
            raise ValueError(f"runtime.gpus must be >= 0, 'all' or a list of ids, got {request}")
        return request, None
    if isinstance(request, str):
        if request.strip().lower() == "all":
            return -1, None
        if request.strip().isdigit() and "," not in request:
            return int(request), None
        ids = [p.strip() for p in request.split(",") if p.strip()]
        return len(ids), ids
    if isinstance(request, list | tuple):
        ids = [str(i).strip() for i in request]
        if not all(ids):
            raise ValueError(f"runtime.gpus: empty device id in {request!r}")
        return len(ids), ids
    raise ValueError(f"runtime.gpus must be a count, 'all' or a list of ids, got {request!r}")


def cuda_visible_devices(request: GpuRequest) -> str | None:
    """``CUDA_VISIBLE_DEVICES`` for a command that shares the host's devices (the local backend):
    the ids :func:`allocate` held, ``""`` (no GPU) for none, None (left alone) for a bare count."""
    count, ids = normalize_request(request)
    if count == 0:
        return ""
    return ",".join(ids) if ids is not None else None


def job_pool(gpus: list[Gpu], env: Mapping[str, str] | None = None) -> list[Gpu]:
    """The GPUs this job may use: those the scheduler named in CUDA_VISIBLE_DEVICES, else all."""
    env = os.environ if env is None else env
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return list(gpus)
    wanted = [v.strip() for v in visible.split(",") if v.strip() and v.strip() != "-1"]
    return [g for w in wanted for g in gpus if w in (g.index, g.uuid)]


@contextlib.contextmanager
def allocate(
    request: GpuRequest,
    *,
    lock_dir: Path | str | None = None,
    timeout_s: float = 600.0,
    env: Mapping[str, str] | None = None,
    gpus: list[Gpu] | None = None,
    owner: str = "",
) -> Iterator[list[str]]:
    """Hold ``request``'s devices for the ``with`` block; yields their ids (host indices).

    Raises :class:`NoGpuError` at once when the host or the job's allocation cannot satisfy the
    request, and after ``timeout_s`` when the devices stay busy.
    """
    count, ids = normalize_request(request)
    if count == 0:
        yield []
        return
    if gpus is None:
        gpus, why = host_gpus()
    else:
        why = "no GPU given"
    if not gpus:
        raise NoGpuError(f"runtime.gpus={request!r} asks for GPUs but this host has none ({why})")
    pool = job_pool(gpus, env)
    if not pool:
        raise NoGpuError(
            f"runtime.gpus={request!r}: none of this host's GPUs is in CUDA_VISIBLE_DEVICES"
        )
    if ids is not None:
        chosen = [g for i in ids for g in pool if i in (g.index, g.uuid)]
        if len(chosen) != len(ids):
            have = ", ".join(g.index for g in pool)
            raise NoGpuError(f"runtime.gpus={request!r}: not all of these exist here ({have})")
        candidates, need = chosen, len(chosen)
    else:
        need = len(pool) if count < 0 else count
        if need > len(pool):
            raise NoGpuError(
                f"runtime.gpus={request!r} but this job can use {len(pool)} GPU(s) "
                f"({', '.join(g.index for g in pool)})"
            )
        candidates = pool
    folder = Path(lock_dir) if lock_dir else DEFAULT_LOCK_DIR
    folder.mkdir(parents=True, exist_ok=True)
    held: list[tuple[Gpu, Any]] = []
    deadline = time.monotonic() + timeout_s
    waited = False
    try:
        while True:
            for gpu in candidates:
                if len(held) == need or any(h[0] is gpu for h in held):
                    continue
                fh = open(folder / f"gpu-{gpu.uuid or gpu.index}.lock", "a+")  # noqa: SIM115
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    fh.close()
                    if ids is not None:  # explicit ids: all or nothing, wait for the busy one
                        break
                    continue
                fh.seek(0)
                fh.truncate()
                fh.write(f"{os.getpid()} {owner}\n")
                fh.flush()
                held.append((gpu, fh))
            if len(held) == need:
                break
            if time.monotonic() > deadline:
                raise NoGpuError(
                    f"runtime.gpus={request!r}: devices still busy after {timeout_s:g} s "
                    f"(locks in {folder})"
                )
            if not waited:
                log.info("waiting for %d free GPU(s) (locks in %s)", need, folder)
                waited = True
            time.sleep(0.5)
        yield [g.index for g, _ in held]
    finally:
        for _, fh in held:
            with contextlib.suppress(OSError):
                fcntl.flock(fh, fcntl.LOCK_UN)
            fh.close()


class GpuSampler:
    """``nvidia-smi -lms`` beside a run: utilisation and memory of the given devices."""

    def __init__(self, ids: list[str], interval_ms: int = 500, smi: str | None = None) -> None:
        self.ids = list(ids)
        self.interval_ms = interval_ms
        self.smi = smi or nvidia_smi()
        self.samples: list[tuple[str, float | None, float | None]] = []
        self._proc: subprocess.Popen[str] | None = None
        self._thread: threading.Thread | None = None
        self.error = ""

    def __enter__(self) -> GpuSampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        if not self.ids or self.smi is None:
            self.error = "" if not self.ids else "nvidia-smi not found"
            return
        argv = [
            self.smi,
            "--query-gpu=index,utilization.gpu,memory.used",
            "--format=csv,noheader,nounits",
            "-i", ",".join(self.ids),
            "-lms", str(self.interval_ms),
        ]  # fmt: skip
        try:
            self._proc = subprocess.Popen(
                argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL,
                text=True,
                start_new_session=True,
            )
        except OSError as exc:
            self.error = f"nvidia-smi: {exc}"
            return
        self._thread = threading.Thread(target=self._read, name="sabench-gpu", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) >= 3:
                self.samples.append((parts[0], _number(parts[1]), _number(parts[2])))

    def stop(self) -> None:
        if self._proc is not None:
            with contextlib.suppress(OSError):
                self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def summary(self) -> dict[str, Any]:
        """What the execution record's ``gpu_usage`` holds."""
        utils = [u for _, u, _ in self.samples if u is not None]
        per_device: dict[str, float] = {}
        for index, _, mem in self.samples:
            if mem is not None:
                per_device[index] = max(per_device.get(index, 0.0), mem)
        out: dict[str, Any] = {
            "ids": self.ids,
            "count": len(self.ids),
            "samples": len(self.samples),
            "util_mean_pct": round(sum(utils) / len(utils), 1) if utils else None,
            "util_max_pct": max(utils) if utils else None,
            "mem_peak_mb": max(per_device.values()) if per_device else None,
            "mem_peak_mb_by_device": per_device,
        }
        if self.error:
            out["error"] = self.error
        return out
