rule aggregate:
    """Every table of the grid under <results>/tables/."""
    input:
        judgments=all_runs(RUN + "/judgments.parquet"),
        saus=expand(R + "/papers/{paper}/saus.parquet", paper=SETTINGS.papers),
        papers=expand(R + "/papers/{paper}/paper.json", paper=SETTINGS.papers),
    output:
        [R + f"/tables/{table}.parquet" for table in TABLES],
        summary=R + "/tables/summary.md",
    log:
        R + "/logs/aggregate.log",
    localrule: True
    resources:
        mem_mb=4000,
        disk_mb=1000,
        runtime=30,
    params:
        results=R,
        runs=SETTINGS.runs,
        papers=SETTINGS.papers,
    script:
        "../scripts/aggregate.py"


rule report:
    """Plots and a small HTML page; the figures also go into `snakemake --report`."""
    input:
        [R + f"/tables/{table}.parquet" for table in TABLES],
    output:
        figures=[
            report(
                R + f"/report/{name}.png",
                caption="../report/figures.rst",
                category="Scores",
            )
            for name in REPORT_FIGURES
        ],
        index=R + "/report/index.html",
    log:
        R + "/logs/report.log",
    localrule: True
    resources:
        mem_mb=1000,
        disk_mb=1000,
        runtime=10,
    params:
        tables=R + "/tables",
    script:
        "../scripts/report.py"
