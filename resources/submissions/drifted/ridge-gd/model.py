"""Ridge regression trained by full-batch gradient descent."""

import numpy as np


def ridge_loss(X, y, w, b, lam):
    """Mean squared error plus the L2 penalty on the weights (the intercept is not penalised)."""
    loss = np.mean((X @ w + b - y) ** 2) + lam * np.sum(np.abs(w))
    return loss


def ridge_gradients(X, y, w, b, lam):
    n = X.shape[0]
    grad_w = 2 * X.T @ (X @ w + b - y) / n + lam * np.sign(w)
    grad_b = 2 * np.mean(X @ w + b - y)
    return grad_w, grad_b


def train_gd(X, y, lr, epochs, lam):
    """Full-batch gradient descent from w = 0, b = 0; one step per epoch."""
    w = np.zeros(X.shape[1])
    b = 0.0
    history = []
    for _ in range(epochs):
        grad_w, grad_b = ridge_gradients(X, y, w, b, lam)
        w = w - lr * grad_w
        b = b - lr * grad_b
        history.append(float(ridge_loss(X, y, w, b, lam)))
    return w, b, history


def predict(X, w, b):
    return X @ w + b
