"""Synthetic regression datasets, the train/test split and feature standardisation."""

import numpy as np


def make_linear_gauss(spec, rng):
    """`linear-gauss`: y = X @ w_true + intercept + noise, X and w_true standard normal."""
    n, d = spec["n_samples"], spec["n_features"]
    X = rng.normal(size=(n, d))
    w_true = rng.normal(size=d)
    y = X @ w_true + spec["intercept"] + rng.normal(scale=spec["noise_std"], size=n)
    return X, y


def make_sine_noisy(spec, rng):
    """`sine-noisy`: y = sin(x) + noise; the features are the powers x, x^2, ..., x^degree."""
    n = spec["n_samples"]
    x = rng.uniform(spec["x_low"], spec["x_high"], size=n)
    y = np.sin(x) + rng.normal(scale=spec["noise_std"], size=n)
    X = np.stack([x**k for k in range(1, spec["degree"] + 1)], axis=1)
    return X, y


DATASETS = {"linear-gauss": make_linear_gauss, "sine-noisy": make_sine_noisy}


def generate_dataset(name, spec, rng):
    return DATASETS[name](spec, rng)


def split_data(X, y, test_fraction, rng):
    """Random split: shuffle, then the last `test_fraction` of the samples is the test split."""
    n = len(y)
    order = rng.permutation(n)
    n_test = int(round(test_fraction * n))
    train_idx, test_idx = order[: n - n_test], order[n - n_test :]
    return X[train_idx], X[test_idx], y[train_idx], y[test_idx]


def standardise(X_train, X_test):
    """z-score both splits with the mean and standard deviation of the training split only."""
    mu = X_train.mean(axis=0)
    sigma = X_train.std(axis=0)
    return (X_train - mu) / sigma, (X_test - mu) / sigma
