"""The Apptainer backend: its CLI, for HPC clusters (no daemon; runs as the calling user).

``apptainer exec --containall --cleanenv`` gives the run its own PID, IPC and mount namespaces, an
empty environment, a private /tmp and home; only the workdir (``/submission``, read-write) and the
paper (``/paper``, read-only) are bound in. Per setting (``runtime.apptainer`` in the config, passed
as ``spec.options``):

- network: ``--net --network none`` unless ``network: full``. Some sites forbid ``--net`` to
  users; ``net: false`` then drops it and the record says the network is NOT isolated.
- memory / pids: ``--memory`` / ``--memory-swap`` / ``--pids-limit`` (cgroups; root, or cgroup v2
  with a systemd user session); ``limits: false`` drops them (the record says so).
- time: the run's process group is SIGKILLed at the limit (with --containall the container has its
  own PID namespace, so its init takes every process with it), plus a CPU-time rlimit backstop.
- output: a file-size rlimit and a size check afterwards (no privileged mount on a cluster).
- GPUs: ``--nv`` and ``CUDA_VISIBLE_DEVICES`` = the allocated device ids.

Images: a ``.sif`` path is used as it is; ``docker://``/``oras://``/``library://`` refs (a bare
ref means ``docker://``) are pulled once into ``<image_cache>/apptainer/<name>.sif`` (default
``$SABENCH_IMAGE_CACHE/apptainer``; on a cluster, a folder every node sees) and reused. The
project's image is built with apptainer alone from ``images/python/sabench-python.def``:
``python -m sabench.sandbox.apptainer build`` (docs/hpc.md).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from sabench.sandbox import SUBMISSION_TARGET, RunResult, Sandbox, SandboxSpec
from sabench.sandbox.common import (
    TERM_GRACE_S,
    XFSZ_MESSAGE,
    LogCapture,
    access_faults,
    classify,
    end_group,
    exit_code,
    kill_group,
    share_read_only,
    tree_bytes,
    wait_for_exit,
    wait_or_end,
    write_log,
)
from sabench.sandbox.gpu import normalize_request
from sabench.sandbox.images import cache_dir

log = logging.getLogger("sabench.sandbox.apptainer")

#: Applies rlimits then execs apptainer (no preexec_fn: the caller may have threads).
_SHIM = (
    "import json,os,resource,sys\n"
    "for k,v in json.loads(sys.argv[1]).items():\n"
    " r=getattr(resource,k);h=resource.getrlimit(r)[1]\n"
    " v=v if h==resource.RLIM_INFINITY else min(v,h)\n"
    " resource.setrlimit(r,(v,v))\n"
    "os.execvp(sys.argv[2],sys.argv[2:])\n"
)
#: The project's image as a SIF, where ``runtime.image: null`` finds it (under the image cache).
DEFAULT_SIF = "sabench-python.sif"
#: Its definition file, relative to the repository root (where ``apptainer build`` must run).
DEFINITION = Path("images") / "python" / "sabench-python.def"
_SCHEMES = ("docker://", "docker-daemon://", "docker-archive://", "oras://", "library://")


def find_apptainer() -> str | None:
    """``$SABENCH_APPTAINER``, else apptainer, else singularity (its older name) on PATH."""
    override = os.environ.get("SABENCH_APPTAINER")
    if override:
        return override if os.access(override, os.X_OK) else None
    return shutil.which("apptainer") or shutil.which("singularity")


def sif_name(ref: str) -> str:
    """A file name for ``ref``'s SIF: readable, and unique by a hash of the whole ref."""
    body = ref.split("://", 1)[-1]
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", body).strip("_")[:80]
    return f"{readable}-{hashlib.sha256(ref.encode()).hexdigest()[:12]}.sif"


def default_sif_path() -> Path:
    return cache_dir() / "apptainer" / DEFAULT_SIF


def default_image() -> str | None:
    """``$SABENCH_APPTAINER_IMAGE``, else the project's image at :func:`default_sif_path`."""
    env = os.environ.get("SABENCH_APPTAINER_IMAGE")
    if env:
        return env
    return str(default_sif_path()) if default_sif_path().is_file() else None


def image_source(image: str | None) -> tuple[str, bool]:
    """(what apptainer gets, whether it is a local file): a .sif path or a scheme:// ref."""
    image = image or default_image()
    if not image:
        raise ValueError(
            "the apptainer backend needs runtime.image: a .sif file, or a registry ref "
            "(docker://..., oras://...), pulled once into the image cache; or the project's "
            f"image at {default_sif_path()} (build it there with apptainer alone: "
            "python -m sabench.sandbox.apptainer build)"
        )
    if image.startswith(_SCHEMES):
        return image, False
    if image.endswith(".sif") or image.startswith(("/", "./", "../")):
        return str(Path(image).expanduser().resolve()), True
    return f"docker://{image}", False


