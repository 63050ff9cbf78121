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
    params:
        runtime=SETTINGS.config["runtime"],
        repo=workflow.basedir,
    resources:
        gpu=agent_gpus,
        runtime=lambda w: int(SETTINGS.config["runtime"]["time_limit_s"] // 60) + 5,
    script:
        "../scripts/execute.py"
