"""ridge-gd-D4-002: standardisation statistics come from the training split only, after the split.

Runs `main.main` with `split_data` and `standardise` wrapped: standardise must run after the split,
on the training rows, and map the test rows with the training mean and standard deviation.
"""

import main
import numpy as np

events = []
real_split, real_standardise = main.split_data, main.standardise


def split_data(*args, **kwargs):
    out = real_split(*args, **kwargs)
    events.append(("split", out))
    return out


def standardise(*args, **kwargs):
    out = real_standardise(*args, **kwargs)
    events.append(("standardise", (args, out)))
    return out


main.split_data, main.standardise = split_data, standardise
main.main(["--config", "config.json", "--out", "/tmp/results.json"])

kinds = [kind for kind, _ in events]
assert "split" in kinds and "standardise" in kinds, f"calls seen: {kinds}"
for i, (kind, payload) in enumerate(events):
    if kind != "standardise":
        continue
    assert i > 0 and events[i - 1][0] == "split", "standardise ran before the data were split"
    X_train, X_test = events[i - 1][1][0], events[i - 1][1][1]
    args, (Z_train, Z_test) = payload
    assert np.array_equal(args[0], X_train), "standardise was not given the training split"
    mu, sd = X_train.mean(axis=0), X_train.std(axis=0)
    assert np.allclose(Z_train, (X_train - mu) / sd), "training split not z-scored with its stats"
    assert np.allclose(Z_test, (X_test - mu) / sd), "test split not mapped with the training stats"
print("split, then standardise with the training split's statistics, for every dataset")
