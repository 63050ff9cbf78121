#!/usr/bin/env bash
# Runs every experiment of the paper with the paper's hyperparameters (the argparse defaults).
set -euo pipefail
python3 run_experiment.py --out results.json
