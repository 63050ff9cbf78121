"""Plots and the report (the drift explorer of sabench.report_site) from the result tables.

Uses matplotlib's object API with the Agg canvas (never pyplot), so it needs no display, leaves the
process's backend alone and is safe in a worker. Output is deterministic: sizes depend only on the
data, PNGs carry no timestamp or version, and the summary embeds the very same PNG bytes, so a rerun
on unchanged tables gives byte-identical files (Snakemake sees nothing changed).

Standalone: ``python -m sabench.report --tables results/tables --out results/report`` (the run
folders are read from the tables folder's parent, or ``--results``); the report rule names the
tables one by one.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from sabench.io import atomic_path
from sabench.scoring import DIMENSION_ORDER, OVERALL
from sabench.steps import ArgumentParser, command, step

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

IMAGES = ("scores_by_agent.png", "verdicts.png", "heatmap.png")
VERDICT_COLORS = {
    "aligned": "#2e7d32",
    "partial": "#f9a825",
    "drifted": "#c62828",
    "missing": "#9e9e9e",
    "placeholder": "#6a1b9a",
    "undetermined": "#90a4ae",
    "error": "#212121",
}
FAILURE_MODE_COLORS = {
    "implementation_mismatch": "#8d6e63",
    "placeholder": "#6a1b9a",
    "omission": "#5c6bc0",
    "cited_work_confusion": "#26a69a",
    "external_knowledge_gap": "#ec407a",
    "fabricated_result": "#d50000",
    "crashed_under_check": "#ff6f00",
    "check_dependent": "#b71c1c",
}
DIMENSION_COLORS = {
    "overall": "#37474f",
    "D1": "#1565c0",
    "D2": "#00838f",
    "D3": "#ef6c00",
    "D4": "#ad1457",
}
_RC = {
    "svg.hashsalt": "sabench",
    "font.family": "DejaVu Sans",
    "font.size": 10,
    "axes.titlesize": 11,
    "legend.fontsize": 9,
    "figure.dpi": 100,
}
_DPI = 100


def _figure(
    width: float, height: float, nrows: int = 1, ncols: int = 1
) -> tuple[Figure, np.ndarray]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=_DPI, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def _save(fig: Figure, path: Path) -> None:
    """Atomic, timestamp-free PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=_DPI, metadata={"Software": None})


def _no_data(ax: Axes, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what}", ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()


def _table(tables: dict[str, pd.DataFrame], name: str) -> pd.DataFrame:
    frame = tables.get(name)
    return frame if frame is not None else pd.DataFrame()


def _judges(*frames: pd.DataFrame) -> list[str]:
    names: set[str] = set()
    for frame in frames:
        if not frame.empty and "judge" in frame.columns:
            names.update(str(j) for j in frame["judge"].dropna())
    return sorted(names)


# --------------------------------------------------------------------------- plots


def plot_scores_by_agent(scores: pd.DataFrame, path: Path) -> Path:
    """Grouped bars agent x dimension with the bootstrap CI, one panel per judge. Each bar is
    labelled with its score (a zero is a visible line at 0, "n/a" marks no score)."""
    judges = _judges(scores)
    agents = sorted(scores["agent"].astype(str).unique()) if judges else []
    dims = [d for d in DIMENSION_ORDER if judges and d in set(scores["dimension"])]
    width = min(16.0, max(7.0, 0.38 * len(agents) * max(len(dims), 1) + 3.0))
    fig, axes = _figure(width, 3.8 * max(len(judges), 1), max(len(judges), 1))
    if not judges:
        _no_data(axes[0, 0], "scores")
    labelled = len(agents) * len(dims) <= 60
    for ax, judge in zip(axes[:, 0], judges, strict=False):
        sub = scores[scores["judge"] == judge]
        x = np.arange(len(agents))
        bar = 0.8 / max(len(dims), 1)
        for i, dim in enumerate(dims):
            rows = sub[sub["dimension"] == dim].set_index("agent").reindex(agents)
            score = rows["score"].to_numpy(dtype=float)
            low = np.clip(score - rows["ci_low"].to_numpy(dtype=float), 0, None)
            high = np.clip(rows["ci_high"].to_numpy(dtype=float) - score, 0, None)
            color = DIMENSION_COLORS.get(dim, "#757575")
            bars = ax.bar(
                x + (i - (len(dims) - 1) / 2) * bar,
                np.nan_to_num(score),
                bar,
                yerr=np.nan_to_num(np.vstack([low, high])),
                capsize=2,
                label=dim,
                color=color,
                edgecolor=color,
                linewidth=1.5,
            )
            if labelled:
                ax.bar_label(
                    bars,
                    labels=["n/a" if math.isnan(v) else f"{v:.2f}" for v in score],
                    fontsize=8,
                    rotation=90,
                    padding=3,
                )
        ax.set_xticks(x, agents, rotation=20 if len(agents) > 3 else 0, ha="right")
        ax.set_ylim(-0.03, 1.25 if labelled else 1.05)
        ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
        ax.axhline(0, color="#424242", linewidth=0.8)
        ax.set_ylabel("score")
        ax.set_title(f"judge: {judge}")
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    _save(fig, path)
    return path


