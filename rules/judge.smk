rule judge:
    """One judge scores every SAU of one run; its fingerprint reruns exactly this judge."""
    input:
        submission=RUN + "/submission",
        execution=RUN + "/execution.json",
        agent=RUN + "/agent.json",
        saus=R + "/papers/{paper}/saus.parquet",
    output:
        RUN + "/judge/{judge}.parquet",
    log:
        RUN + "/logs/judge-{judge}.log",
    resources:
        mem_mb=2000,
        disk_mb=1000,
        runtime=30,
    params:
        judge=by_wildcard("judge", JUDGE_PARAMS),
    shell:
        PYTHON
        + ' -m sabench.judging "$(dirname {input.agent:q})" --saus {input.saus:q} --out {output:q}'
        " --judge {params.judge[name]:q} --fingerprint {params.judge[fingerprint]}"
        " --settings {params.judge[settings_json]:q} --quiet > {log:q} 2>&1"


rule judgments:
    """All judges' rows of one run in one table (in-process: no interpreter start per run)."""
    input:
        RUN_JUDGMENTS,
    output:
        RUN + "/judgments.parquet",
    localrule: True
    run:
        from sabench.judging import merge_judgments

        merge_judgments([Path(p) for p in input], Path(output[0]))
