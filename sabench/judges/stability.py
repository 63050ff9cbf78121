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


def judge_stability(judgments: pd.DataFrame) -> pd.DataFrame:
    """One row per judge x dimension (and ``overall``) over the SAUs with two or more answers."""
    if judgments.empty or "samples" not in judgments.columns:
        return _frame([])
    per_sau = []
    for rec in judgments[["judge", "dimension", "samples"]].itertuples(index=False):
        answers = sample_answers(rec.samples)
        if len(answers) < 2:
            continue
        scores = [float(s["score"]) for s in answers]
        per_sau.append(
            {
                "judge": rec.judge,
                "dimension": rec.dimension,
                "k": len(answers),
                "disagree": len({s["verdict"] for s in answers}) > 1,
                "sd": statistics.stdev(scores),
            }
        )
    if not per_sau:
        return _frame([])
    saus = pd.DataFrame(per_sau)
    rows = []
    for judge, by_judge in saus.groupby("judge", sort=True):
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
