"""The `majority_class` baseline."""

import numpy as np


def fit_majority_class(y_train):
    """The most frequent label of the training split."""
    return float(np.mean(y_train) >= 0.5)


def predict_majority_class(majority, n):
    return np.full(n, majority)
