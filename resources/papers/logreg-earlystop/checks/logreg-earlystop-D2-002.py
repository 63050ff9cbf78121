"""logreg-earlystop-D2-002: objective = -mean(y log p + (1 - y) log(1 - p)) + lam * sum(w ** 2).

Calls `esl.model.objective(X, y, w, b, lam)` on random problems.
"""

import numpy as np
from esl.model import objective

rng = np.random.default_rng(1)
for _ in range(5):
    X, w, b = rng.normal(size=(30, 5)), rng.normal(size=5), float(rng.normal())
    y = (rng.random(30) < 0.5).astype(float)
    lam = float(rng.uniform(0.001, 0.1))
    p = 1 / (1 + np.exp(-(X @ w + b)))
    paper = -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)) + lam * np.sum(w**2)
    got = float(objective(X, y, w, b, lam))
    assert np.isclose(got, paper, rtol=1e-6), f"objective = {got:.6g}, the paper's {paper:.6g}"
print("objective matches the paper's regularised cross-entropy")
