"""`inertia` and the adjusted Rand index (`ari`)."""

import numpy as np


def inertia(X, centroids, labels):
    """Sum of squared distances of the points to their assigned centroids."""
    return float(np.sum((X - centroids[labels]) ** 2))


def _pairs(counts):
    return counts * (counts - 1) / 2


def adjusted_rand_index(labels_true, labels_pred):
    """Hubert and Arabie's adjusted Rand index from the contingency table."""
    _, t = np.unique(labels_true, return_inverse=True)
    _, p = np.unique(labels_pred, return_inverse=True)
    table = np.zeros((t.max() + 1, p.max() + 1))
    np.add.at(table, (t, p), 1)
    index = _pairs(table).sum()
    rows = _pairs(table.sum(axis=1)).sum()
    cols = _pairs(table.sum(axis=0)).sum()
    expected = rows * cols / _pairs(len(labels_true))
    maximum = (rows + cols) / 2
    return float((index - expected) / (maximum - expected))
