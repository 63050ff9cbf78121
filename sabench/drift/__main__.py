"""python -m sabench.drift: drift injection on one submission or the runs of a results folder."""

import sys

from sabench.drift.evaluate import main

sys.exit(main())
