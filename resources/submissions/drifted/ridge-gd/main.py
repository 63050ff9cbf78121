"""Ridge regression by gradient descent versus the closed-form solution and a mean predictor."""

import argparse
import json
from pathlib import Path

import numpy as np

from baselines import fit_closed_form, fit_mean_predictor, predict_mean
from data import generate_dataset, split_data, standardise
from metrics import evaluate
from model import predict, train_gd


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", default="config.json")
    parser.add_argument("--out", default="results.json")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    cfg = json.loads(Path(args.config).read_text())
    lam = cfg["l2_lambda"]
    results = {}
    for name, spec in cfg["datasets"].items():
        rng = np.random.default_rng(cfg["seed"])
        X, y = generate_dataset(name, spec, rng)
        X = standardise(X)
        X_train, X_test, y_train, y_test = split_data(X, y, cfg["test_fraction"], rng)

        w, b, history = train_gd(X_train, y_train, cfg["learning_rate"], cfg["epochs"], lam)
        w_cf, b_cf = fit_closed_form(X_train, y_train, lam)
        mean = fit_mean_predictor(y_train)

        predictions = {
            "ridge_gd": predict(X_test, w, b),
            "closed_form": predict(X_test, w_cf, b_cf),
            "mean_predictor": predict_mean(mean, len(y_test)),
        }
        for method, y_pred in predictions.items():
            for metric, value in evaluate(y_test, y_pred).items():
                results[f"{name}.{method}.{metric}"] = round(value, 6)
        results[f"{name}.ridge_gd.final_loss"] = round(history[-1], 6)
        print(name, {m: results[f"{name}.{m}.rmse"] for m in predictions})

    Path(args.out).write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
