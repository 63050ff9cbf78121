# Configuration, the grid and input functions. Parse time imports nothing heavy (see sabench.grid).
import sys
from pathlib import Path

from sabench.errors import UserError
from sabench.grid import (
    agent_fingerprint,
    judge_fingerprint,
    judge_slug,
    load_settings,
)

try:
    SETTINGS = load_settings(
        config,
        Path(workflow.basedir),
        config_path="config (config/config.yaml + --config)",
    )
except UserError as exc:
    sys.exit(f"error: {exc}")

R = SETTINGS.results
PAPERS_DIR = Path(workflow.basedir) / SETTINGS.config["papers_dir"]
RUN = R + "/runs/{agent}/{paper}/{seed}"
JUDGE_BY_SLUG = {judge_slug(j): j for j in SETTINGS.judges}
TABLES = (
    "papers",
    "saus",
    "runs",
    "judgments",
    "scores_by_run",
    "scores_by_agent",
    "coverage",
    "tree_scores",
    "error_taxonomy",
    "judge_agreement",
    "judge_confusion",
)
REPORT_FIGURES = ("scores_by_agent", "verdicts", "heatmap")


wildcard_constraints:
    paper=r"[A-Za-z0-9][A-Za-z0-9._-]*",
    agent=r"[A-Za-z0-9][A-Za-z0-9._-]*",
    seed=r"\d+",
    judge="|".join(JUDGE_BY_SLUG),


def paper_inputs(wildcards):
    """The paper text and the addendum the agent also reads."""
    folder = PAPERS_DIR / wildcards.paper
    files = [
        folder / name for name in ("paper.md", "paper.pdf") if (folder / name).is_file()
    ]
    files = files[:1] or [folder / "paper.md"]
    for name in ("addendum.md", "blacklist.txt"):
        if (folder / name).is_file():
            files.append(folder / name)
    return [str(f) for f in files]


def sau_inputs(wildcards):
    from sabench.grid import SAU_FILES

    folder = PAPERS_DIR / wildcards.paper
    return [str(folder / name) for name in SAU_FILES if (folder / name).is_file()]


def agent_settings(wildcards):
    return SETTINGS.agents[wildcards.agent]


def agent_gpus(wildcards):
    return int(SETTINGS.agents[wildcards.agent].get("gpus", 0))


def judge_params(wildcards):
    judge = JUDGE_BY_SLUG[wildcards.judge]
    settings = SETTINGS.config["judge_settings"].get(judge, {})
    return {
        "name": judge,
        "settings": settings,
        "fingerprint": judge_fingerprint(judge, settings),
    }


def run_judgments(wildcards):
    return expand(RUN + "/judge/{judge}.parquet", judge=JUDGE_BY_SLUG, **wildcards)


def all_runs(pattern):
    return [
        pattern.format(agent=agent, paper=paper, seed=seed)
        for agent, paper, seed in SETTINGS.runs
    ]


def all_targets():
    return [f"{R}/tables/{t}.parquet" for t in TABLES] + [f"{R}/report/index.html"]
