"""ridge-gd-D2-004: closed_form solves (X.T X + n lam I) w = X.T (y - mean(y)), intercept mean(y).

Calls the submission's `baselines.fit_closed_form(X, y, lam)` on standardised random data.
"""

import numpy as np
from baselines import fit_closed_form

rng = np.random.default_rng(2)
for _ in range(3):
    n, d = int(rng.integers(20, 60)), int(rng.integers(2, 8))
    X = rng.normal(size=(n, d))
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    y = X @ rng.normal(size=d) + 3.0 + rng.normal(size=n)
    lam = float(rng.uniform(0.01, 0.5))
    paper_w = np.linalg.solve(X.T @ X + n * lam * np.eye(d), X.T @ (y - np.mean(y)))
    w, b = fit_closed_form(X, y, lam)
    assert np.allclose(w, paper_w, rtol=1e-6, atol=1e-9), (
        f"weights {np.round(w, 4)} != {np.round(paper_w, 4)}"
    )
    assert np.isclose(float(b), np.mean(y)), f"intercept {b:.6g} != mean(y) {np.mean(y):.6g}"
print("fit_closed_form is the paper's closed form")
