rule ingest:
    """Paper text (markdown or PDF) -> normalised paper.md, paper.json and the agent's view."""
    input:
        paper_inputs,
    output:
        text=R + "/papers/{paper}/paper.md",
        meta=R + "/papers/{paper}/paper.json",
        view=directory(R + "/papers/{paper}/agent_view"),
    log:
        R + "/logs/ingest/{paper}.log",
    localrule: True
    params:
        paper_dir=lambda w: str(PAPERS_DIR / w.paper),
    script:
        "../scripts/ingest.py"
