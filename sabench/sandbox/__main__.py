"""Which sandbox ``runtime.backend`` picks on this host, or one line saying why none works.

``make demo`` runs this first, so that a host without a working backend (a login node without
bubblewrap) learns what is missing before any job starts, not from every execute job.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from sabench.errors import UserError
from sabench.sandbox import backend_label, get_backend


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sabench.sandbox", description=__doc__)
    parser.add_argument(
        "backend",
        nargs="*",
        help="backends in order of preference (default: runtime.backend of --config, else auto)",
    )
    parser.add_argument("--config", type=Path, help="a config file whose runtime.backend to check")
    args = parser.parse_args(argv)
    name: str | list[str] = args.backend[0] if len(args.backend) == 1 else args.backend or "auto"
    if not args.backend and args.config:
        config = yaml.safe_load(args.config.read_text(encoding="utf-8")) or {}
        name = (config.get("runtime") or {}).get("backend", "auto")
    try:
        backend = get_backend(name)
        # a list or auto was checked while picking; a single name is loaded as it is
        ok, why = backend.available_when_named() if isinstance(name, str) else (True, "")
        if not ok:
            raise UserError(None, "runtime.backend", f"{name}: {why}")
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"sandbox: runtime.backend {backend_label(name)} -> {backend.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
