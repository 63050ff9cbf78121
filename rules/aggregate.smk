rule aggregate:
    """The tables of every completed run of the configured grid under <results>/tables/; a run
    narrowed by --config papers=/agents=/seeds= updates them (sabench.aggregate). When jobs fail,
    the workflow's onerror tabulates what completed (sabench.lifecycle)."""
    input:
        judgments=all_runs(run_file("judgments.parquet")),
        saus=expand(paper_file("saus.parquet"), paper=SETTINGS.papers),
        papers=expand(paper_file("paper.json"), paper=SETTINGS.papers),
        # tables that miss runs of the grid are rebuilt, after redoing those runs
        incomplete=[INCOMPLETE_MARKER] if Path(INCOMPLETE_MARKER).is_file() else [],
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
        # the runs as blocks (sabench.grid.pack_runs): 100k runs fit one argument
        grid=json.dumps(
            {
                "runs": pack_runs(SETTINGS.grid_runs),
                "papers": SETTINGS.grid_papers,
                "judges": SETTINGS.judges,
                "execute": EXECUTE,
            }
        ),
    shell:
        f"{PYTHON} -m sabench.aggregate --results {shlex.quote(R)}"
        f" --grid {{params.grid:q}}{RUNS_NOW_ARG} > {{log:q}} 2>&1"


rule report:
    """The drift explorer (sabench.report_site): index.html, a page per agent, paper and run under
    site/ (code, logs, transcripts read from the run folders by path) and the figures; the
    summary and the figures also go into `snakemake --report`."""
    input:
        [result(f"tables/{table}.parquet") for table in TABLES] + DRIFT_TABLES,
    output:
        figures=[
            report(
                result(f"report/{name}.png"),
                caption="../report/figures.rst",
                category="Scores",
            )
            for name in REPORT_FIGURES
        ],
        index=report(
            result("report/index.html"),
            caption="../report/explorer.rst",
            category="Explorer",
        ),
        site=directory(result("report/site")),
    log:
        result("logs/report.log"),
    localrule: True
    conda:
        "../envs/sabench.yaml"
    threads: 4
    resources:
        mem_mb=2000,
        disk_mb=1000,
        runtime=10,
    shell:
        f"{PYTHON} -m sabench.report --tables {{input:q}} --out {shlex.quote(result('report'))}"
        f" --results {shlex.quote(R)} --config-hash {CONFIG_HASH} --workers {{threads}}"
        f" --agents {shlex.quote(SETTINGS.config['agents_file'] or '')}"
        " > {log:q} 2>&1"


if SETTINGS.drift_runs:

    rule drift:
        """Drift injection: mutants of the submissions with one known drift each, re-judged."""
        input:
            submissions=[
                run_file("submission").format(agent=a, paper=p, seed=s)
                for a, p, s in SETTINGS.drift_runs
            ],
            saus=sorted(
                {
                    paper_file("saus.parquet").format(paper=p)
                    for _, p, _ in SETTINGS.drift_runs
                }
            ),
            reference=(
                [
                    run_file("judge/reference.parquet").format(
                        agent=a, paper=p, seed=s
                    )
                    for a, p, s in SETTINGS.drift_runs
                ]
                if "reference" in SETTINGS.judges
                else []
            ),
        output:
            result("tables/drift_injection.parquet"),
        log:
            result("logs/drift.log"),
        conda:
            "../envs/sabench.yaml"
        resources:
            mem_mb=4000,
            disk_mb=2000,
            runtime=120,
        params:
            runs=" ".join(f"{a}/{p}/{s}" for a, p, s in SETTINGS.drift_runs),
            judges=",".join(DRIFT["judges"]),
            settings=lambda wildcards: json.dumps(
                {
                    j: SETTINGS.config["judge_settings"].get(j, {})
                    for j in DRIFT["judges"]
                },
                sort_keys=True,
            ),
            fingerprints=[
                judge_fingerprint(j, SETTINGS.config["judge_settings"].get(j, {}))
                for j in DRIFT["judges"]
            ],
            code=DRIFT_CODE,
        shell:
            f"{PYTHON} -m sabench.drift --results {shlex.quote(R)} --runs {{params.runs}}"
            f" --judges {{params.judges:q}} --settings {{params.settings:q}}"
            f" --max-per-run {DRIFT['max_per_run']}"
            f" --min-reference-score {DRIFT['min_reference_score']}"
            f" --out {{output:q}} > {{log:q}} 2>&1"
