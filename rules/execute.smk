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
        gpu=agent_gpus,
        runtime=lambda w: int(SETTINGS.config["runtime"]["time_limit_s"] // 60) + 5,
    params:
        runtime=SETTINGS.config["runtime"],
        repo=workflow.basedir,
    script:
        "../scripts/execute.py"
