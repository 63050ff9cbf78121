"""Early stopping versus full training and the majority class, on two synthetic datasets."""

import argparse
import json
from pathlib import Path

import numpy as np

from esl.baselines import fit_majority_class, predict_majority_class
from esl.data import DATASETS, make_blobs, split_data, standardise
from esl.metrics import accuracy, log_loss
from esl.model import predict, predict_proba
from esl.train import train_with_early_stopping, train_without_early_stopping


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lr", type=float, default=0.1, help="SGD learning rate")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-epochs", type=int, default=100)
    parser.add_argument("--patience", type=int, default=5)
    parser.add_argument("--min-delta", type=float, default=1e-4)
    parser.add_argument("--l2-lambda", type=float, default=0.01, help="L2 strength lam")
    parser.add_argument("--val-fraction", type=float, default=0.2)
    parser.add_argument("--test-fraction", type=float, default=0.2)
    parser.add_argument("--threshold", type=float, default=0.5, help="decision threshold")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="results.json")
    return parser.parse_args(argv)


def evaluate(y_test, y_pred, p_test):
    return {"accuracy": accuracy(y_test, y_pred), "log_loss": log_loss(y_test, p_test)}


def main(argv=None):
    args = parse_args(argv)
    results = {}
    for name in DATASETS:
        rng = np.random.default_rng(args.seed)
        X, y = make_blobs(name, rng)
        (X_train, y_train), (X_val, y_val), (X_test, y_test) = split_data(
            X, y, args.val_fraction, args.test_fraction, rng
        )
        X_train, X_val, X_test = standardise(X_train, X_val, X_test)

        w, b, best_epoch, _ = train_with_early_stopping(
            X_train, y_train, X_val, y_val, args.lr, args.batch_size, args.max_epochs,
            args.patience, args.min_delta, args.l2_lambda, rng,
        )
        w_full, b_full = train_without_early_stopping(
            X_train, y_train, args.lr, args.batch_size, args.max_epochs, args.l2_lambda, rng
        )
        majority = fit_majority_class(y_train)

        runs = {
            "early_stopping": (predict(X_test, w, b, args.threshold), predict_proba(X_test, w, b)),
            "no_early_stopping": (
                predict(X_test, w_full, b_full, args.threshold),
                predict_proba(X_test, w_full, b_full),
            ),
            "majority_class": (
                predict_majority_class(majority, len(y_test)),
                np.full(len(y_test), np.mean(y_train)),
            ),
        }
        for method, (y_pred, p_test) in runs.items():
            for metric, value in evaluate(y_test, y_pred, p_test).items():
                results[f"{name}.{method}.{metric}"] = round(value, 6)
        results[f"{name}.early_stopping.best_epoch"] = best_epoch
        print(name, {m: results[f"{name}.{m}.accuracy"] for m in runs}, "best epoch", best_epoch)

    Path(args.out).write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
