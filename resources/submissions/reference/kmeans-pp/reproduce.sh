#!/usr/bin/env bash
set -euo pipefail
python3 main.py results.json
