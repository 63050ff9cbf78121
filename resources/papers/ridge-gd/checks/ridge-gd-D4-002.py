"""ridge-gd-D4-002: standardisation statistics come from the training split only, after the split.

Runs `main.main` with `split_data` and `standardise` wrapped: standardise must run after the split,
on the training rows, and map the test rows with the training mean and standard deviation. The
calls are read per caller (a thread of a process of the code under test, which calls the wrappers
from a thread of its own here): datasets run in a pool interleave.
"""

import threading

import main
import numpy as np

events = {}  # caller -> its calls, in order
real_split, real_standardise = main.split_data, main.standardise


def split_data(*args, **kwargs):
    out = real_split(*args, **kwargs)
    events.setdefault(threading.get_ident(), []).append(("split", out))
    return out


def standardise(*args, **kwargs):
    out = real_standardise(*args, **kwargs)
    events.setdefault(threading.get_ident(), []).append(("standardise", (args, out)))
    return out


main.split_data, main.standardise = split_data, standardise
main.main(["--config", "config.json", "--out", "/tmp/results.json"])

kinds = [kind for calls in events.values() for kind, _ in calls]
assert "split" in kinds and "standardise" in kinds, f"calls seen: {kinds}"
for calls in events.values():
    for i, (kind, payload) in enumerate(calls):
        if kind != "standardise":
            continue
        assert i > 0 and calls[i - 1][0] == "split", "standardise ran before the data were split"
        X_train, X_test = calls[i - 1][1][0], calls[i - 1][1][1]
        args, (Z_train, Z_test) = payload
        assert np.array_equal(args[0], X_train), "standardise was not given the training split"
        mu, sd = X_train.mean(axis=0), X_train.std(axis=0)
        assert np.allclose(Z_train, (X_train - mu) / sd), (
            "training split not z-scored with its stats"
        )
        assert np.allclose(Z_test, (X_test - mu) / sd), (
            "test split not mapped with the training stats"
        )
print("split, then standardise with the training split's statistics, for every dataset")
