rule reproduce:
    """The agent reproduces the paper from its view into submission/: one job per run, with
    the agent's GPUs (rule replay replays a paper's runs at once where it can).

    Inputs are ancient and the agent's settings are a params fingerprint, so editing a script or
    touching a paper never reruns an agent; changing the agent's settings does.
    """
    input:
        view=ancient(paper_file("agent_view")),
    output:
        submission=directory(run_file("submission")),
        record=run_file("agent.json"),
    log:
        run_file("agent.log"),
    group:
        run_group(AGENT_GPUS)
    conda:
        "../envs/sabench.yaml"
    resources:
        **cluster_resources(
            gpu_model=by_wildcard("agent", AGENT_GPU_MODEL),
            cpus_per_task=by_wildcard("agent", AGENT_CPUS),
            runtime=by_wildcard("agent", AGENT_RUNTIME_MIN),
            disk_mb=10000,
        ),
        **gpu_resource(AGENT_GPUS),
        mem_mb=by_wildcard("agent", AGENT_MEM_MB),
    params:
        spec=by_wildcard("agent", AGENT_SPECS),
    # the run folder names the agent, the paper, the seed and the agent view (sabench.agents)
    shell:
        f'{PYTHON} -m sabench.agents --out "$(dirname {{output.record:q}})"'
        f" --spec {{params.spec:q}} --repo {REPO} --runtime {TOOL_RUNTIME} > {{log:q}} 2>&1"


if REPLAYED_IN_BATCHES:

    ruleorder: replay > reproduce

    rule replay:
        """Replay and null agents without GPUs copy their submissions of one paper in one job
        (sabench.agents.batch) where nothing costly follows per run (common.smk); each run keeps
        its folder, agent.json and agent.log. A change to one agent's settings replays every
        paper (seconds) and re-judges only that agent's runs (the judges' cache)."""
        output:
            submissions=[
                directory(p) for p in paper_runs("submission", REPLAYED_IN_BATCHES)
            ],
            records=paper_runs("agent.json", REPLAYED_IN_BATCHES),
        log:
            result("logs/replay/{paper}.log"),
        localrule: True
        conda:
            "../envs/sabench.yaml"
        resources:
            mem_mb=1000,
            disk_mb=10000,
            runtime=30,
        params:
            # a function: no wildcards are filled into the agents' path templates
            specs=of_wildcards(lambda wildcards: REPLAYED_SPECS),
        shell:
            f"{PYTHON} -m sabench.agents.batch {{output.records:q}} --specs {{params.specs:q}}"
            f" --repo {REPO} > {{log:q}} 2>&1"
