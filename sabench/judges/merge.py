"""The judgments rule: the per-judge tables of each run of one paper as the run's
``judgments.parquet`` (one job per paper, see sabench.judges.batch)."""

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
    parser = ArgumentParser(description="Merge the per-judge tables of runs.")
    parser.add_argument(
        "outputs",
        type=Path,
        nargs="+",
        help="the runs' judgments.parquet to write: results/runs/<agent>/<paper>/<seed>/",
    )
    parser.add_argument(
        "--judges", nargs="*", default=[], help="judge file names: <run>/judge/<name>.parquet"
    )
    args = parser.parse_args(argv)
    for out in args.outputs:
        inputs = [out.parent / "judge" / f"{slug}.parquet" for slug in args.judges]
        n = merge_judgments(inputs, out)
        print(f"{out}: {n} judgments from {len(inputs)} judge file(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
