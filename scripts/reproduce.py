"""Snakemake script of rule reproduce; standalone: python -m sabench.agents AGENT PAPER --out DIR."""

import sys
from pathlib import Path

from sabench import agents
from sabench.steps import step

if "snakemake" not in globals():
    sys.exit(agents.main())

sm = snakemake  # noqa: F821
with step(sm.log[0], "reproduce") as log:
    record = agents.run_agent(
        sm.wildcards.agent,
        sm.params.agent,
        sm.wildcards.paper,
        sm.wildcards.seed,
        Path(sm.output.submission),
        Path(sm.output.record),
        Path(sm.params.repo),
    )
    log.info("%s: %s, %d files", sm.wildcards.agent, record["status"], record["n_files"])
    if record["error"]:
        log.warning("%s", record["error"])
