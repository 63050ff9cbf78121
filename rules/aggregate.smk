rule aggregate:
    """Every table of the grid under <results>/tables/."""
    input:
        judgments=all_runs(run_file("judgments.parquet")),
        saus=expand(paper_file("saus.parquet"), paper=SETTINGS.papers),
        papers=expand(paper_file("paper.json"), paper=SETTINGS.papers),
    output:
        [result(f"tables/{table}.parquet") for table in TABLES],
        summary=result("tables/summary.md"),
    log:
        result("logs/aggregate.log"),
    localrule: True
    conda:
        "../envs/sabench.yaml"
    resources:
        mem_mb=4000,
        disk_mb=1000,
        runtime=30,
    params:
        runs=SETTINGS.runs,
        papers=SETTINGS.papers,
    script:
        "../scripts/aggregate.py"


rule report:
    """Plots and a small HTML page; the figures also go into `snakemake --report`."""
    input:
        [result(f"tables/{table}.parquet") for table in TABLES],
    output:
        figures=[
            report(
                result(f"report/{name}.png"),
                caption="../report/figures.rst",
                category="Scores",
            )
            for name in REPORT_FIGURES
        ],
        index=result("report/index.html"),
    log:
        result("logs/report.log"),
    localrule: True
    conda:
        "../envs/sabench.yaml"
    resources:
        mem_mb=1000,
        disk_mb=1000,
        runtime=10,
    script:
        "../scripts/report.py"
