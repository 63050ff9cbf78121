"""logreg-earlystop-D2-003: grad_w = X.T @ (p - y) / len(y) + 2 * lam * w, averaged over the batch.

Calls `esl.model.gradients(X, y, w, b, lam)` on random mini-batches of several sizes.
"""

import numpy as np
from esl.model import gradients

rng = np.random.default_rng(2)
for n in (1, 7, 32):
    X, w, b = rng.normal(size=(n, 5)), rng.normal(size=5), float(rng.normal())
    y = (rng.random(n) < 0.5).astype(float)
    lam = 0.01
    p = 1 / (1 + np.exp(-(X @ w + b)))
    paper_w = X.T @ (p - y) / len(y) + 2 * lam * w
    grad_w, grad_b = gradients(X, y, w, b, lam)
    assert np.allclose(grad_w, paper_w), (
        f"batch of {n}: grad_w {np.round(grad_w, 4)} != {np.round(paper_w, 4)}"
    )
    assert np.isclose(float(grad_b), np.mean(p - y)), f"batch of {n}: grad_b is not mean(p - y)"
print("gradients match the paper's mini-batch average")
