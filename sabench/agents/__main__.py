"""python -m sabench.agents: run one agent on one paper."""

import sys

from sabench.agents import main

sys.exit(main())
