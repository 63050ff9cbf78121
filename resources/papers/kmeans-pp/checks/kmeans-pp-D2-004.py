"""kmeans-pp-D2-004: every centroid moves to the mean of its points, X[labels == j].mean(axis=0);
an empty cluster keeps its previous centroid.

Calls `kmeans.update_centroids(X, labels, centroids)` on random points, one cluster left empty.
"""

import numpy as np
from kmeans import update_centroids

rng = np.random.default_rng(3)
X = rng.exponential(size=(90, 2))  # skewed: mean and median differ
labels = rng.integers(0, 3, size=90)  # cluster 3 of 4 is empty
centroids = rng.normal(size=(4, 2))
got = np.asarray(update_centroids(X, labels, centroids.copy()))
for j in range(3):
    paper = X[labels == j].mean(axis=0)
    assert np.allclose(got[j], paper), f"centroid {j} is {got[j]}, the mean of its points {paper}"
assert np.allclose(got[3], centroids[3]), "the empty cluster's centroid moved"
print("update_centroids: means, empty cluster kept")
