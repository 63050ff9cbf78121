"""Hyperparameters and dataset settings (Section 3 of the paper)."""

SEED = 42
MAX_ITER = 100  # Lloyd iterations per restart
TOL = 1e-4  # convergence tolerance on the squared centroid shift
N_INIT = 10  # restarts per initialisation method
CENTER_BOX = (-10.0, 10.0)

DATASETS = {
    "blobs-3": {"n_samples": 450, "n_features": 2, "n_clusters": 3, "cluster_std": 1.0},
    "blobs-5": {"n_samples": 500, "n_features": 2, "n_clusters": 5, "cluster_std": 1.5},
}
