"""ridge-gd-D2-005: rmse = sqrt(mean((y_pred - y) ** 2)); calls `metrics.rmse(y, y_pred)`."""

import numpy as np
from metrics import rmse

rng = np.random.default_rng(3)
for _ in range(5):
    y, y_pred = rng.normal(size=30), rng.normal(size=30)
    paper = np.sqrt(np.mean((y_pred - y) ** 2))
    got = float(rmse(y, y_pred))
    assert np.isclose(got, paper), f"rmse = {got:.6g}, the paper's formula gives {paper:.6g}"
print("rmse matches the paper's formula")
