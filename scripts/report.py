"""Snakemake script of rule report; standalone: python -m sabench.report --tables DIR --out DIR."""

import hashlib
import json
import sys
from pathlib import Path

from sabench import report
from sabench.steps import step

if "snakemake" not in globals():
    sys.exit(report.main())

sm = snakemake  # noqa: F821
with step(sm.log[0], "report") as log:
    import pandas as pd

    tables = {Path(p).stem: pd.read_parquet(p) for p in sm.input}
    # the run pages read the run folders by path: the tables folder's parent is the results root
    results = Path(sm.input[0]).parent.parent
    # provenance, not a param: a new endpoint or concurrency must rerun nothing, the report included
    config_hash = hashlib.sha256(
        json.dumps(dict(sm.config), sort_keys=True, default=str).encode()
    ).hexdigest()[:16]
    written = report.make_report(tables, Path(sm.output.index).parent, results, config_hash)
    log.info("report: %s", ", ".join(str(p) for p in written))
