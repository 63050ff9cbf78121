"""How stable a judge asked k times is (``samples: k`` of an LLM judge): per judge and dimension,
the share of SAUs whose answers differ in verdict and the mean spread of their scores.

The answers are the ``samples`` column of the judgments (a JSON list of ``{sample, seed, verdict,
score}`` per SAU, written by :func:`sabench.judges.llm_judge.combine_samples`); judges asked once
have none and get no rows.
"""

from __future__ import annotations

import json
import statistics
from typing import Any

import pandas as pd

from sabench.scoring import OVERALL

#: ``share_disagree``: SAUs whose valid answers name more than one verdict; ``score_sd``: the mean
#: over SAUs of the sample standard deviation of their answers' scores.
STABILITY_COLUMNS = ["judge", "dimension", "n_saus", "n_samples", "share_disagree", "score_sd"]


def sample_answers(value: Any) -> list[dict[str, Any]]:
    """The valid answers (not ``error``) of one judgment's ``samples`` cell; [] when it has none."""
    if not isinstance(value, str) or not value:
        return []
    return [
        s for s in json.loads(value) if s.get("verdict") != "error" and s.get("score") is not None
    ]


#: One row per SAU asked two or more times: its judge, dimension, number of valid answers,
#: whether their verdicts differ, and the standard deviation of their scores.
SPREAD_COLUMNS = ["judge", "dimension", "k", "disagree", "sd"]


def judge_stability(judgments: pd.DataFrame) -> pd.DataFrame:
    """One row per judge x dimension (and ``overall``) over the SAUs with two or more answers."""
    return summarize(sau_spreads(judgments))


def sau_spreads(judgments: pd.DataFrame) -> pd.DataFrame:
    """How the answers of each judgment with two or more valid ones spread (SPREAD_COLUMNS); the
    streamed aggregation takes these per chunk and summarizes them once."""
    rows = []
    if not judgments.empty and "samples" in judgments.columns:
        for judge, dimension, samples in zip(
            judgments["judge"], judgments["dimension"], judgments["samples"], strict=True
        ):
            answers = sample_answers(samples)
            if len(answers) < 2:
                continue
            scores = [float(s["score"]) for s in answers]
            disagree = len({s["verdict"] for s in answers}) > 1
            rows.append((judge, dimension, len(answers), disagree, statistics.stdev(scores)))
    return pd.DataFrame(rows, columns=SPREAD_COLUMNS)


def summarize(spreads: pd.DataFrame) -> pd.DataFrame:
    """``judge_stability`` from :func:`sau_spreads` rows (of one or many chunks)."""
    rows = []
    for judge, by_judge in spreads.groupby("judge", sort=True):
        groups = [*by_judge.groupby("dimension", sort=True), (OVERALL, by_judge)]
        for dim, group in groups:
            rows.append(
                {
                    "judge": judge,
                    "dimension": dim,
                    "n_saus": len(group),
                    "n_samples": int(group["k"].sum()),
                    "share_disagree": float(group["disagree"].mean()),
                    "score_sd": float(group["sd"].mean()),
                }
            )
    return _frame(rows)


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=STABILITY_COLUMNS)
    return frame.astype(
        {
            "judge": "string",
            "dimension": "string",
            "n_saus": "int64",
            "n_samples": "int64",
            "share_disagree": float,
            "score_sd": float,
        }
    )
