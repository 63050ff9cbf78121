"""``python -m sabench.aggregate``: the aggregate rule's command (and a user's, by hand)."""

import sys

from sabench.aggregate import main

sys.exit(main())
