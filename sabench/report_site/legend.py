"""The report's legend: what D1-D4, the verdicts, the failure modes and the score scale mean.

Shown on the summary and as ``site/legend.html`` (linked from every page's header). The names come
from :mod:`sabench.contracts`; a name added there without a meaning here is still listed (with
"no description yet"), so the legend never hides a value the tables can hold.
"""

from __future__ import annotations

from typing import Any

from sabench.contracts import DIMENSION_NAMES, DIMENSIONS, FAILURE_MODES, VERDICTS

DIMENSION_EXAMPLES = {
    "D1": "gradient descent uses a learning rate of 0.05 for 200 epochs",
    "D2": "the loss is mean((X @ w - y) ** 2) + lam * sum(w ** 2)",
    "D3": "the mean_predictor baseline is compared on rmse",
    "D4": "split → standardise → train → evaluate",
}
VERDICT_MEANINGS = {
    "aligned": "the code implements the claim as the paper states it (score 1)",
    "partial": "part of the claim is implemented, or with a small difference (the judge's own "
    "score, between 0 and 1)",
    "drifted": "the code does something else than the paper says: another value, formula, "
    "protocol or order (score 0)",
    "missing": "no code implements the claim, or only docs, tests or code that nothing runs (score 0)",
    "placeholder": "the claim's code is a stub: pass, ..., NotImplementedError, a constant "
    "(score 0)",
    "undetermined": "the judge looked and cannot tell (the static judge: a claim that names no "
    "code and whose words are only weakly in the code, no rule deciding): counted as judged, left "
    "out of every score, never counted as drift",
    "error": "the judge could not say (a check that does not parse or times out, a broken "
    "answer): left out of every score and counted under coverage, never counted as drift",
}
FAILURE_MODE_MEANINGS = {
    "implementation_mismatch": "the code implements the claim differently (another value, "
    "formula or step)",
    "placeholder": "a stub stands where the claim's code should be",
    "omission": "the claim is not implemented at all",
    "cited_work_confusion": "the code follows a cited or related work instead of this paper",
    "external_knowledge_gap": "the claim needs knowledge the paper does not give (a dataset "
    "detail, a library default)",
    "fabricated_result": "a result the code writes as a literal, decodes from a blob or parses "
    "from a file instead of computing it: 0 from every judge",
    "crashed_under_check": "the code under test exited, killed or hung a check",
    "check_dependent": "a function returned under a check what it did not return, on the same "
    "inputs, in the submission's own run",
}
SCALE = [
    ("1", "aligned: the claim is implemented as stated"),
    ("0.75", "aligned but for a detail"),
    ("0.5", "partly implemented"),
    ("0.25", "mostly not implemented, or drifted with some support"),
    ("0", "drifted, missing or a placeholder"),
]


def legend() -> dict[str, Any]:
    """The legend's rows: (name, meaning[, example]) per dimension, verdict and failure mode."""
    return {
        "dimensions": [
            (d, DIMENSION_NAMES.get(d, ""), DIMENSION_EXAMPLES.get(d, "")) for d in DIMENSIONS
        ],
        "verdicts": [(v, VERDICT_MEANINGS.get(v, "no description yet")) for v in VERDICTS],
        "failure_modes": [
            (m, FAILURE_MODE_MEANINGS.get(m, "no description yet")) for m in FAILURE_MODES
        ],
        "scale": SCALE,
    }
