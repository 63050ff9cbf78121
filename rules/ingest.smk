rule ingest:
    """Paper text (markdown or PDF) -> normalised paper.md, paper.json and the agent's view."""
    input:
        paper_inputs,
    output:
        text=paper_file("paper.md"),
        meta=paper_file("paper.json"),
        view=directory(paper_file("agent_view")),
    log:
        result("logs/ingest/{paper}.log"),
    localrule: True
    conda:
        "../envs/sabench.yaml"
    resources:
        mem_mb=1000,
        disk_mb=1000,
        runtime=10,
    params:
        paper_dir=str(PAPERS_DIR / "{paper}"),
    shell:
        f"{PYTHON} -m sabench.ingest {{params.paper_dir:q}}"
        ' --out "$(dirname {output.text:q})" > {log:q} 2>&1'
