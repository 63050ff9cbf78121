rule reproduce:
    """The agent reproduces the paper from its view into submission/ (GPU job for model agents).

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
    conda:
        "../envs/sabench.yaml"
    resources:
        gpu=by_wildcard("agent", AGENT_GPUS),
        gpu_model=by_wildcard("agent", AGENT_GPU_MODEL),
        cpus_per_task=by_wildcard("agent", AGENT_CPUS),
        mem_mb=by_wildcard("agent", AGENT_MEM_MB),
        disk_mb=10000,
        runtime=by_wildcard("agent", AGENT_RUNTIME_MIN),
    params:
        spec=by_wildcard("agent", AGENT_SPECS),
    shell:
        f"{PYTHON} -m sabench.agents {{wildcards.agent}} {{wildcards.paper}}"
        f" --seed {{wildcards.seed}} --spec {{params.spec:q}} --repo {REPO}"
        f" --agent-view {{input.view:q}} --runtime {TOOL_RUNTIME}"
        f' --out "$(dirname {{output.record:q}})" > {{log:q}} 2>&1'
