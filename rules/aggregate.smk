rule aggregate:
    """Every table of the grid under <results>/tables/."""
    input:
        judgments=all_runs(RUN + "/judgments.parquet"),
        agents=all_runs(RUN + "/agent.json"),
        executions=all_runs(RUN + "/execution.json"),
        saus=expand(R + "/papers/{paper}/saus.parquet", paper=SETTINGS.papers),
        papers=expand(R + "/papers/{paper}/paper.json", paper=SETTINGS.papers),
    output:
        [R + f"/tables/{table}.parquet" for table in TABLES],
        summary=R + "/tables/summary.md",
    log:
        R + "/logs/aggregate.log",
    localrule: True
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
    params:
        tables=R + "/tables",
    script:
        "../scripts/report.py"
