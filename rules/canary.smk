# Canary twins (canary: true): each paper whose SAUs carry expected results gets a twin,
# <paper>--canary, with its stated results moved out of reach of its method (sabench.canary).
# The twin's folder holds what ingest and saus write for a paper, so every later step takes it
# as any other paper.
import re

from sabench.twins import CANARY_SUFFIX, is_twin, original_of

CANARY_ORIGINALS = [original_of(p) for p in SETTINGS.papers if is_twin(p)]

if CANARY_ORIGINALS:

    ruleorder: canary > ingest
    ruleorder: canary > saus

    rule canary:
        """The twin of an ingested paper: its stated results moved by a seeded rule, in the
        text the agent reads and in the SAUs' expected values; the rest identical.
        """
        input:
            text=paper_file("paper.md"),
            meta=paper_file("paper.json"),
            view=paper_file("agent_view"),
            saus=paper_file("saus.parquet"),
        output:
            text=result(f"papers/{{paper}}{CANARY_SUFFIX}/paper.md"),
            meta=result(f"papers/{{paper}}{CANARY_SUFFIX}/paper.json"),
            view=directory(result(f"papers/{{paper}}{CANARY_SUFFIX}/agent_view")),
            saus=result(f"papers/{{paper}}{CANARY_SUFFIX}/saus.parquet"),
            spec=result(f"papers/{{paper}}{CANARY_SUFFIX}/canary.json"),
        log:
            result(f"logs/canary/{{paper}}{CANARY_SUFFIX}.log"),
        wildcard_constraints:
            paper="|".join(re.escape(p) for p in CANARY_ORIGINALS),
        localrule: True
        conda:
            "../envs/sabench.yaml"
        resources:
            mem_mb=1000,
            disk_mb=1000,
            runtime=10,
        params:
            seed=SETTINGS.config["canary_seed"],
            metrics_files=RUNTIME["metrics_files"],
        shell:
            f'{PYTHON} -m sabench.canary "$(dirname {{input.text:q}})"'
            f' --out "$(dirname {{output.text:q}})" --seed {{params.seed}}'
            " --metrics-files {params.metrics_files:q} > {log:q} 2>&1"
