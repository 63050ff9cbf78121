"""Snakemake script of rule judge; standalone: python -m sabench.judging RUN_DIR --saus F."""

import sys
from pathlib import Path

from sabench import judging
from sabench.steps import step

if "snakemake" not in globals():
    sys.exit(judging.main())

sm = snakemake  # noqa: F821
with step(sm.log[0], "judge") as log:
    params = sm.params.judge
    rows = judging.judge_run(
        params["name"],
        params["settings"],
        params["fingerprint"],
        Path(sm.input.submission),
        Path(sm.input.execution),
        Path(sm.input.agent),
        Path(sm.input.saus),
        Path(sm.output[0]),
    )
    verdicts = {}
    for row in rows:
        verdicts[row["verdict"]] = verdicts.get(row["verdict"], 0) + 1
    log.info("%s: %d SAUs judged: %s", params["name"], len(rows), verdicts)
