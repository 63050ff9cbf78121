"""The facts of a finished container run as one status, the notes that explain it, the log's
footer and the :class:`RunResult`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sabench.sandbox import RunResult, SandboxSpec
from sabench.sandbox.common import (
    TERM_GRACE_S,
    XFSZ_MESSAGE,
    LogCapture,
    classify,
    tree_bytes,
    write_log,
)
from sabench.sandbox.docker.output import OutputStage


def finish_run(
    spec: SandboxSpec,
    log_path: Path,
    header: list[str],
    capture: LogCapture,
    res: dict[str, Any],
    enforcement: dict[str, str],
    notes: list[str],
    sanitized: dict[str, int],
    out_stage: OutputStage,
    *,
    engine: str,
    oom_flag_reliable: bool,
) -> RunResult:
    """Classify the run (``res`` from :func:`run_container`), write its log, return its result.

    ``oom_flag_reliable``: whether the engine's OOMKilled flag can be trusted (not podman's).
    """
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
        (res.get("oom_flag") and oom_flag_reliable)
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
    enforcement["memory"] = f"{engine} cgroup limit (memory = memory+swap = mem_mb)"
    enforcement["pids"] = f"{engine} pids limit"
    enforcement["time"] = (
        f"engine wait with a timeout; SIGTERM of the run's processes, SIGKILL of the container "
        f"{TERM_GRACE_S:g} s later"
    )
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
            parts.append(f"{engine}: {res['engine_error']}")
    if out_stage.giants:
        parts.append(f"removed {out_stage.giants} sparse file(s) larger than the output limit")
    if res.get("pid_hits"):
        parts.append(f"pids limit ({spec.pids}) reached {res['pid_hits']} time(s)")
    if spec.gpus:
        parts.append(f"gpus={spec.gpus!r} requested as {engine} device requests")
    if sanitized.get("setid_cleared"):
        parts.append(f"cleared setuid/setgid bits on {sanitized['setid_cleared']} file(s)")
    if sanitized.get("special_removed"):
        parts.append(f"removed {sanitized['special_removed']} fifo(s)/socket(s)")
    if sanitized.get("links_removed"):
        parts.append(f"removed {sanitized['links_removed']} link(s) pointing outside /submission")
    peak_mb = round(peak / (1 << 20), 1) if peak is not None else None
    wall = float(res.get("wall_s") or 0.0)
    footer = [
        f"status={status} exit_code={code} wall_s={wall:.2f} peak_mem_mb={peak_mb} "
        f"log_bytes={capture.total}",
        *parts,
    ]
    write_log(log_path, header, capture, footer)
    return RunResult(status, code, wall, peak_mb, capture.total, "; ".join(parts), enforcement)
