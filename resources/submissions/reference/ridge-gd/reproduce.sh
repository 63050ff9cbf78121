#!/usr/bin/env bash
# Reproduce all numbers of the paper; writes results.json in the working directory.
set -euo pipefail
python3 main.py --config config.json --out results.json
