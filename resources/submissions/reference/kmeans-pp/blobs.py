"""Isotropic Gaussian blobs and z-scoring."""

import numpy as np

from config import CENTER_BOX


def generate_blobs(spec, rng):
    """Equal-sized clusters around centres drawn uniformly in CENTER_BOX in every dimension."""
    k, d = spec["n_clusters"], spec["n_features"]
    centres = rng.uniform(CENTER_BOX[0], CENTER_BOX[1], size=(k, d))
    labels = rng.permutation(np.arange(spec["n_samples"]) % k)
    X = centres[labels] + rng.normal(scale=spec["cluster_std"], size=(spec["n_samples"], d))
    return X, labels


def standardise(X):
    """z-score every feature over the whole dataset (clustering has no held-out split)."""
    return (X - X.mean(axis=0)) / X.std(axis=0)
