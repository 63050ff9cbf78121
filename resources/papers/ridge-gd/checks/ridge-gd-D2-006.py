"""ridge-gd-D2-006: r2 = 1 - sum((y - y_pred) ** 2) / sum((y - mean(y)) ** 2).

Calls `metrics.r2_score(y, y_pred)` on random predictions (good and bad ones).
"""

import numpy as np
from metrics import r2_score

rng = np.random.default_rng(4)
for noise in (0.1, 0.5, 2.0):
    y = rng.normal(size=50)
    y_pred = y + rng.normal(scale=noise, size=50)
    paper = 1 - np.sum((y - y_pred) ** 2) / np.sum((y - np.mean(y)) ** 2)
    got = float(r2_score(y, y_pred))
    assert np.isclose(got, paper), f"r2_score = {got:.6g}, the paper's formula gives {paper:.6g}"
print("r2_score matches the paper's formula")
