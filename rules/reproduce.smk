rule reproduce:
    """The agent reproduces the paper from its view into submission/ (GPU job for model agents).

    Inputs are ancient and the agent's settings are a params fingerprint, so editing a script or
    touching a paper never reruns an agent; changing the agent's settings does.
    """
    input:
        view=ancient(R + "/papers/{paper}/agent_view"),
    output:
        submission=directory(RUN + "/submission"),
        record=RUN + "/agent.json",
    log:
        RUN + "/agent.log",
    resources:
        gpu=agent_gpus,
    params:
        agent=agent_settings,
        fingerprint=lambda w: agent_fingerprint(w.agent, SETTINGS.agents[w.agent]),
        repo=workflow.basedir,
    script:
        "../scripts/reproduce.py"
