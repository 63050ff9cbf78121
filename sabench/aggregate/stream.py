"""Every run's judgments streamed into ``tables/judgments.parquet`` chunk by chunk, with the tables
derived from them computed per chunk and merged: memory is bounded by one chunk and the derived
tables (a few rows per run), never by the grid's judgments.

Exact, not approximate: a run's rows never straddle two chunks, so its scores, its tree scores and
its judge/reference pairs come out of one chunk whole; counts add up; and the values that the
agreement and stability figures are taken over are kept (a few numbers per judgment) in the grid's
order, so every table equals the one an in-memory aggregation gives. Each chunk goes through pandas
and back (~0.5 s per 200,000 judgments), so its column types are the ones the tables have always
had (an integer column with a null is float, text is pandas' string type), and the file's schema is
the union of the chunks' (a column all null in one chunk takes the others' type): each chunk is
written as a part first, then the parts are cast and copied into the one file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from sabench import scoring
from sabench.contracts import JUDGMENT_COLUMNS, UNDETERMINED
from sabench.errors import UserError
from sabench.io import atomic_path, sabench_metadata
from sabench.judges import stability
from sabench.twins import is_twin

#: Judgments per chunk: a chunk costs ~1.4 kB a judgment while in flight (Arrow, pandas with the
#: evidence as Python objects, the part written), so ~70 MB; smaller chunks save little time.
CHUNK_ROWS = 50_000
TREE_COLUMNS = ["agent", "paper", "seed", "judge", "score", "n_leaves", "n_leaves_judged"]
#: Columns of the tables typed as integers, floats and booleans whatever their values (``typed``).
_INT_COLUMNS = {
    "n_runs_limit",
    "n_sections",
    "n_chars",
    "n_saus",
    "n_error",
    "n_undetermined",
    "n_papers",
    "n_runs",
    "n_runs_complete",
    "n_runs_incomplete",
    "n_runs_failed_execution",
    "n_saus_judged",
    "n_saus_error",
    "n_saus_undetermined",
    "n_leaves",
    "n_leaves_judged",
    "line",
    "count",
    "n",
    # canary twins (sabench.canary)
    "n_expected",
    "n_reported",
    "n_twin",
    "n_near_original",
    "n_no_result",
    "n_honest",
    "n_reached",
    "n_fabricated",
    "n_reporting",
}
_FLOAT_COLUMNS = {
    "model_calls",
    "cost_usd_per_run",
    "score",
    "confidence",
    "ci_low",
    "ci_high",
    "share",
    "exact_agreement",
    "mae",
    "kappa_quadratic",
    "spearman",
    "fabrication_rate",
}
_BOOL_COLUMNS = {"few_papers"}


def rubric_trees(saus: pd.DataFrame) -> dict[str, scoring.RubricTree]:
    """The rubric tree of every paper whose SAUs carry one, built once for the whole grid."""
    trees = {}
    for paper, paper_saus in saus.groupby("paper", sort=True) if not saus.empty else []:
        if not scoring.has_tree(paper_saus):
            continue
        try:
            trees[str(paper)] = scoring.RubricTree.from_saus(paper_saus)
        except ValueError as exc:
            raise UserError(f"papers/{paper}/saus.parquet", "parent", str(exc)) from None
    return trees


def tree_rows(trees: dict[str, scoring.RubricTree], judgments: pd.DataFrame) -> pd.DataFrame:
    """PaperBench's weighted tree score per run and judge, sorted by paper, agent, seed, judge."""
    rows = []
    judged = judgments[judgments["paper"].isin(list(trees))] if trees else judgments.iloc[:0]
    values = judged.assign(value=scoring.claim_scores(judged).to_numpy())
    for (paper, agent, seed, judge), group in values.groupby(
        ["paper", "agent", "seed", "judge"], sort=True
    ):
        tree = trees[paper]
        leaf_scores = dict(zip(group["sau_id"], group["value"], strict=True))
        rows.append(
            {
                "agent": agent,
                "paper": paper,
                "seed": seed,
                "judge": judge,
                "score": tree.score(leaf_scores),
                "n_leaves": len(tree.leaves),
                "n_leaves_judged": tree.n_judged(leaf_scores),
            }
        )
    return pd.DataFrame(rows, columns=TREE_COLUMNS)


