"""Lloyd's algorithm with k-means++ or random seeding, restarted n_init times."""

import numpy as np

from metrics import inertia


def squared_distances(X, centroids):
    return ((X[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=2)


def kmeans_plusplus_init(X, k, rng):
    """k-means++ seeding: the first centroid uniformly at random, the others by D^2 sampling."""
    # TODO: implement D^2 sampling
    raise NotImplementedError("k-means++ seeding")


def random_init(X, k, rng):
    """The baseline: k distinct data points chosen uniformly at random."""
    return X[rng.choice(len(X), size=k, replace=False)].copy()


def assign_labels(X, centroids):
    """Each point goes to the centroid at the smallest squared Euclidean distance."""
    return np.argmin(squared_distances(X, centroids), axis=1)


def update_centroids(X, labels, centroids):
    """Each centroid moves to the mean of its points; an empty cluster keeps its centroid."""
    new_centroids = centroids.copy()
    for j in range(len(centroids)):
        if np.any(labels == j):
            new_centroids[j] = np.median(X[labels == j], axis=0)
    return new_centroids


def lloyd(X, centroids, max_iter, tol):
    """Alternate assignment and update until the squared centroid shift falls below tol."""
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        labels = assign_labels(X, centroids)
        new_centroids = update_centroids(X, labels, centroids)
        converged = np.sum((new_centroids - centroids) ** 2) < tol
        centroids = new_centroids
        if converged:
            break
    return centroids, assign_labels(X, centroids), n_iter


def fit_kmeans(X, k, init, n_init, max_iter, tol, rng):
    """n_init restarts of init -> lloyd; keeps the restart with the lowest inertia."""
    best = None
    restarts = []
    for _ in range(n_init):
        centroids = init(X, k, rng)
        centroids, labels, n_iter = lloyd(X, centroids, max_iter, tol)
        value = inertia(X, centroids, labels)
        restarts.append((value, n_iter))
        if best is None or value < best[0]:
            best = (value, centroids, labels)
    return best, restarts
