"""``python -m sabench.sandbox.docker reap``: remove the containers and output mounts of dead
sabench jobs (for a Slurm epilog or by hand); ``check``: whether the engine answers."""

from __future__ import annotations

import json
import sys
from typing import Any

from sabench.sandbox import get_backend
from sabench.steps import ArgumentParser


def main(argv: list[str] | None = None) -> int:
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
