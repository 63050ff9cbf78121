"""kmeans-pp-D2-001: each further centroid is drawn among the points with probability d2 / sum(d2).

Seeds two centroids from four points 4000 times with `kmeans.kmeans_plusplus_init(X, 2, rng)` and
compares how often each (first, second) pair comes up with the D^2 probabilities.
"""

import numpy as np
from kmeans import kmeans_plusplus_init

X = np.array([[0.0, 0.0], [1.0, 0.0], [4.0, 0.0], [10.0, 0.0]])
n, draws = len(X), 4000
d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)
paper = d2 / d2.sum(axis=1, keepdims=True) / n  # P(first = i, second = j)

rng = np.random.default_rng(0)
counts = np.zeros((n, n))
for _ in range(draws):
    centroids = np.asarray(kmeans_plusplus_init(X, 2, rng))
    i, j = (int(np.flatnonzero((c == X).all(axis=1))[0]) for c in centroids)
    counts[i, j] += 1
freq = counts / draws
gap = float(np.abs(freq - paper).max())
assert gap < 0.03, f"pair frequencies differ from D^2 sampling by up to {gap:.3f}"
print(f"D^2 sampling: pair frequencies within {gap:.3f} of the paper's probabilities")
