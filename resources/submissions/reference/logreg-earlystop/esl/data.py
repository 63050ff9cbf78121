"""The `blobs-2` and `blobs-imbalanced` datasets, the three-way split and standardisation."""

import numpy as np

DATASETS = {
    "blobs-2": {"n_samples": 600, "n_features": 5, "positive_fraction": 0.5, "separation": 0.75},
    "blobs-imbalanced": {
        "n_samples": 800,
        "n_features": 5,
        "positive_fraction": 0.2,
        "separation": 0.5,
    },
}


def make_blobs(name, rng):
    """Two Gaussian classes with unit variance, means at -separation and +separation per feature."""
    spec = DATASETS[name]
    n, d = spec["n_samples"], spec["n_features"]
    y = (rng.random(n) < spec["positive_fraction"]).astype(float)
    means = np.where(y[:, None] == 1.0, spec["separation"], -spec["separation"])
    X = means + rng.normal(size=(n, d))
    return X, y


def split_data(X, y, val_fraction, test_fraction, rng):
    """Shuffle once, then cut into training, validation and test splits."""
    n = len(y)
    order = rng.permutation(n)
    n_val = int(round(val_fraction * n))
    n_test = int(round(test_fraction * n))
    n_train = n - n_val - n_test
    train, val, test = np.split(order, [n_train, n_train + n_val])
    return (X[train], y[train]), (X[val], y[val]), (X[test], y[test])


def standardise(X_train, *others):
    """z-score every split with the training split's mean and standard deviation."""
    mu = X_train.mean(axis=0)
    sigma = X_train.std(axis=0)
    return [(X - mu) / sigma for X in (X_train, *others)]