def pull_argv(apptainer: str, ref: str, sif: Path) -> list[str]:
    return [apptainer, "pull", "--disable-cache", str(sif), ref]


def build_argv(apptainer: str, sif: Path, definition: Path = DEFINITION) -> list[str]:
    """``apptainer build`` of the project's image from its definition file: no Docker daemon
    (apptainer pulls the base itself); without root, ``--fakeroot`` (a user namespace)."""
    fakeroot = ["--fakeroot"] if os.geteuid() != 0 else []
    return [apptainer, "build", *fakeroot, str(sif), str(definition)]


def build_default_image(repo: Path, sif: Path | None = None) -> Path:
    """Build the project's image into ``sif`` (default: where ``runtime.image: null`` and
    ``auto`` find it), through a partial file so that a failed build leaves nothing."""
    sif = Path(sif or default_sif_path()).expanduser().resolve()
    sif.parent.mkdir(parents=True, exist_ok=True)
    partial = sif.with_name(f"{sif.name}.{os.getpid()}.partial")
    if not (repo / DEFINITION).is_file():
        raise RuntimeError(f"{repo / DEFINITION} not found: run this from a sabench checkout")
    apptainer = find_apptainer()
    if apptainer is None:
        raise RuntimeError("apptainer (or singularity) is not on PATH: `module load apptainer`")
    done = subprocess.run(build_argv(apptainer, partial), cwd=repo, stdin=subprocess.DEVNULL)
    if done.returncode:
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"apptainer build exited {done.returncode} (its output is above)")
    partial.rename(sif)
    return sif


