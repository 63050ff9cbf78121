"""logreg-earlystop-D4-001: split -> standardise, with statistics from the training split only.

Runs `run_experiment.main` as reproduce.sh does, with `split_data` and `standardise` wrapped; stops
after the first standardisation. The calls are read per caller (a thread of a process of the code
under test, which calls the wrappers from a thread of its own here): datasets run in a pool
interleave, and each caller stops at its own first standardisation.
"""

import contextlib
import threading

import numpy as np
import run_experiment


class Done(Exception):
    pass


events = {}  # caller -> its calls, in order
real_split, real_standardise = run_experiment.split_data, run_experiment.standardise


def split_data(*args, **kwargs):
    out = real_split(*args, **kwargs)
    events.setdefault(threading.get_ident(), []).append(("split", out))
    return out


def standardise(*args, **kwargs):
    out = real_standardise(*args, **kwargs)
    events.setdefault(threading.get_ident(), []).append(("standardise", (args, out)))
    raise Done


run_experiment.split_data, run_experiment.standardise = split_data, standardise
with contextlib.suppress(Done):
    run_experiment.main(["--out", "/tmp/results.json"])
assert events, "calls: none"
for calls in events.values():
    kinds = [kind for kind, _ in calls]
    assert kinds[:2] == ["split", "standardise"], f"calls: {' -> '.join(kinds)}"
    (X_train, _), (X_val, _), (X_test, _) = calls[0][1]
    args, outputs = calls[1][1]
    assert np.array_equal(args[0], X_train), "standardise was not given the training split first"
    mu, sd = X_train.mean(axis=0), X_train.std(axis=0)
    for X, Z in zip((X_train, X_val, X_test), outputs, strict=True):
        assert np.allclose(Z, (X - mu) / sd), "a split is not mapped with the training statistics"
print("split, then standardise with the training split's statistics")
