"""logreg-earlystop-D2-005: stop when the validation log-loss has not improved by more than
min_delta for `patience` epochs in a row; restore the weights of the best validation epoch.

Trains with `esl.train.train_with_early_stopping` on a small noisy problem, replays the paper's
stopping rule on the validation losses it records, and checks the epoch it stopped at, the best
epoch and the weights it returns.
"""

import numpy as np
from esl.metrics import log_loss
from esl.model import predict_proba
from esl.train import train_with_early_stopping

rng = np.random.default_rng(5)
n, d = 120, 8
w_true = rng.normal(size=d)
X = rng.normal(size=(n, d))
y = (rng.random(n) < 1 / (1 + np.exp(-X @ w_true))).astype(float)
X_tr, y_tr, X_val, y_val = X[:60], y[:60], X[60:], y[60:]
patience, min_delta, max_epochs = 3, 1e-4, 60
w, b, best_epoch, history = train_with_early_stopping(
    X_tr, y_tr, X_val, y_val, 0.5, 8, max_epochs, patience, min_delta, 0.0, rng
)
val = [float(h[1]) for h in history]

best, best_at, wait, stop_at = np.inf, 0, 0, max_epochs
for epoch, loss in enumerate(val, 1):
    if loss < best - min_delta:
        best, best_at, wait = loss, epoch, 0
    else:
        wait += 1
        if wait >= patience:
            stop_at = epoch
            break
assert len(val) == stop_at, f"trained {len(val)} epochs; the stopping rule stops at {stop_at}"
assert best_epoch == best_at, f"best epoch {best_epoch}; the best validation epoch is {best_at}"
restored = log_loss(y_val, predict_proba(X_val, w, b))
assert np.isclose(restored, val[best_at - 1]), "the returned weights are not the best epoch's"
print(f"stopped at epoch {stop_at}, restored epoch {best_at}")
