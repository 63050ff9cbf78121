"""Per-run cost of each sandbox backend: start + run `true` + teardown, median of N (default 20).

For docker (and podman) the same loop also times the bare engine, interleaved with ours so that a
busy machine slows both alike: ``docker run --rm --network none IMAGE true`` (the CLI) and the
SDK's ``containers.run(remove=True)``. The figure that matters is our overhead over the bare CLI
run (ISSUE: < 20%); ours includes everything a real execution pays: the output filesystem (ext4
on a loop device), copying in and out, the watchdog, the log, the cgroup readings.

    .venv/bin/python benchmarks/sandbox_overhead.py [--n 20] [--backends docker,podman,bwrap]

Engines: DOCKER_HOST / CONTAINER_HOST (start them with tests/containers/start_*.sh).
Prints one line per backend and baseline, then ``docker overhead: +X% (limit 20%)``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sabench.sandbox import SandboxSpec, get_backend  # noqa: E402
from sabench.sandbox.images import resolve_image  # noqa: E402


def timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def summary(name: str, samples: list[float]) -> dict[str, Any]:
    q = statistics.quantiles(samples, n=10) if len(samples) > 1 else samples * 9
    return {
        "name": name,
        "n": len(samples),
        "median_s": round(statistics.median(samples), 4),
        "p10_s": round(q[0], 4),
        "p90_s": round(q[-1], 4),
    }


def engine_loop(backend_name: str, n: int, work: Path) -> list[dict[str, Any]]:
    """Ours vs the bare engine, interleaved, for docker or podman."""
    backend = get_backend(backend_name)
    ok, why = backend.available()
    if not ok:
        return [{"name": backend_name, "skipped": why}]
    client = backend.client()  # type: ignore[attr-defined]
    image = resolve_image(client, None).id
    url = backend.engine_url()  # type: ignore[attr-defined]
    spec = SandboxSpec(command=["true"], workdir=work)
    cli = shutil.which("docker")
    env = {**os.environ, "DOCKER_HOST": url}
    cli_argv = [cli or "docker", "run", "--rm", "--network", "none", image, "true"]

    def ours() -> None:
        result = backend.run(spec, work.parent / f"{backend_name}.log")
        assert result.status == "ok", result

    def bare_cli() -> None:
        subprocess.run(cli_argv, check=True, env=env, capture_output=True)

    def bare_sdk() -> None:
        client.containers.run(image, ["true"], remove=True, network_mode="none")

    loops: list[tuple[str, Callable[[], None]]] = [
        (backend_name, ours),
        (f"{backend_name} SDK bare", bare_sdk),
    ]
    if cli:
        loops.append((f"{backend_name} CLI bare (docker run --rm)", bare_cli))
    for _, fn in loops:  # warm up: image lookup, client, page cache
        fn()
    samples: dict[str, list[float]] = {name: [] for name, _ in loops}
    for _ in range(n):
        for name, fn in loops:
            samples[name].append(timed(fn))
    return [summary(name, s) for name, s in samples.items()]


def plain_loop(backend_name: str, n: int, work: Path, env: Path | None) -> list[dict[str, Any]]:
    backend = get_backend(backend_name)
    ok, why = backend.available()
    if not ok:
        return [{"name": backend_name, "skipped": why}]
    spec = SandboxSpec(command=["true"], workdir=work, python_env=env)

    def ours() -> None:
        result = backend.run(spec, work.parent / f"{backend_name}.log")
        assert result.status == "ok", result

    ours()
    return [summary(backend_name, [timed(ours) for _ in range(n)])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--backends", default="docker,podman,bwrap,apptainer")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    sandbox_env = REPO / ".venv-sandbox"
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="sabench-overhead-") as tmp:
        for name in args.backends.split(","):
            work = Path(tmp) / name / "work"
            work.mkdir(parents=True)
            if name in ("docker", "podman"):
                rows += engine_loop(name, args.n, work)
            else:
                rows += plain_loop(
                    name, args.n, work, sandbox_env if sandbox_env.is_dir() else None
                )
    for row in rows:
        if "skipped" in row:
            print(f"{row['name']:<40} skipped: {row['skipped']}")
        else:
            print(
                f"{row['name']:<40} median {row['median_s'] * 1000:7.1f} ms  "
                f"(p10 {row['p10_s'] * 1000:.1f}, p90 {row['p90_s'] * 1000:.1f}, n={row['n']})"
            )
    by_name = {r["name"]: r for r in rows if "median_s" in r}
    status = 0
    for engine in ("docker", "podman"):
        ours = by_name.get(engine)
        bare = by_name.get(f"{engine} CLI bare (docker run --rm)") or by_name.get(
            f"{engine} SDK bare"
        )
        if ours and bare:
            overhead = ours["median_s"] / bare["median_s"] - 1
            print(f"{engine} overhead over {bare['name']}: {overhead:+.1%} (limit +20%)")
            if engine == "docker" and overhead >= 0.20:
                status = 1
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return status


if __name__ == "__main__":
    sys.exit(main())
