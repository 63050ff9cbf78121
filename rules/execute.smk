rule execute:
    """Run reproduce.sh on a copy of the submission in a fresh sandbox; every outcome is a status."""
    input:
        submission=ancient(RUN + "/submission"),
        view=ancient(R + "/papers/{paper}/agent_view"),
    output:
        executed=directory(RUN + "/executed"),
        record=RUN + "/execution.json",
    log:
        RUN + "/execution.log",
    resources:
        gpu=by_wildcard("agent", AGENT_GPUS),
        mem_mb=RUNTIME["mem_mb"] + 1024,
        disk_mb=RUNTIME["output_limit_mb"] + 1024,
        runtime=int(RUNTIME["time_limit_s"] // 60) + 5,
    params:
        settings=json.dumps(RUNTIME, sort_keys=True),
    shell:
        PYTHON + " -m sabench.execute {input.submission:q} --agent-view {input.view:q}"
        ' --out "$(dirname {output.record:q})" --settings {params.settings:q} --requirements '
        + SANDBOX_REQUIREMENTS
        + " --quiet"