def _stacked(ax: Axes, shares: pd.DataFrame, colors: dict[str, str], title: str) -> None:
    if shares.empty:
        _no_data(ax, title)
        return
    bottom = np.zeros(len(shares.index))
    palette = ["#ffa726", "#78909c", "#8d6e63", "#5c6bc0"]
    for i, col in enumerate(shares.columns):
        values = shares[col].to_numpy(dtype=float)
        color = colors.get(col, palette[i % len(palette)])
        bars = ax.bar(shares.index.astype(str), values, 0.7, bottom=bottom, label=col, color=color)
        labels = [f"{v:.0%}" if v >= 0.08 else "" for v in values]  # room for the text only
        ax.bar_label(bars, labels=labels, label_type="center", fontsize=8, color="white")
        bottom += values
    ax.set_ylim(0, 1.0)
    ax.set_ylabel("share")
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if len(shares.index) > 3:
        ax.tick_params(axis="x", labelrotation=20)


def plot_verdicts(taxonomy: pd.DataFrame, path: Path) -> Path:
    """Per judge: verdict shares per agent, and the failure modes of the rows that have one."""
    judges = _judges(taxonomy)
    n_agents = taxonomy["agent"].nunique() if judges else 1
    fig, axes = _figure(
        max(8.0, 1.4 * n_agents * 2 + 4), 3.2 * max(len(judges), 1), max(len(judges), 1), 2
    )
    if not judges:
        _no_data(axes[0, 0], "verdicts")
        _no_data(axes[0, 1], "failure modes")
    for row, judge in zip(axes, judges, strict=False):
        sub = taxonomy[(taxonomy["judge"] == judge) & (taxonomy["dimension"] == OVERALL)]
        counts = sub.pivot_table(
            index="agent", columns="verdict", values="count", aggfunc="sum", fill_value=0
        )
        order = [v for v in VERDICT_COLORS if v in counts.columns]
        order += sorted(c for c in counts.columns if c not in VERDICT_COLORS)
        verdicts = counts[order].div(counts.sum(axis=1), axis=0) if not counts.empty else counts
        _stacked(row[0], verdicts.sort_index(), VERDICT_COLORS, f"verdicts ({judge})")
        modes = sub[sub["failure_mode"].notna()]
        by_mode = modes.pivot_table(
            index="agent", columns="failure_mode", values="count", aggfunc="sum", fill_value=0
        )
        if not by_mode.empty:
            by_mode = by_mode[sorted(by_mode.columns)]
            by_mode = by_mode.div(by_mode.sum(axis=1), axis=0).sort_index()
        _stacked(row[1], by_mode, FAILURE_MODE_COLORS, f"failure modes ({judge})")
    _save(fig, path)
    return path


