"""ridge-gd-D2-002: grad_w = 2 * X.T @ (X @ w + b - y) / n + 2 * lam * w (and grad_b = 2 * mean(r)).

Calls the submission's `model.ridge_gradients(X, y, w, b, lam)` on random problems.
"""

import numpy as np
from model import ridge_gradients

rng = np.random.default_rng(1)
for _ in range(5):
    n, d = int(rng.integers(5, 40)), int(rng.integers(1, 8))
    X, y = rng.normal(size=(n, d)), rng.normal(size=n)
    w, b, lam = rng.normal(size=d), float(rng.normal()), float(rng.uniform(0.05, 1.0))
    residual = X @ w + b - y
    paper_w = 2 * X.T @ residual / n + 2 * lam * w
    paper_b = 2 * np.mean(residual)
    grad_w, grad_b = ridge_gradients(X, y, w, b, lam)
    assert np.allclose(grad_w, paper_w, rtol=1e-6), (
        f"grad_w {np.round(grad_w, 4)} != {np.round(paper_w, 4)}"
    )
    assert np.isclose(float(grad_b), paper_b, rtol=1e-6), f"grad_b {grad_b:.6g} != {paper_b:.6g}"
print("ridge_gradients match the paper's gradients on 5 random problems")
