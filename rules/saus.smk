rule saus:
    """Import the paper's curated SAUs and check each against the paper text."""
    input:
        text=paper_file("paper.md"),
        sources=sau_inputs,
        checks=check_inputs,
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
    shell:
        f"{PYTHON} -m sabench.saus {{params.paper_dir:q}} --text {{input.text:q}}"
        " --out {output:q} --sources {input.sources:q} > {log:q} 2>&1"


# LLM extraction (saus_extraction.extractor) for the papers that have no SAU file.
import re

from sabench.grid import extraction_fingerprint
from sabench.twins import is_twin

EXTRACTION = dict(SETTINGS.config["saus_extraction"])
EXTRACT_PAPERS = (
    [p for p in SETTINGS.papers if not is_twin(p) and not _sau_inputs(p)]
    if EXTRACTION["extractor"]
    else []
)

if EXTRACT_PAPERS:
    _extractor = EXTRACTION["extractor"]
    _extract_settings = {
        **SETTINGS.config["judge_settings"].get(_extractor, {}),
        **EXTRACTION.get("settings", {}),
    }
    _extract_options = {k: v for k, v in EXTRACTION.items() if k != "settings"}
    # In the command, not in params: the fingerprint (which leaves out api_base, concurrency and
    # the like) decides when a paper is extracted again.
    EXTRACT_SETTINGS_ARG = shell_json(_extract_settings)

    ruleorder: saus_extract > saus

    rule saus_extract:
        """Extract the SAUs of a paper without an SAU file with an LLM; quotes checked against the text."""
        input:
            text=paper_file("paper.md"),
            meta=paper_file("paper.json"),
        output:
            paper_file("saus.parquet"),
        log:
            result("logs/saus/{paper}.log"),
        wildcard_constraints:
            paper="|".join(re.escape(p) for p in EXTRACT_PAPERS),
        conda:
            "../envs/sabench.yaml"
        resources:
            mem_mb=2000,
            disk_mb=1000,
            runtime=60,
        params:
            extractor=_extractor,
            options=json.dumps(_extract_options, sort_keys=True),
            fingerprint=extraction_fingerprint(_extract_options, _extract_settings),
            paper_dir=str(PAPERS_DIR / "{paper}"),
        shell:
            f"{PYTHON} -m sabench.extract {{params.paper_dir:q}} --text {{input.text:q}}"
            f" --meta {{input.meta:q}} --out {{output:q}} --extractor {{params.extractor:q}}"
            f" --settings {EXTRACT_SETTINGS_ARG} --options {{params.options:q}} > {{log:q}} 2>&1"
