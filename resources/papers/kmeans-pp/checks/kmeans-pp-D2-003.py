"""kmeans-pp-D2-003: each point goes to the centroid at the smallest squared Euclidean distance.

Calls `kmeans.assign_labels(X, centroids)` on random points.
"""

import numpy as np
from kmeans import assign_labels

rng = np.random.default_rng(2)
for k in (2, 3, 5):
    X, centroids = rng.normal(size=(200, 2)) * 5, rng.normal(size=(k, 2)) * 5
    paper = np.argmin(((X[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=2), axis=1)
    got = np.asarray(assign_labels(X, centroids))
    assert np.array_equal(got, paper), f"k={k}: {int((got != paper).sum())} point(s) misassigned"
print("assign_labels picks the nearest centroid")