def judgment_counts(judgments: pd.DataFrame) -> pd.DataFrame:
    """SAUs scored, SAUs with an ``error`` verdict and SAUs the judge abstained on
    (``undetermined``) per agent and judge (``coverage``)."""
    scored = scoring.claim_scores(judgments).notna().to_numpy()
    undetermined = (judgments["verdict"] == UNDETERMINED).to_numpy()
    frame = judgments[["agent", "judge"]].assign(
        n_saus_judged=scored,
        n_saus_error=~scored & ~undetermined,
        n_saus_undetermined=undetermined,
    )
    return frame.groupby(["agent", "judge"]).sum().astype("int64")


def typed(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Fixed column order and dtypes, so even an empty table has a stable Parquet schema."""
    frame = frame.copy()
    for col in columns:
        if col not in frame.columns:
            frame[col] = None
    extra = [c for c in frame.columns if c not in columns]
    frame = frame[[*columns, *extra]]
    for col in columns:
        if col in _INT_COLUMNS:
            values = pd.to_numeric(frame[col])
            frame[col] = values.astype("Int64" if values.isna().any() else "int64")
        elif col in _FLOAT_COLUMNS:
            frame[col] = pd.to_numeric(frame[col]).astype(float)
        elif col in _BOOL_COLUMNS:
            frame[col] = frame[col].astype(bool)
        elif frame.empty and frame[col].dtype == object:
            frame[col] = frame[col].astype("string")
    return frame.reset_index(drop=True)


#: Which judge settings (fingerprint) judged which agent's papers: a score over papers judged
#: under two settings says so (sabench.aggregate.mixed_settings).
SETTINGS_KEYS = ("agent", "judge", "paper", "seed", "judge_fingerprint")


class JudgmentStream:
    """Takes the grid's judgments run by run; writes them and the tables derived from them."""

    def __init__(self, parts: Path, saus: pd.DataFrame, chunk_rows: int = CHUNK_ROWS) -> None:
        self.parts, self.chunk_rows = parts, chunk_rows
        self._saus = saus
        self._trees: dict[str, scoring.RubricTree] | None = None
        self.n_rows = 0
        self.judges: dict[object, None] = {}  # every judge seen, in first-seen order
        self._buffer: list[pa.Table] = []
        self._buffered = 0
        self._files: list[Path] = []
        self._derived: dict[str, list[pd.DataFrame]] = {
            name: []
            for name in ("runs", "counts", "taxonomy", "pairs", "trees", "stability", "settings")
        }

    def add(self, tables: list[pa.Table]) -> None:
        """One run's judgments (a table per judge): a run is never split between chunks."""
        tables = [t for t in tables if t.num_rows]
        self._buffer += tables
        self._buffered += sum(t.num_rows for t in tables)
        if self._buffered >= self.chunk_rows:
            self._flush()

    def _flush(self) -> None:
        if not self._buffer:
            return
        chunk = pa.concat_tables(self._buffer, promote_options="permissive")
        self._buffer, self._buffered = [], 0
        self.n_rows += chunk.num_rows
        frame = chunk.to_pandas()
        self.judges.update(dict.fromkeys(frame["judge"].unique()))
        derived = self._derived
        derived["runs"].append(scoring.run_scores(frame))
        derived["counts"].append(judgment_counts(frame))
        derived["taxonomy"].append(scoring.taxonomy_counts(frame))
        derived["pairs"].append(scoring.agreement_pairs(frame))
        if self._trees is None:  # built at the first judgment: a tree nobody scored never fails
            self._trees = rubric_trees(self._saus)
        derived["trees"].append(tree_rows(self._trees, frame))
        if "samples" in frame.columns:
            derived["stability"].append(stability.sau_spreads(frame))
        derived["settings"].append(frame[list(SETTINGS_KEYS)].drop_duplicates())
        path = self.parts / f"part-{len(self._files):06d}.parquet"
        part = pa.Table.from_pandas(typed(frame, JUDGMENT_COLUMNS), preserve_index=False)
        pq.write_table(part, path)
        self._files.append(path)

    def derived_tables(self) -> dict[str, pd.DataFrame]:
        """The tables derived from the judgments, ``counts`` (for ``coverage``) and ``settings``
        (:data:`SETTINGS_KEYS`, each combination once)."""
        self._flush()
        parts = {name: [f for f in frames if not f.empty] for name, frames in self._derived.items()}
        by_run = (
            scoring.sort_by_dimension(
                pd.concat(parts["runs"], ignore_index=True),
                ["agent", "paper", "seed", "judge", "dimension"],
            )
            if parts["runs"]
            else pd.DataFrame(columns=scoring.RUN_SCORE_COLUMNS)
        )
        counts = (
            pd.concat(parts["counts"]).groupby(level=[0, 1]).sum()
            if parts["counts"]
            else pd.DataFrame(columns=["n_saus_judged", "n_saus_error", "n_saus_undetermined"])
        )
        taxonomy = (
            pd.concat(parts["taxonomy"], ignore_index=True)
            .groupby(scoring.TAXONOMY_KEYS, dropna=False, sort=False)["count"]
            .sum()
            .reset_index()
            if parts["taxonomy"]
            else pd.DataFrame(columns=[*scoring.TAXONOMY_KEYS, "count"])
        )
        pairs = (
            pd.concat(parts["pairs"], ignore_index=True)
            if parts["pairs"]
            else pd.DataFrame(columns=scoring.PAIR_COLUMNS)
        )
        agreement, confusion = scoring.agreement_tables(pairs)
        trees = (
            pd.concat(parts["trees"], ignore_index=True)
            .sort_values(["paper", "agent", "seed", "judge"], kind="mergesort")
            .reset_index(drop=True)
            if parts["trees"]
            else pd.DataFrame(columns=TREE_COLUMNS)
        )
        answers = (
            pd.concat(parts["stability"], ignore_index=True)
            if parts["stability"]
            else pd.DataFrame(columns=stability.SPREAD_COLUMNS)
        )
        settings = (
            pd.concat(parts["settings"], ignore_index=True).drop_duplicates()
            if parts["settings"]
            else pd.DataFrame(columns=list(SETTINGS_KEYS))
        )
        return {
            "scores_by_run": by_run,
            # a canary twin's results are out of reach on purpose: its runs are no score
            "scores_by_agent": scoring.agent_scores(
                by_run[[not is_twin(str(p)) for p in by_run["paper"]]]
            ),
            "tree_scores": trees,
            "error_taxonomy": scoring.taxonomy_shares(taxonomy),
            "judge_agreement": agreement,
            "judge_confusion": confusion,
            "judge_stability": stability.summarize(answers),
            "counts": counts,
            "settings": settings,
        }

    def write(self, path: Path, **metadata: str) -> None:
        """The parts as one Parquet file, in the grid's order, under the union of their schemas."""
        self._flush()
        schemas = [pq.read_schema(p) for p in self._files]
        schema = pa.unify_schemas(schemas, promote_options="permissive")
        empty = schema.empty_table().to_pandas()
        pandas_meta = pa.Table.from_pandas(empty, schema=schema, preserve_index=False).schema
        schema = schema.with_metadata(sabench_metadata(pandas_meta.metadata, **metadata))
        with atomic_path(path) as tmp, pq.ParquetWriter(tmp, schema) as writer:
            for part in self._files:
                table = pq.read_table(part)
                writer.write_table(
                    pa.table(
                        [
                            table[f.name].cast(f.type)
                            if f.name in table.column_names
                            else pa.nulls(table.num_rows, f.type)
                            for f in schema
                        ],
                        schema=schema,
                    )
                )
                part.unlink()
