"""Test metrics: `accuracy` and `log_loss`."""

import numpy as np

EPS = 1e-12


def accuracy(y, y_pred):
    return float(np.mean(y == y_pred))


def log_loss(y, p):
    """Unregularised binary cross-entropy."""
    p = np.clip(p, EPS, 1 - EPS)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))
