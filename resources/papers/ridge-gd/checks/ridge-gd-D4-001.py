"""ridge-gd-D4-001: for every dataset the steps run generate -> split -> standardise -> train ->
evaluate.

Runs the submission's `main.main` (as reproduce.sh does) with its steps wrapped, and checks the
order in which they are first called for each dataset. Each caller (a thread of a process of the
code under test: datasets run in a pool interleave) calls the wrappers from a thread of its own
here, so the calls are read per caller.
"""

import threading

import main

STEPS = ("generate_dataset", "split_data", "standardise", "train_gd", "evaluate")
calls = {}  # caller -> the steps it called, in order


def spy(name):
    real = getattr(main, name)

    def wrapper(*args, **kwargs):
        calls.setdefault(threading.get_ident(), []).append(name)
        return real(*args, **kwargs)

    return wrapper


for step in STEPS:
    setattr(main, step, spy(step))
main.main(["--config", "config.json", "--out", "/tmp/results.json"])

runs = []  # the calls of each dataset start with its generate_dataset, in the caller that made it
for steps in calls.values():
    run = None
    for name in steps:
        if name == "generate_dataset":
            run = []
            runs.append(run)
        if run is not None:
            run.append(name)
assert len(runs) == 2, f"expected two datasets, saw {len(runs)} generate_dataset call(s)"
for run in runs:
    first = [s for s in STEPS if s in run]
    order = sorted(first, key=run.index)
    assert order == list(STEPS), f"steps ran in the order {' -> '.join(order)}"
print("generate -> split -> standardise -> train -> evaluate, for both datasets")
