"""logreg-earlystop-D2-001: p = sigmoid(X @ w + b) with sigmoid(z) = 1 / (1 + exp(-z)).

Calls `esl.model.predict_proba(X, w, b)` on random inputs.
"""

import numpy as np
from esl.model import predict_proba

rng = np.random.default_rng(0)
for _ in range(5):
    X, w, b = rng.normal(size=(20, 4)), rng.normal(size=4), float(rng.normal())
    paper = 1 / (1 + np.exp(-(X @ w + b)))
    got = predict_proba(X, w, b)
    assert np.allclose(got, paper), "predict_proba is not sigmoid(X @ w + b)"
print("predict_proba is the logistic function of X @ w + b")
