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
    params:
        paper_dir=lambda w: str(PAPERS_DIR / w.paper),
    script:
        "../scripts/saus.py"
