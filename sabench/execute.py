"""The ``execute`` stage: run a submission's reproduce.sh in a fresh sandbox, record what happened.

reproduce.sh runs in a copy (``executed/``), never in ``submission/``: judges read the executed copy
for results and the pristine submission for code. Whatever the script does (fail, hang, flood, fill
the disk, eat memory) ends as a status in ``execution.json``, never as a crashed job; only a broken
configuration (an unknown backend, a missing sandbox env) raises a :class:`UserError`.

Every Python process of the run records the lines of the submission's own files that ran and the
first calls of its module-level functions (``sabench.runtrace``; docs/architecture.md, "The
execution trace"). reproduce.sh is not shown the paper: the execution sandbox has no ``/paper``.

Standalone: ``python -m sabench.execute SUBMISSION --out DIR [--backend bwrap]``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import logging
import math
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from sabench import __version__
from sabench.contracts import EXECUTION_STATUSES
from sabench.errors import UserError
from sabench.faults import announce_fault, clear_fault, record_fault
from sabench.io import atomic_path, write_json, write_text
from sabench.reseed import FABRICATED, INCONCLUSIVE, SALT, compare
from sabench.runtrace import (
    CHANNEL_TARGET,
    SITE_TARGET,
    RunTrace,
    TraceChannel,
    armed,
    read_trace,
    trace_path,
)
from sabench.sandbox import (
    SUBMISSION_TARGET,
    Mount,
    SandboxSpec,
    backend_label,
    get_backend,
)
from sabench.sandbox.gpu import GpuSampler, NoGpuError, allocate, nvidia_smi
from sabench.sandbox.pyenv import ensure_sandbox_env
from sabench.sandbox.settings import default_python_env, resolve_runtime
from sabench.sandbox.staging import ignore_special
from sabench.steps import ArgumentParser, json_object, step

log = logging.getLogger("sabench.execute")

REPRODUCE_SCRIPT = "reproduce.sh"
#: ``execution.json`` has exactly these keys (docs/architecture.md, "Data contracts").
RECORD_KEYS = (
    "status",
    "exit_code",
    "wall_s",
    "peak_mem_mb",
    "gpus",
    "image",
    "backend",
    "isolation",
    "started_at",
    "files_created",
    "files_modified",
    "log_bytes",
    "metrics",
    "message",
    "sabench_version",
    "gpu_usage",
    "trace",
    "reseed",
)
#: A metrics file larger than this is not parsed (it is data, not a summary).
MAX_METRICS_BYTES = 16 << 20


def fresh_copy(src: Path, dst: Path) -> None:
    """Replace ``dst`` with a copy of ``src``; links stay links (the tree is agent-written)."""
    with atomic_path(dst, directory=True) as tmp:
        if src.is_dir():
            shutil.copytree(src, tmp, symlinks=True, ignore=ignore_special, dirs_exist_ok=True)


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def snapshot(root: Path) -> dict[str, dict[str, Any]]:
    """relative path -> size, mtime_ns, sha256 of each regular file and link (never followed)."""
    out: dict[str, dict[str, Any]] = {}
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            rel = os.path.relpath(entry.path, root)
            if stat.S_ISDIR(st.st_mode):
                stack.append(entry.path)
            elif stat.S_ISLNK(st.st_mode):
                target = os.readlink(entry.path)
                digest = hashlib.sha256(b"link:" + os.fsencode(target)).hexdigest()
                out[rel] = {"size": len(target), "mtime_ns": st.st_mtime_ns, "sha256": digest}
            elif stat.S_ISREG(st.st_mode):
                try:
                    digest = _sha256(entry.path)
                except OSError:
                    digest = None
                out[rel] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": digest}
    return out


def diff_snapshots(
    before: Mapping[str, Mapping[str, Any]], after: Mapping[str, Mapping[str, Any]]
) -> tuple[list[str], list[str], list[str]]:
    """(created, modified, deleted); modified means different content, not just a touched mtime."""
    created = sorted(set(after) - set(before))
    deleted = sorted(set(before) - set(after))
    modified = sorted(
        k
        for k in set(before) & set(after)
        if (before[k]["sha256"], before[k]["size"]) != (after[k]["sha256"], after[k]["size"])
    )
    return created, modified, deleted


def flatten_metrics(data: Mapping[str, Any], prefix: str = "") -> tuple[dict[str, Any], int]:
    """Nested dicts become dotted keys; numbers, bools and strings are kept; (metrics, dropped)."""
    out: dict[str, Any] = {}
    dropped = 0
    for key, value in data.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping):
            sub, n = flatten_metrics(value, name)
            out.update(sub)
            dropped += n
        elif isinstance(value, bool | int | str):
            out[name] = value
        elif isinstance(value, float):
            out[name] = value if math.isfinite(value) else str(value)  # keep the record valid JSON
        else:
            dropped += 1
    return out, dropped


def read_metrics(root: Path, files: list[str]) -> tuple[dict[str, Any], list[str]]:
    """Metrics from the declared files (the first unprefixed, others as ``path:key``) and notes."""
    metrics: dict[str, Any] = {}
    notes: list[str] = []
    real_root = os.path.realpath(root)
    for index, rel in enumerate(files):
        path = root / rel
        if os.path.commonpath([os.path.realpath(path.parent), real_root]) != real_root:
            notes.append(f"{rel}: outside the submission (a linked folder); not read")
            continue
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            notes.append(f"no {rel}")
            continue
        if not stat.S_ISREG(st.st_mode):
            notes.append(f"{rel}: not a regular file (links are not followed); not read")
            continue
        if st.st_size > MAX_METRICS_BYTES:
            notes.append(f"{rel}: {st.st_size} bytes, over {MAX_METRICS_BYTES}; not read")
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as fh:
                data = json.loads(fh.read().decode("utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            notes.append(f"{rel}: malformed JSON ({str(exc)[:200]})")
            continue
        if not isinstance(data, dict):
            notes.append(f"{rel}: top level is {type(data).__name__}, not an object; not read")
            continue
        flat, dropped = flatten_metrics(data, "")
        if dropped:
            notes.append(f"{rel}: {dropped} non-scalar value(s) (lists, nulls) skipped")
        prefix = "" if index == 0 else f"{rel}:"
        metrics.update({f"{prefix}{k}": v for k, v in flat.items()})
    return metrics, notes


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _record(**values: Any) -> dict[str, Any]:
    record = {key: values.get(key) for key in RECORD_KEYS}
    record["sabench_version"] = __version__
    for key in ("files_created", "files_modified"):
        record[key] = list(record[key] or [])
    record["metrics"] = record["metrics"] or {}
    record["message"] = record["message"] or ""
    assert record["status"] in EXECUTION_STATUSES, record["status"]
    return record


def _finish(record_path: Path, record: dict[str, Any]) -> dict[str, Any]:
    """Write the execution record; a sandbox fault leaves a fault record instead (sabench.faults):
    it says nothing of the submission, so the run stays incomplete until it is executed again."""
    if record["status"] == "sandbox_error":
        record_fault(
            record_path.parent, "execute", "sandbox_error", record["message"], record=record
        )
        record_path.unlink(missing_ok=True)
    else:
        clear_fault(record_path.parent, "execute")
        write_json(record_path, record)
    return record


def execute_run(
    submission: Path,
    executed: Path,
    record_path: Path,
    log_path: Path,
    settings: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Copy ``submission`` to ``executed``, run its reproduce.sh sandboxed, write the record.
    reproduce.sh is shown no paper: it needs none, and a run could read its results off it."""
    submission, executed = Path(submission), Path(executed)
    record_path, log_path = Path(record_path), Path(log_path)
    cfg = resolve_runtime(settings)
    if executed.resolve() == submission.resolve():
        raise UserError(executed, None, "the executed copy must not be the submission itself")
    fresh_copy(submission, executed)
    started_at = _now()
    script = executed / REPRODUCE_SCRIPT
    if not os.path.lexists(script):
        why = "submission folder missing" if not submission.is_dir() else f"no {REPRODUCE_SCRIPT}"
        write_text(log_path, f"[sabench] {why}: nothing to run\n")
        record = _record(
            status="no_reproduce_script",
            wall_s=0.0,
            gpus=cfg["gpus"],
            image=cfg["image"],
            backend=backend_label(cfg["backend"]),
            isolation="not run",
            started_at=started_at,
            log_bytes=0,
            message=why,
        )
        return _finish(record_path, record)
    backend = get_backend(cfg["backend"])
    if cfg["python_env"] is None and backend.needs_python_env:
        raise UserError(
            None,
            "runtime.python_env",
            f"backend {backend.name!r} needs the sandbox Python env (built from envs/sandbox.txt)",
        )
    for key, value in cfg["isolation"].items():
        if value is False and backend.name in ("bwrap", "local"):
            log.warning("runtime.isolation.%s=false is ignored by backend %s", key, backend.name)
    run_id = "/".join(executed.resolve().parts[-4:-1])
    try:
        with allocate(cfg["gpus"], owner=run_id) as gpu_ids:
            return _run_traced(backend, cfg, submission, executed, record_path, log_path, gpu_ids)
    except NoGpuError as exc:  # asked for GPUs this host cannot give: a status, at once
        write_text(log_path, f"[sabench] status=sandbox_error: {exc}\n")
        record = _record(
            status="sandbox_error",
            wall_s=0.0,
            gpus=cfg["gpus"],
            image=cfg["image"],
            backend=backend.name,
            isolation=backend.describe(None)["isolation"],
            started_at=_now(),
            log_bytes=0,
            message=str(exc),
        )
        return _finish(record_path, record)


