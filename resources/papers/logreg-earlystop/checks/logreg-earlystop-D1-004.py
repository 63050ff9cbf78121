"""logreg-earlystop-D1-004: early stopping uses a patience of 5 epochs.

Runs `run_experiment.main` as reproduce.sh does and records the patience its first early-stopped
training is given (the training itself is skipped).
"""

import contextlib
import inspect

import run_experiment


class Seen(Exception):
    pass


real = run_experiment.train_with_early_stopping
given = []


def spy(*args, **kwargs):
    given.append(inspect.signature(real).bind(*args, **kwargs).arguments)
    raise Seen


run_experiment.train_with_early_stopping = spy
with contextlib.suppress(Seen):
    run_experiment.main(["--out", "/tmp/results.json"])
assert given, "run_experiment.main never calls train_with_early_stopping"
patience = given[0]["patience"]
assert patience == 5, f"early stopping runs with patience {patience}, the paper's is 5"
print("patience 5")
