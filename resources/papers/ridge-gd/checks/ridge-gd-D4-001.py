"""ridge-gd-D4-001: for every dataset the steps run generate -> split -> standardise -> train ->
evaluate.

Runs the submission's `main.main` (as reproduce.sh does) with its steps wrapped, and checks the
order in which they are first called for each dataset.
"""

import main

STEPS = ("generate_dataset", "split_data", "standardise", "train_gd", "evaluate")
calls = []


def spy(name):
    real = getattr(main, name)

    def wrapper(*args, **kwargs):
        calls.append(name)
        return real(*args, **kwargs)

    return wrapper


for step in STEPS:
    setattr(main, step, spy(step))
main.main(["--config", "config.json", "--out", "/tmp/results.json"])

runs = []  # the calls of each dataset start with its generate_dataset
for name in calls:
    if name == "generate_dataset":
        runs.append([])
    if runs:
        runs[-1].append(name)
assert len(runs) == 2, f"expected two datasets, saw {len(runs)} generate_dataset call(s)"
for run in runs:
    first = [s for s in STEPS if s in run]
    order = sorted(first, key=run.index)
    assert order == list(STEPS), f"steps ran in the order {' -> '.join(order)}"
print("generate -> split -> standardise -> train -> evaluate, for both datasets")