class ApptainerSandbox(Sandbox):
    """``apptainer exec`` per run; see the module docstring."""

    name = "apptainer"
    isolation = (
        "sandboxed (apptainer): --containall --cleanenv (own pid/ipc/mount namespaces, empty "
        f"environment), calling user, only {SUBMISSION_TARGET} writable"
    )
    needs_python_env = False
    runs_images = True

    def __init__(self, apptainer: str | None = None) -> None:
        self.apptainer = apptainer or find_apptainer() or "apptainer"
        self._version = ""
        self._image: dict[str | None, str] = {}

    def available(self) -> tuple[bool, str]:
        """Installed and with an image to run when none is configured (``auto`` cannot know the
        configured one: on a cluster, name the backend or put the image at the default path)."""
        ok, why = self.installed()
        if ok and default_image() is None:
            return False, (
                "apptainer is installed but has no default image: set backend: apptainer with "
                f"runtime.image, or put the project's image at {default_sif_path()}"
            )
        return ok, why

    def available_when_named(self) -> tuple[bool, str]:
        return self.installed()  # the image is pulled or built by the run itself

    def installed(self) -> tuple[bool, str]:
        exe = self.apptainer if os.path.sep in self.apptainer else shutil.which(self.apptainer)
        if not exe or not os.access(exe, os.X_OK):
            return False, "apptainer (or singularity) is not installed"
        try:
            done = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError) as exc:
            return False, f"{exe} --version failed: {exc}"
        if done.returncode:
            return False, f"{exe} --version failed: {(done.stderr or done.stdout).strip()[:300]}"
        self._version = done.stdout.strip()
        return True, ""

    def describe(self, spec: SandboxSpec | None = None) -> dict[str, Any]:
        info = super().describe(spec)
        info["image"] = self._image.get(spec.image if spec else None, info["image"])
        info["version"] = self._version
        if spec is not None:
            notes = []
            if spec.network == "none" and not _opt(spec, "apptainer_net", True):
                notes.append("network NOT isolated (apptainer_net: false)")
            if not _opt(spec, "apptainer_limits", True):
                notes.append("memory/pids NOT limited (apptainer_limits: false)")
            if spec.network != "none":
                notes.append(f"network={spec.network}")
            if spec.isolation.get("read_only_paper") is False:
                notes.append("/paper writable")
            if notes:
                info["isolation"] = f"{self.isolation} | WEAKENED: " + "; ".join(notes)
        return info

    def build_argv(
        self, spec: SandboxSpec, image: str, *, gpu_ids: list[str] | None = None
    ) -> list[str]:
        """The ``apptainer exec`` command line (pure: tested as it is)."""
        argv = [self.apptainer, "exec", "--containall", "--cleanenv"]
        if os.geteuid() == 0:
            argv.append("--no-privs")  # root outside: no capabilities inside
        argv += ["--pwd", SUBMISSION_TARGET]
        argv += ["--bind", f"{_bind_path(spec.workdir)}:{SUBMISSION_TARGET}:rw"]
        ro = "rw" if spec.isolation.get("read_only_paper") is False else "ro"
        for mount in spec.ro_mounts:
            argv += ["--bind", f"{_bind_path(mount.source)}:{mount.target}:{ro}"]
        if spec.network == "none" and _opt(spec, "apptainer_net", True):
            argv += ["--net", "--network", "none"]
        if _opt(spec, "apptainer_limits", True):
            argv += [
                "--memory", f"{spec.mem_mb}M",
                "--memory-swap", f"{spec.mem_mb}M",
                "--pids-limit", str(spec.pids),
            ]  # fmt: skip
        count, _ = normalize_request(spec.gpus)
        env = {"TMPDIR": "/tmp", "LANG": "C.UTF-8", **spec.env}
        if count:
            argv.append("--nv")
            if gpu_ids:
                env["CUDA_VISIBLE_DEVICES"] = ",".join(gpu_ids)
        for key, value in env.items():
            argv += ["--env", f"{key}={value}"]
        argv.append(image)
        argv += list(spec.command)
        return argv

    def ensure_image(self, spec: SandboxSpec) -> str:
        """The .sif to run: the given file, or the ref pulled once into the cache."""
        source, is_file = image_source(spec.image)
        if is_file:
            if not Path(source).is_file():
                raise FileNotFoundError(f"image {source} does not exist")
            return source
        prefix = _opt(spec, "image_cache", None)
        folder = cache_dir(prefix) / "apptainer"
        sif = folder / sif_name(source)
        if sif.is_file():
            return str(sif)
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / ".pull.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not sif.is_file():
                partial = sif.with_suffix(f".{os.getpid()}.partial")
                done = subprocess.run(
                    pull_argv(self.apptainer, source, partial),
                    capture_output=True,
                    text=True,
                    timeout=3600,
                    stdin=subprocess.DEVNULL,
                )
                if done.returncode:
                    partial.unlink(missing_ok=True)
                    raise RuntimeError(
                        f"apptainer pull {source} failed: {(done.stderr or done.stdout)[-800:]}"
                    )
                partial.rename(sif)
        return str(sif)

    def run(self, spec: SandboxSpec, log_path: Path) -> RunResult:
        log_path = Path(log_path)
        capture = LogCapture(spec.log_limit_kb * 1024)
        header = [f"backend apptainer; command: {shlex.join(spec.command)}"]
        ok, why = self.installed()
        if not ok:
            return _fail(log_path, header, capture, f"apptainer unavailable: {why}")
        count, ids = normalize_request(spec.gpus)
        gpu_ids = ids
        if count:
            from sabench.sandbox.gpu import host_gpus

            gpus, why = host_gpus()
            if not gpus:
                msg = f"runtime.gpus={spec.gpus!r} asks for GPUs but this host has none ({why})"
                return _fail(log_path, header, capture, msg)
        try:
            image = self.ensure_image(spec)
        except (ValueError, OSError, RuntimeError, subprocess.SubprocessError) as exc:
            return _fail(log_path, header, capture, f"image: {exc}")
        self._image[spec.image] = image
        # the calling user runs the container (as root: --no-privs, so no DAC override either)
        uid, gid = os.geteuid(), os.getegid()
        if uid == 0:
            share_read_only(spec, uid, gid)
        faults = access_faults(spec, spec.workdir, uid, {gid, *os.getgroups()})
        if faults:
            return _fail(log_path, header, capture, "; ".join(faults))
        argv = self.build_argv(spec, image, gpu_ids=gpu_ids)
        header.append(f"argv: {shlex.join(argv)}")
        used = tree_bytes(spec.workdir)
        limits = {
            "RLIMIT_FSIZE": used + spec.output_limit_bytes,
            "RLIMIT_CORE": 0,
            "RLIMIT_CPU": int(spec.time_limit_s * (os.cpu_count() or 1)) + 10,
        }
        shim = [sys.executable, "-I", "-S", "-c", _SHIM, json.dumps(limits), *argv]
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                shim,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=_host_env(),
            )
        except OSError as exc:
            return _fail(log_path, header, capture, f"cannot start apptainer: {exc}")
        assert proc.stdout is not None
        reader = capture.start_reader(proc.stdout.fileno())
        waited = wait_or_end(proc.pid, spec.time_limit_s)
        timed_out = waited is None
        if timed_out:  # SIGTERM, TERM_GRACE_S to end as they would, then SIGKILL
            waited = end_group(proc.pid)
        kill_group(proc.pid)
        if waited is None:
            waited = wait_for_exit(proc.pid, None)
        assert waited is not None
        wall = round(time.monotonic() - started, 3)
        proc.returncode = os.waitstatus_to_exitcode(waited[0])
        capture.stop(reader)
        proc.stdout.close()
        code = exit_code(waited[0])
        text = capture.render()
        output_full = (
            XFSZ_MESSAGE in text or tree_bytes(spec.workdir) - used > spec.output_limit_bytes
        )
        started_ok = not (
            code == 255 and (b"FATAL" in text[:4096] or b"ERROR" in text[:4096])
        )  # apptainer's own failures (bad image, forbidden --net) exit 255 with FATAL
        oom = code == 137 and not timed_out
        status = classify(
            started=started_ok,
            exit_code=code,
            timed_out=timed_out,
            oom=oom,
            output_full=output_full,
        )
        parts = []
        if not started_ok:
            fatal = [ln for ln in text.decode(errors="replace").splitlines() if "FATAL" in ln]
            parts.append("apptainer could not start: " + (fatal[-1] if fatal else "see log"))
        if status == "timeout":
            parts.append(f"killed after time_limit_s={spec.time_limit_s:g}")
        elif status == "failed":
            parts.append(f"reproduce command exited {code}")
        elif status == "oom":
            parts.append(f"killed by SIGKILL at the memory limit (mem_mb={spec.mem_mb})")
        elif status == "output_limit":
            parts.append(f"output exceeded output_limit_mb={spec.output_limit_mb}")
        enforcement = {
            "time": f"wall clock; SIGTERM of the process group, SIGKILL {TERM_GRACE_S:g} s later "
            "(+ RLIMIT_CPU backstop)",
            "output": "RLIMIT_FSIZE per file + total size checked after the run",
            "memory": "apptainer --memory (cgroup)"
            if _opt(spec, "apptainer_limits", True)
            else "NOT enforced",
            "pids": "apptainer --pids-limit (cgroup)"
            if _opt(spec, "apptainer_limits", True)
            else "NOT enforced",
        }
        footer = [
            f"status={status} exit_code={code} wall_s={wall:.2f} log_bytes={capture.total}",
            *parts,
        ]
        write_log(log_path, header, capture, footer)
        return RunResult(
            status if started_ok else "sandbox_error",
            code,
            wall,
            None,
            capture.total,
            "; ".join(parts),
            enforcement,
        )


