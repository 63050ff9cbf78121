"""Snakemake script of rule aggregate; standalone: python -m sabench.aggregate --results DIR."""

import sys
from pathlib import Path

from sabench import aggregate
from sabench.steps import step

if "snakemake" not in globals():
    sys.exit(aggregate.main())

sm = snakemake  # noqa: F821
with step(sm.log[0], "aggregate") as log:
    results = Path(sm.output.summary).parents[1]
    summary = aggregate.write_tables(
        results,
        [tuple(r) for r in sm.params.runs],
        list(sm.params.papers),
        judges=list(sm.params.judges),
        execute=bool(sm.params.execute),
    )
    log.info("tables in %s\n%s", results / "tables", summary)
