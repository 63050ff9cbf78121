"""k-means++ versus random seeding of Lloyd's algorithm."""

import json
import sys

import numpy as np

from blobs import generate_blobs, standardise
from config import DATASETS, MAX_ITER, N_INIT, SEED, TOL
from kmeans import fit_kmeans, kmeans_plusplus_init, random_init
from metrics import adjusted_rand_index

INIT_METHODS = {"kmeans_pp": kmeans_plusplus_init, "random_init": random_init}


def evaluate(best, restarts, labels_true):
    """Best-restart inertia and ari; inertia and iterations averaged over the restarts."""
    value, _, labels = best
    return {
        "inertia": value,
        "ari": adjusted_rand_index(labels_true, labels),
        "mean_inertia": float(np.mean([r[0] for r in restarts])),
        "mean_iterations": float(np.mean([r[1] for r in restarts])),
    }


def main(out="results.json"):
    results = {}
    for name, spec in DATASETS.items():
        X, y = generate_blobs(spec, np.random.default_rng(SEED))
        X = standardise(X)
        for method, init in INIT_METHODS.items():
            rng = np.random.default_rng(SEED)
            best, restarts = fit_kmeans(X, spec["n_clusters"], init, N_INIT, MAX_ITER, TOL, rng)
            for metric, value in evaluate(best, restarts, y).items():
                results[f"{name}.{method}.{metric}"] = round(value, 6)
        print(name, {k: v for k, v in results.items() if k.startswith(name)})
    with open(out, "w") as fh:
        json.dump(results, fh, indent=2, sort_keys=True)
        fh.write("\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