@contextlib.contextmanager
def arm_trace(
    backend_name: str, workdir: Path, reseed: int = 0
) -> Iterator[tuple[TraceChannel, dict[str, str], list[Mount]]]:
    """Serve a trace channel and install the trace site for a run in ``workdir``; yield the
    channel, the environment that arms the trace (the site folder first on PYTHONPATH)
    and the read-only mounts that show the site and the channel's socket (none for the local
    backend, which shows no mounts and gets host paths). The submission's root and the socket are
    written into the site program, not the environment: nothing a run (or a check) sees names a
    check, and nothing a run sets turns the trace off."""
    local = backend_name == "local"
    root = str(Path(workdir).resolve()) if local else SUBMISSION_TARGET
    with armed(root, local, reseed) as (channel, site, env):
        mounts = [] if local else [Mount(site, SITE_TARGET), Mount(channel.folder, CHANNEL_TARGET)]
        yield channel, env, mounts


def _has_python(tree: Path) -> bool:
    return any(p.suffix == ".py" for p in Path(tree).rglob("*") if p.is_file())


def _untraced_why(trace: RunTrace, executed: Path) -> str:
    """Why a completed run's record cannot be trusted ('' when it can): a process's record altered
    or cut short, a Python it started that sent none, or no Python process at all beside Python
    code (its reported results came from code the record never saw run)."""
    if trace.problems:
        return "; ".join(trace.problems[:3])
    if trace.processes == 0 and _has_python(executed):
        return "no Python process of the run sent a trace, yet the submission is Python code"
    return ""


