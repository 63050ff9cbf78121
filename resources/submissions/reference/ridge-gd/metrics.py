"""Test-split metrics."""

import numpy as np


def rmse(y, y_pred):
    return float(np.sqrt(np.mean((y_pred - y) ** 2)))


def r2_score(y, y_pred):
    return float(1 - np.sum((y - y_pred) ** 2) / np.sum((y - np.mean(y)) ** 2))


def evaluate(y, y_pred):
    return {"rmse": rmse(y, y_pred), "r2": r2_score(y, y_pred)}
