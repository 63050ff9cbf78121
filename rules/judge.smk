rule judge:
    """One judge scores every SAU of one run; its fingerprint reruns exactly this judge (rule
    judge_batch judges a paper's runs at once where it can)."""
    input:
        submission=run_file("submission"),
        execution=run_file("execution.json") if EXECUTE else [],
        agent=run_file("agent.json"),
        saus=paper_file("saus.parquet"),
        # judges that run code (exec) also read executed/ (written with execution.json) and the
        # paper's agent_view/ (with paper.md, before saus.parquet): never rerun triggers, so
        # not inputs of their own (a large grid's dry run resolves every input of every job)
        # the verdict file of the run, for judges that read one: a new version rejudges the run
        verdicts=judge_verdicts if VERDICT_JUDGES else [],
    output:
        run_file("judge/{judge}.parquet"),
    log:
        run_file("logs/judge-{judge}.log"),
    group:
        cluster_group(RUN_GROUP)
    conda:
        "../envs/sabench.yaml"
    resources:
        # as the CPU-only reproduce and execute jobs it is grouped with (a group's strings agree)
        **cluster_resources(gpu_model="", cpus_per_task=1, runtime=30, disk_mb=1000),
        mem_mb=2000,
    params:
        judge=by_wildcard("judge", JUDGE_PARAMS),
    # the run folder: the SAUs, the output and the agent view are where it expects them (the
    # shorter the command, the faster the dry run of a large grid prints it)
    shell:
        f'{PYTHON} -m sabench.judges.run "$(dirname {{input.agent:q}})"'
        f" --spec {{params.judge:q}} --operational {JUDGE_OPERATIONAL_ARG}"
        " --quiet > {log:q} 2>&1"


if JUDGED_IN_BATCHES:

    ruleorder: judge_batch > judge

    rule judge_batch:
        """The judges that call no model and run no code score the runs of replay and null
        agents of one paper in one job, when nothing is executed (sabench.judges.batch, common.smk):
        each run keeps its judge/<judge>.parquet and log, and a cache per run re-judges only the
        runs whose inputs changed."""
        input:
            # written with each run's submission/, by the same job: the submissions' stand-in
            # (what the scheduler checks while a batch waits is kept short)
            agents=paper_runs("agent.json", BATCHED_AGENTS),
            saus=paper_file("saus.parquet"),
        output:
            [
                f
                for slug in BATCHED_JUDGES
                for f in paper_runs(f"judge/{slug}.parquet", BATCHED_AGENTS)
            ],
            # every judgment of the paper's runs is made here: so is the merge
            paper_runs("judgments.parquet") if MERGED_IN_BATCHES else [],
        log:
            result("logs/judge/{paper}.log"),
        # a paper's runs are judged as soon as they can be: the first papers' tables are complete
        # early, and fewer jobs wait at once
        priority: 1
        group:
            cluster_group(PAPER_GROUP)
        conda:
            "../envs/sabench.yaml"
        resources:
            **cluster_resources(cpus_per_task=1, runtime=30),
            mem_mb=2000,
            disk_mb=1000,
        params:
            # a function: no wildcards are filled into the settings' templates
            judges=of_wildcards(lambda wildcards: BATCH_JUDGE_PARAMS),
            # the verdict files the batch reads: a new version rejudges the paper's batch, whose
            # cache then rejudges that run alone
            verdicts=batch_verdicts,
        shell:
            f"{PYTHON} -m sabench.judges.batch {{input.agents:q}} --saus {{input.saus:q}}"
            " --judges {params.judges:q}"
            f"{' --merge' if MERGED_IN_BATCHES else ''} > {{log:q}} 2>&1"


if SCOPED_AGENTS:

    rule judgments_run:
        """All judges' rows of one run of an agent scoped to some papers (its `papers`): its
        papers' runs differ from the others', so they merge alone (sabench.judges.merge).
        """
        input:
            [run_file(f"judge/{slug}.parquet") for slug in JUDGE_BY_SLUG],
        output:
            run_file("judgments.parquet"),
        log:
            run_file("logs/judgments.log"),
        wildcard_constraints:
            agent="|".join(re.escape(a) for a in SCOPED_AGENTS),
        localrule: True
        conda:
            "../envs/sabench.yaml"
        shell:
            f"{PYTHON} -m sabench.judges.merge {{output:q}} --judges {' '.join(map(shlex.quote, JUDGE_BY_SLUG))}"
            " > {log:q} 2>&1"


if not MERGED_IN_BATCHES and PAPER_RUNS:

    rule judgments:
        """All judges' rows of each run of one paper, one table per run (sabench.judges.merge);
        judge_batch merges where it makes every judgment."""
        input:
            [f for slug in JUDGE_BY_SLUG for f in paper_runs(f"judge/{slug}.parquet")],
        output:
            paper_runs("judgments.parquet"),
        log:
            result("logs/judgments/{paper}.log"),
        localrule: True
        conda:
            "../envs/sabench.yaml"
        shell:
            f"{PYTHON} -m sabench.judges.merge {{output:q}} --judges {' '.join(map(shlex.quote, JUDGE_BY_SLUG))}"
            " > {log:q} 2>&1"
