rule saus:
    """Import the paper's curated SAUs and check each against the paper text."""
    input:
        text=paper_file("paper.md"),
        sources=sau_inputs,
    output:
        paper_file("saus.parquet"),
    log:
        result("logs/saus/{paper}.log"),
    localrule: True
    conda:
        "../envs/sabench.yaml"
    resources:
        mem_mb=1000,
        disk_mb=1000,
        runtime=10,
    params:
        paper_dir=str(PAPERS_DIR / "{paper}"),
    script:
        "../scripts/saus.py"
