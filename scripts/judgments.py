"""Snakemake script of rule judgments: all judges' rows of one run in one table."""

from pathlib import Path

from sabench.judging import merge_judgments

merge_judgments([Path(p) for p in snakemake.input], Path(snakemake.output[0]))  # noqa: F821
