rule saus:
    """Import the paper's curated SAUs and check each against the paper text."""
    input:
        text=R + "/papers/{paper}/paper.md",
        sources=sau_inputs,
    output:
        R + "/papers/{paper}/saus.parquet",
    log:
        R + "/logs/saus/{paper}.log",
    localrule: True
    resources:
        mem_mb=1000,
        disk_mb=1000,
        runtime=10,
    params:
        paper_dir=str(PAPERS_DIR / "{paper}"),
    script:
        "../scripts/saus.py"