def plot_heatmap(by_run: pd.DataFrame, path: Path) -> Path:
    """Agent x paper overall score (seeds averaged), one panel per judge; grey = no score."""
    from matplotlib import colormaps

    cmap = colormaps["viridis"].with_extremes(bad="#e0e0e0")
    judges = _judges(by_run)
    overall = by_run[by_run["dimension"] == OVERALL] if judges else by_run
    agents = sorted(overall["agent"].astype(str).unique()) if judges else []
    papers = sorted(overall["paper"].astype(str).unique()) if judges else []
    width = max(5.0, 0.6 * len(papers) + 4.0)
    height = max(3.0, 0.45 * len(agents) + 2.2)
    fig, axes = _figure(width, height * max(len(judges), 1), max(len(judges), 1))
    if not judges:
        _no_data(axes[0, 0], "runs")
    for ax, judge in zip(axes[:, 0], judges, strict=False):
        grid = (
            overall[overall["judge"] == judge]
            .groupby(["agent", "paper"])["score"]
            .mean()
            .unstack("paper")
            .reindex(index=agents, columns=papers)
        )
        values = np.ma.masked_invalid(grid.to_numpy(dtype=float))
        image = ax.imshow(values, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")
        ax.set_xticks(range(len(papers)), papers, rotation=45, ha="right", fontsize=9)
        ax.set_yticks(range(len(agents)), agents, fontsize=9)
        if len(agents) * len(papers) <= 400:
            for (i, j), v in np.ndenumerate(grid.to_numpy(dtype=float)):
                if not math.isnan(v):
                    ax.text(
                        j,
                        i,
                        f"{v:.2f}",
                        ha="center",
                        va="center",
                        fontsize=8,
                        color="white" if v < 0.5 else "black",
                    )
        ax.set_title(f"overall score ({judge})")
        fig.colorbar(image, ax=ax, shrink=0.8)
    _save(fig, path)
    return path


def make_report(
    tables: dict[str, pd.DataFrame],
    out_dir: Path,
    results: Path | None = None,
    config_hash: str | None = None,
    workers: int = 1,
    descriptions: dict[str, str] | None = None,
    table_files: dict[str, Path] | None = None,
) -> list[Path]:
    """Write the three PNGs, ``index.html`` and the explorer's ``site/`` into ``out_dir``; returns
    their paths. ``results`` is the results root whose run folders give the code, logs and
    transcripts of the run pages (without it, those pages show the tables only); ``workers``
    processes render the pages; ``descriptions`` (agent: text) are shown on the agents' pages;
    ``table_files`` (table: Parquet file) are copied into the report for download."""
    from sabench.report_site import build_site

    extra = {"descriptions": descriptions, "table_files": table_files}

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if workers < 2:
        images = plot_figures(tables, out_dir)
        index, site = build_site(tables, out_dir, results, images, config_hash, workers, **extra)
        return [*images, index, site]
    # the figures are drawn by a forked process while the pages are rendered; the summary,
    # which shows them, is written last
    import multiprocessing

    plotter = multiprocessing.get_context("fork").Process(
        target=plot_figures, args=(tables, out_dir), name="sabench-report-figures"
    )
    plotter.start()

    def figures() -> list[Path]:
        plotter.join()
        if plotter.exitcode != 0:
            raise RuntimeError(f"drawing the figures failed (exit status {plotter.exitcode})")
        return [out_dir / name for name in IMAGES]

    try:
        index, site = build_site(tables, out_dir, results, figures, config_hash, workers, **extra)
    finally:
        if plotter.is_alive():
            plotter.terminate()
            plotter.join()
    return [*figures(), index, site]


def plot_figures(tables: dict[str, pd.DataFrame], out_dir: Path) -> list[Path]:
    """The three PNGs of ``IMAGES`` in ``out_dir``."""
    from matplotlib import rc_context

    with rc_context(_RC):
        return [
            plot_scores_by_agent(_table(tables, "scores_by_agent"), out_dir / IMAGES[0]),
            plot_verdicts(_table(tables, "error_taxonomy"), out_dir / IMAGES[1]),
            plot_heatmap(_table(tables, "scores_by_run"), out_dir / IMAGES[2]),
        ]


def agent_descriptions(path: Path | None) -> dict[str, str]:
    """Each agent's ``description`` from an agents file (config/agents.yaml); none when the file
    is missing or unreadable (the report then shows no descriptions)."""
    if path is None or not Path(path).is_file():
        return {}
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        str(name): str(spec["description"])
        for name, spec in data.items()
        if isinstance(spec, dict) and spec.get("description")
    }


def read_tables(folder: Path) -> dict[str, pd.DataFrame]:
    """Every ``<name>.parquet`` of a tables folder, keyed by name."""
    return {p.stem: pd.read_parquet(p) for p in sorted(Path(folder).glob("*.parquet"))}


@command
def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(description="Plot the result tables into a report folder.")
    parser.add_argument(
        "--tables", type=Path, nargs="+", required=True, help="the tables folder, or its tables"
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--results",
        type=Path,
        help="results root with the run folders (default: the tables folder's parent)",
    )
    parser.add_argument("--config-hash", help="the workflow config's hash, shown as provenance")
    parser.add_argument(
        "--workers", type=int, default=1, help="processes that render the pages (default 1)"
    )
    parser.add_argument(
        "--agents",
        type=Path,
        default=Path("config/agents.yaml"),
        help="the agents file whose descriptions the agents' pages show "
        "(default config/agents.yaml; none when it is missing)",
    )
    args = parser.parse_args(argv)
    tables: dict[str, pd.DataFrame] = {}
    files: dict[str, Path] = {}
    for path in args.tables:
        if path.is_dir():
            tables.update(read_tables(path))
            files.update({p.stem: p for p in sorted(path.glob("*.parquet"))})
        elif path.suffix == ".parquet" and path.is_file():
            tables[path.stem] = pd.read_parquet(path)
            files[path.stem] = path
        else:
            print(f"error: {path}: not a folder of tables or a table", file=sys.stderr)
            return 2
    first = args.tables[0]
    results = args.results or (first if first.is_dir() else first.parent).resolve().parent
    written = make_report(
        tables,
        args.out,
        results,
        args.config_hash,
        max(1, args.workers),
        agent_descriptions(args.agents),
        files,
    )
    with step(None, "report") as log:  # the rule's log line; a user error above returns 2
        log.info("report: %s", ", ".join(str(p) for p in written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
