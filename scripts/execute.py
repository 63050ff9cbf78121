"""Snakemake script of rule execute; standalone: python -m sabench.execute SUBMISSION --agent-view DIR --out DIR."""

import sys
from pathlib import Path

from sabench import execute
from sabench.steps import step

if "snakemake" not in globals():
    sys.exit(execute.main())

sm = snakemake  # noqa: F821
with step(None, "execute") as log:
    settings = dict(sm.params.runtime)
    env = Path(settings.get("python_env") or ".venv-sandbox")
    settings["python_env"] = str(env if env.is_absolute() else Path(sm.params.repo) / env)
    record = execute.execute_run(
        Path(sm.input.submission),
        Path(sm.output.executed),
        Path(sm.input.view),
        Path(sm.output.record),
        Path(sm.log[0]),
        settings,
    )
    log.info(
        "%s/%s/%s: %s in %.1fs (%s)",
        sm.wildcards.agent,
        sm.wildcards.paper,
        sm.wildcards.seed,
        record["status"],
        record["wall_s"] or 0.0,
        record["backend"],
    )
