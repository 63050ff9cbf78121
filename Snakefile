# sabench: semantic drift in LLM paper reproduction.
# papers -> SAUs -> agents reproduce -> sandboxed execution -> judges -> tables and report.
import sys

from snakemake.utils import min_version

from sabench.errors import UserError
from sabench.grid import check_yaml_syntax

min_version("9.0")

try:
    check_yaml_syntax("config/config.yaml")
except UserError as exc:
    sys.exit(f"error: {exc}")


configfile: "config/config.yaml"


report: "report/workflow.rst"


include: "rules/common.smk"
include: "rules/ingest.smk"
include: "rules/saus.smk"
include: "rules/canary.smk"
include: "rules/reproduce.smk"
include: "rules/execute.smk"
include: "rules/judge.smk"
include: "rules/aggregate.smk"


rule all:
    default_target: True
    input:
        all_targets(),
