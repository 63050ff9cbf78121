"""kmeans-pp-D2-002: the first centroid is a data point chosen uniformly at random.

Seeds one centroid from five points 3000 times with `kmeans.kmeans_plusplus_init(X, 1, rng)`.
"""

import numpy as np
from kmeans import kmeans_plusplus_init

X = np.array([[0.0, 0.0], [1.0, 1.0], [5.0, 0.0], [9.0, 3.0], [20.0, 20.0]])
rng = np.random.default_rng(1)
counts = np.zeros(len(X))
for _ in range(3000):
    (c,) = np.asarray(kmeans_plusplus_init(X, 1, rng))
    hits = np.flatnonzero((c == X).all(axis=1))
    assert len(hits) == 1, f"the first centroid {c} is not a data point"
    counts[hits[0]] += 1
freq = counts / counts.sum()
assert np.abs(freq - 0.2).max() < 0.04, f"first-centroid frequencies {np.round(freq, 3)}"
print(f"first centroid uniform: frequencies {np.round(freq, 3)}")
