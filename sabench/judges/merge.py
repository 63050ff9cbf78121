"""The judgments rule: the per-judge tables of each run of one paper as the run's
``judgments.parquet`` (one job per paper, see sabench.judges.batch)."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from sabench.contracts import JUDGMENT_COLUMNS
from sabench.io import arrow_table, spare_pandas, write_table
from sabench.steps import ArgumentParser, command


def merge_judgments(inputs: Iterable[str | Path], out: str | Path) -> int:
    """Concatenate the per-judge tables of one run; the number of rows. Arrow alone, no pandas
    (a batch merges every run of a paper): a column all null in one judge's table takes the
    others' type."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = []
    for path in inputs:
        with pq.ParquetFile(path) as file:
            tables.append(file.read())
    if tables:
        table = pa.concat_tables(tables, promote_options="permissive")
        table = table.replace_schema_metadata(None)
    else:
        table = arrow_table([], JUDGMENT_COLUMNS)
    write_table(out, table)
    return table.num_rows


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
    spare_pandas()
    for out in args.outputs:
        inputs = [out.parent / "judge" / f"{slug}.parquet" for slug in args.judges]
        n = merge_judgments(inputs, out)
        print(f"{out}: {n} judgments from {len(inputs)} judge file(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
