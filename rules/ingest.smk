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
    resources:
        mem_mb=1000,
        disk_mb=1000,
        runtime=10,
    params:
        paper_dir=str(PAPERS_DIR / "{paper}"),
    script:
        "../scripts/ingest.py"
