"""Mini-batch SGD with and without early stopping on the validation split."""

import numpy as np

from esl.metrics import log_loss
from esl.model import gradients, objective, predict_proba


def sgd_epoch(X, y, w, b, lr, batch_size, lam, rng):
    """One pass over the shuffled training split in mini-batches."""
    order = rng.permutation(len(y))
    for start in range(0, len(y), batch_size):
        idx = order[start : start + batch_size]
        grad_w, grad_b = gradients(X[idx], y[idx], w, b, lam)
        w = w - lr * grad_w
        b = b - lr * grad_b
    return w, b


def train_with_early_stopping(
    X_train, y_train, X_val, y_val, lr, batch_size, max_epochs, patience, min_delta, lam, rng
):
    """Stop when the validation log-loss has not improved by more than min_delta for `patience`
    consecutive epochs; return the weights of the best validation epoch."""
    w = np.zeros(X_train.shape[1])
    b = 0.0
    best_w, best_b, best_epoch = w.copy(), b, 0
    best_val_loss = np.inf
    epochs_without_improvement = 0
    history = []
    for epoch in range(1, max_epochs + 1):
        w, b = sgd_epoch(X_train, y_train, w, b, lr, batch_size, lam, rng)
        val_loss = log_loss(y_val, predict_proba(X_val, w, b))
        history.append((float(objective(X_train, y_train, w, b, lam)), float(val_loss)))
        if val_loss < best_val_loss - min_delta:
            best_val_loss = val_loss
            best_w, best_b, best_epoch = w.copy(), b, epoch
            epochs_without_improvement = 0
        else:
            epochs_without_improvement += 1
            if epochs_without_improvement >= patience:
                break
    return best_w, best_b, best_epoch, history


def train_without_early_stopping(X_train, y_train, lr, batch_size, max_epochs, lam, rng):
    """The `no_early_stopping` baseline: the same SGD for all max_epochs epochs."""
    w = np.zeros(X_train.shape[1])
    b = 0.0
    for _ in range(max_epochs):
        w, b = sgd_epoch(X_train, y_train, w, b, lr, batch_size, lam, rng)
    return w, b
