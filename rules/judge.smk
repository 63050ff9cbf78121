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
    params:
        judge=judge_params,
    script:
        "../scripts/judge.py"


rule judgments:
    """All judges' rows of one run in one table."""
    input:
        run_judgments,
    output:
        RUN + "/judgments.parquet",
    localrule: True
    script:
        "../scripts/judgments.py"