def _opt(spec: SandboxSpec, key: str, default: Any) -> Any:
    value = (getattr(spec, "options", None) or {}).get(key)
    return default if value is None else value


def _bind_path(path: Path) -> str:
    text = str(Path(path).resolve())
    if ":" in text or "," in text:
        raise ValueError(f"apptainer cannot bind a path with ':' or ',': {text}")
    return text


def _host_env() -> dict[str, str]:
    """What apptainer itself needs on the host (--cleanenv empties the container's anyway)."""
    keep = ("PATH", "LANG", "USER", "HOME", "XDG_RUNTIME_DIR", "APPTAINER_CACHEDIR", "TMPDIR")
    return {k: os.environ[k] for k in keep if k in os.environ}


def _fail(log_path: Path, header: list[str], capture: LogCapture, message: str) -> RunResult:
    write_log(log_path, header, capture, [f"status=sandbox_error: {message}"])
    return RunResult("sandbox_error", None, 0.0, None, capture.total, message)


def main(argv: list[str] | None = None) -> int:
    from sabench.steps import ArgumentParser

    parser = ArgumentParser(
        prog="python -m sabench.sandbox.apptainer",
        description="Build the project's sandbox image with apptainer alone (docs/hpc.md).",
    )
    parser.add_argument("action", choices=["build", "argv"], help="argv: print the command only")
    parser.add_argument("--out", type=Path, help=f"the SIF (default: {default_sif_path()})")
    args = parser.parse_args(argv)
    repo = Path(__file__).resolve().parents[2]
    if args.action == "argv":
        sif = args.out or default_sif_path()
        print(f"cd {shlex.quote(str(repo))} && {shlex.join(build_argv('apptainer', sif))}")
        return 0
    try:
        print(build_default_image(repo, args.out))
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
