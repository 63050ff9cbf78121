rule judge:
    """One judge scores every SAU of one run; its fingerprint reruns exactly this judge."""
    input:
        submission=run_file("submission"),
        execution=run_file("execution.json") if EXECUTE else [],
        agent=run_file("agent.json"),
        saus=paper_file("saus.parquet"),
        # for judges that run code (exec): ancient, so that re-ingesting a paper reruns no judge
        executed=ancient(run_file("executed")) if EXECUTE else [],
        view=ancient(paper_file("agent_view")),
        # the verdict file of the run, for judges that read one: a new version rejudges the run
        verdicts=judge_verdicts,
    output:
        run_file("judge/{judge}.parquet"),
    log:
        run_file("logs/judge-{judge}.log"),
    conda:
        "../envs/sabench.yaml"
    resources:
        cpus_per_task=1,
        mem_mb=2000,
        disk_mb=1000,
        runtime=30,
    params:
        judge=by_wildcard("judge", JUDGE_PARAMS),
    shell:
        f'{PYTHON} -m sabench.judges.run "$(dirname {{input.agent:q}})" --saus {{input.saus:q}}'
        f" --out {{output:q}} --judge {{params.judge[name]:q}}"
        f" --fingerprint {{params.judge[fingerprint]}}"
        f" --settings {{params.judge[settings_json]:q}} --agent-view {{input.view:q}}"
        f" --runtime {{params.judge[runtime_json]:q}} --operational {JUDGE_OPERATIONAL_ARG}"
        " --quiet > {log:q} 2>&1"


rule judgments:
    """All judges' rows of one run in one table."""
    input:
        RUN_JUDGMENTS,
    output:
        run_file("judgments.parquet"),
    log:
        run_file("logs/judgments.log"),
    localrule: True
    conda:
        "../envs/sabench.yaml"
    shell:
        f"{PYTHON} -m sabench.judges.merge --out {{output:q}} {{input:q}} > {{log:q}} 2>&1"
