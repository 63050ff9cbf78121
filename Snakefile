# sabench: semantic drift in LLM paper reproduction.
# papers -> SAUs -> agents reproduce -> sandboxed execution -> judges -> tables and report.


configfile: "config/config.yaml"


include: "rules/common.smk"
include: "rules/ingest.smk"
include: "rules/saus.smk"
include: "rules/reproduce.smk"
include: "rules/execute.smk"
include: "rules/judge.smk"
include: "rules/aggregate.smk"


rule all:
    default_target: True
    input:
        all_targets(),
