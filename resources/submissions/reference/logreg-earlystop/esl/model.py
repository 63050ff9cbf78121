"""Logistic regression: probabilities, the regularised objective and its gradient."""

import numpy as np

EPS = 1e-12


def sigmoid(z):
    z = np.clip(z, -500, 500)
    return 1 / (1 + np.exp(-z))


def predict_proba(X, w, b):
    return sigmoid(X @ w + b)


def predict(X, w, b, threshold):
    return (predict_proba(X, w, b) >= threshold).astype(float)


def objective(X, y, w, b, lam):
    """Binary cross-entropy plus the L2 penalty on w (the bias is not penalised)."""
    p = np.clip(predict_proba(X, w, b), EPS, 1 - EPS)
    loss = -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)) + lam * np.sum(w ** 2)
    return loss


def gradients(X, y, w, b, lam):
    p = predict_proba(X, w, b)
    grad_w = X.T @ (p - y) / len(y) + 2 * lam * w
    grad_b = np.mean(p - y)
    return grad_w, grad_b
