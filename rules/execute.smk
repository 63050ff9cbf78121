rule execute:
    """Run reproduce.sh on a copy of the submission in a fresh sandbox; every outcome is a status."""
    input:
        submission=ancient(run_file("submission")),
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
        **cluster_resources(
            gpu_model=by_wildcard("agent", EXECUTE_GPU_MODEL),
            cpus_per_task=by_wildcard("agent", AGENT_CPUS),
            runtime=int(RUNTIME["time_limit_s"] // 60) + 5,
            disk_mb=RUNTIME["output_limit_mb"] + 1024,
        ),
        **gpu_resource(EXECUTE_GPUS),
        mem_mb=RUNTIME["mem_mb"] + 1024,
    params:
        settings=by_wildcard("agent", EXECUTE_SETTINGS),
    # the run folder holds the submission (sabench.execute); reproduce.sh is shown no paper
    shell:
        f'{PYTHON} -m sabench.execute --out "$(dirname {{output.record:q}})"'
        f" --settings {{params.settings:q}} --requirements {SANDBOX_REQUIREMENTS} --quiet"
