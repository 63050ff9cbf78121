"""Snakemake script of rule ingest; standalone: python -m sabench.ingest PAPER_DIR --out DIR."""

import sys
from pathlib import Path

from sabench import ingest
from sabench.steps import step

if "snakemake" not in globals():
    sys.exit(ingest.main())

with step(snakemake.log[0], "ingest") as log:  # noqa: F821
    out = snakemake.output  # noqa: F821
    meta = ingest.ingest_paper(
        Path(snakemake.params.paper_dir),  # noqa: F821
        Path(out.text),
        Path(out.meta),
        Path(out.view),
    )
    log.info(
        "%s: %r, %d chars, %d sections",
        meta["paper"],
        meta["title"],
        meta["n_chars"],
        len(meta["sections"]),
    )
