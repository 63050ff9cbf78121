"""The judgments rule: the per-judge tables of one run as its ``judgments.parquet``."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from sabench.contracts import JUDGMENT_COLUMNS
from sabench.io import write_parquet
from sabench.steps import ArgumentParser, command


def merge_judgments(inputs: Iterable[str | Path], out: str | Path) -> int:
    """Concatenate the per-judge tables of one run; the number of rows."""
    import pandas as pd

    frames = [pd.read_parquet(p) for p in inputs]
    frame = (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(columns=list(JUDGMENT_COLUMNS))
    )
    write_parquet(out, frame)
    return len(frame)


@command
def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(description="Merge the per-judge tables of one run.")
    parser.add_argument("inputs", type=Path, nargs="*", help="the run's judge/<judge>.parquet")
    parser.add_argument("--out", type=Path, required=True, help="the run's judgments.parquet")
    args = parser.parse_args(argv)
    n = merge_judgments(args.inputs, args.out)
    print(f"{n} judgments from {len(args.inputs)} judge file(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
