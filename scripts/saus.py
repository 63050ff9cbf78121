"""Snakemake script of rule saus; standalone: python -m sabench.saus PAPER_DIR --text paper.md --out F."""

import sys
from pathlib import Path

from sabench import saus
from sabench.steps import step

if "snakemake" not in globals():
    sys.exit(saus.main())

with step(snakemake.log[0], "saus") as log:  # noqa: F821
    rows = saus.build_saus(
        Path(snakemake.params.paper_dir),  # noqa: F821
        Path(snakemake.input.text),  # noqa: F821
        Path(snakemake.output[0]),  # noqa: F821
        [Path(p) for p in snakemake.input.sources],  # noqa: F821
    )
    ungrounded = [r["sau_id"] for r in rows if r["grounded"] is False]
    log.info("%d SAUs, %d not grounded in the paper text", len(rows), len(ungrounded))
    for sau_id in ungrounded:
        log.warning("SAU %s: claim or quote not found in the paper text", sau_id)