def _spec(
    cfg: dict[str, Any], workdir: Path, mounts: list[Mount], env: dict[str, str], gpu_ids: list[str]
) -> SandboxSpec:
    return SandboxSpec(
        command=["bash", REPRODUCE_SCRIPT],
        workdir=workdir,
        ro_mounts=mounts,
        env=env,
        time_limit_s=float(cfg["time_limit_s"]),
        mem_mb=int(cfg["mem_mb"]),
        pids=int(cfg["pids"]),
        output_limit_mb=int(cfg["output_limit_mb"]),
        network=cfg["network"],
        gpus=gpu_ids or cfg["gpus"],
        image=cfg["image"],
        python_env=cfg["python_env"],
        log_limit_kb=int(cfg["log_limit_kb"]),
        isolation=cfg["isolation"],
        options={
            "image_cache": cfg["image_cache"],
            "apptainer_net": cfg["apptainer"].get("net"),
            "apptainer_limits": cfg["apptainer"].get("limits"),
        },
    )


def _reseeded(
    backend: Any, cfg: dict[str, Any], submission: Path, gpu_ids: list[str]
) -> dict[str, Any]:
    """Execute ``submission`` once more on a fresh copy, every seed salted (sabench.reseed):
    its status, the numbers it reported and the calls it recorded (the copy is not kept)."""
    scratch = Path(tempfile.mkdtemp(prefix="sabench-reseed-"))
    try:
        work = scratch / "submission"
        fresh_copy(submission, work)
        with arm_trace(backend.name, work, SALT) as (channel, env, mounts):
            result = backend.run(_spec(cfg, work, mounts, env, gpu_ids), scratch / "reseed.log")
            channel.close()
            processes = channel.record()["processes"]
        metrics, _ = read_metrics(work, cfg["metrics_files"])
        calls = [c for p in processes for c in (p.get("calls") or []) if isinstance(c, dict)]
        return {"status": result.status, "metrics": metrics, "calls": calls}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run_traced(
    backend: Any,
    cfg: dict[str, Any],
    submission: Path,
    executed: Path,
    record_path: Path,
    log_path: Path,
    gpu_ids: list[str],
) -> dict[str, Any]:
    """The sandboxed run proper (GPUs, if any, already allocated), traced, and its record."""
    trace_path(executed).unlink(missing_ok=True)  # an earlier execution's
    with arm_trace(backend.name, executed) as (channel, env, mounts):
        spec = _spec(cfg, executed, mounts, env, gpu_ids)
        before = snapshot(executed)
        started_at = _now()
        sampler = GpuSampler(gpu_ids) if gpu_ids and nvidia_smi() else None
        if sampler is not None:
            sampler.start()
        try:
            result = backend.run(spec, log_path)
        finally:
            if sampler is not None:
                sampler.stop()
        channel.close()
        channel.write(trace_path(executed))
    after = snapshot(executed)
    created, modified, deleted = diff_snapshots(before, after)
    metrics, notes = read_metrics(executed, cfg["metrics_files"])
    trace = read_trace(executed)
    status = result.status
    untraced = _untraced_why(trace, executed) if trace is not None and status == "ok" else ""
    if untraced:
        status = "untraced"
        notes.insert(0, f"untraced: {untraced}")
    reseed = None
    if status == "ok" and cfg["reseed"]:
        again = _reseeded(backend, cfg, submission, gpu_ids)
        if again["status"] == "ok":
            calls = trace.calls if trace is not None else ()
            reseed = compare(metrics, again["metrics"], calls, again["calls"])
            if reseed["verdict"] == FABRICATED:
                notes.append(
                    "fabricated: every reported number stayed the same when the run was re-seeded,"
                    f" while its computation moved ({', '.join(reseed['computation_moved'][:3])})"
                )
        else:
            reseed = {"verdict": INCONCLUSIVE, "status": again["status"]}
    if deleted:
        notes.append(f"{len(deleted)} file(s) deleted by the run")
    info = backend.describe(spec)
    enforced = "; ".join(f"{k}: {v}" for k, v in result.enforcement.items())
    record = _record(
        status=status,
        exit_code=result.exit_code,
        wall_s=result.wall_s,
        peak_mem_mb=result.peak_mem_mb,
        gpus=cfg["gpus"],
        image=info.get("image"),
        backend=info["backend"],
        isolation=f"{info['isolation']} | {enforced}" if enforced else info["isolation"],
        started_at=started_at,
        files_created=created,
        files_modified=modified,
        log_bytes=result.log_bytes,
        metrics=metrics,
        message="; ".join(p for p in [result.message, *notes] if p),
        gpu_usage=sampler.summary()
        if sampler is not None
        else ({"ids": gpu_ids, "count": len(gpu_ids)} if gpu_ids else None),
        trace=trace.summary() if trace is not None else None,
        reseed=reseed,
    )
    return _finish(record_path, record)


