"""Snakemake script of rule aggregate; standalone: python -m sabench.aggregate --results DIR."""

import sys
from pathlib import Path

from sabench import aggregate
from sabench.io import write_text
from sabench.steps import step

if "snakemake" not in globals():
    sys.exit(aggregate.main())

sm = snakemake  # noqa: F821
with step(sm.log[0], "aggregate") as log:
    results = Path(sm.output.summary).parents[1]
    tables = aggregate.aggregate(
        results, [tuple(r) for r in sm.params.runs], list(sm.params.papers), results / "tables"
    )
    summary = aggregate.summary_markdown(tables)
    write_text(sm.output.summary, summary)
    log.info("%d tables in %s\n%s", len(tables), results / "tables", summary)
