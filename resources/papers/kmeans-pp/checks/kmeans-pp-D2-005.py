"""kmeans-pp-D2-005: inertia = sum((X - centroids[labels]) ** 2); the restart with the lowest inertia
is kept.

Calls `metrics.inertia` on random data and `kmeans.fit_kmeans` with random seeding.
"""

import numpy as np
from kmeans import fit_kmeans, random_init
from metrics import inertia

rng = np.random.default_rng(4)
X, centroids = rng.normal(size=(60, 2)), rng.normal(size=(3, 2))
labels = rng.integers(0, 3, size=60)
paper = float(np.sum((X - centroids[labels]) ** 2))
assert np.isclose(inertia(X, centroids, labels), paper), "inertia differs from the paper's formula"

best, restarts = fit_kmeans(X, 3, random_init, 6, 100, 1e-4, rng)
values = [float(r[0]) for r in restarts]
assert len(values) == 6, f"{len(values)} restarts recorded, 6 asked"
assert np.isclose(float(best[0]), min(values)), (
    f"kept inertia {best[0]:.4g}, lowest {min(values):.4g}"
)
print("inertia is the paper's; the lowest-inertia restart is kept")