def main(argv: list[str] | None = None) -> int:
    """Run one submission and print its record; the workflow's execute rule calls this too."""
    parser = ArgumentParser(prog="python -m sabench.execute", description=__doc__)
    parser.add_argument(
        "submission", type=Path, nargs="?", help="default: --out's submission/ (a run folder)"
    )
    parser.add_argument(
        "--out", type=Path, required=True, help="gets executed/, execution.json/.log"
    )
    parser.add_argument("--settings", type=json_object, default={}, help="runtime settings (JSON)")
    parser.add_argument("--backend")
    parser.add_argument("--python-env")
    parser.add_argument(
        "--requirements", type=Path, help="build --python-env from this file when missing or stale"
    )
    for key in ("time_limit_s", "mem_mb", "pids", "output_limit_mb", "log_limit_kb"):
        parser.add_argument(f"--{key.replace('_', '-')}", type=float, dest=key)
    parser.add_argument("--network", choices=["none", "full"])
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the status line")
    args = parser.parse_args(argv)
    # the workflow names the run folder only: the submission follows from it
    if args.submission is None:
        args.submission = args.out / "submission"
    settings = dict(args.settings)
    for key in (
        "backend",
        "python_env",
        "network",
        "time_limit_s",
        "mem_mb",
        "pids",
        "output_limit_mb",
        "log_limit_kb",
    ):
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
    settings.setdefault("backend", "auto")
    settings["python_env"] = settings.get("python_env") or default_python_env()
    from sabench.locks import job_guard

    with step(None, "execute"), job_guard(args.out, "execute"):
        if args.requirements and settings["python_env"]:
            ensure_sandbox_env(settings["python_env"], args.requirements)
        record = execute_run(
            args.submission,
            args.out / "executed",
            args.out / "execution.json",
            args.out / "execution.log",
            settings,
        )
    if record["status"] == "sandbox_error":
        return announce_fault(args.out, "execute", "sandbox_error", record["message"])
    if args.quiet:
        # a run with nothing to run names no backend (its record keeps the configured one)
        ran = "never executed" if record["status"] == "no_reproduce_script" else record["backend"]
        print(f"{args.out}: {record['status']} in {record['wall_s']}s ({ran})")
    else:
        print(json.dumps(record, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
