"""ridge-gd-D2-001: the objective is mean((X @ w + b - y) ** 2) + lam * sum(w ** 2).

Calls the submission's `model.ridge_loss(X, y, w, b, lam)` on random problems and compares it with
the paper's formula.
"""

import numpy as np
from model import ridge_loss

rng = np.random.default_rng(0)
for _ in range(5):
    n, d = int(rng.integers(5, 40)), int(rng.integers(1, 8))
    X, y = rng.normal(size=(n, d)), rng.normal(size=n)
    w, b, lam = rng.normal(size=d), float(rng.normal()), float(rng.uniform(0.05, 1.0))
    paper = np.mean((X @ w + b - y) ** 2) + lam * np.sum(w**2)
    got = float(ridge_loss(X, y, w, b, lam))
    assert np.isclose(got, paper, rtol=1e-6), (
        f"ridge_loss = {got:.6g}, the paper's objective {paper:.6g}"
    )
print("ridge_loss matches the paper's objective on 5 random problems")
