rule execute:
    """Run reproduce.sh on a copy of the submission in a fresh sandbox; every outcome is a status."""
    input:
        submission=ancient(run_file("submission")),
        view=ancient(paper_file("agent_view")),
        # rewritten by every agent run: a new submission is executed again
        agent=run_file("agent.json"),
    output:
        executed=directory(run_file("executed")),
        record=run_file("execution.json"),
    log:
        run_file("execution.log"),
    group:
        run_group(EXECUTE_GPUS)
    conda:
        "../envs/sabench.yaml"
    resources:
        gpu=by_wildcard("agent", EXECUTE_GPUS),
        gpu_model=by_wildcard("agent", EXECUTE_GPU_MODEL),
        cpus_per_task=by_wildcard("agent", AGENT_CPUS),
        mem_mb=RUNTIME["mem_mb"] + 1024,
        disk_mb=RUNTIME["output_limit_mb"] + 1024,
        runtime=int(RUNTIME["time_limit_s"] // 60) + 5,
    params:
        settings=by_wildcard("agent", EXECUTE_SETTINGS),
    shell:
        f"{PYTHON} -m sabench.execute {{input.submission:q}} --agent-view {{input.view:q}}"
        f' --out "$(dirname {{output.record:q}})" --settings {{params.settings:q}}'
        f" --requirements {SANDBOX_REQUIREMENTS} --quiet"
