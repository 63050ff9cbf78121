"""The drift explorer: a static site over the result tables, from a number to its evidence.

Pages (jinja2 templates in ``sabench/templates/report/``), all under ``<report>/site/``:
``index.html`` (the summary; ``<report>/index.html`` is the same page with its links into
``site/``), ``agents/<agent>.html``, ``papers/<paper>.html`` (the agents side by side),
``runs/<agent>/<paper>/<seed>.html`` (every SAU: the paper's sentence beside each judge's verdict
and the cited code), ``disagreements.html`` and ``disagreements/<paper>.html``. The tables give the
numbers; the run folders of the results root give the code, the execution log and the transcript.
It opens from ``file://``: relative links, one local stylesheet and script, no network.

Deterministic: the pages depend only on the tables, the run folders and the checkout (version,
commit), never on the clock, so a rerun on unchanged inputs rewrites identical files.
"""

from sabench.report_site.build import build_site
from sabench.report_site.formatting import slug

__all__ = ["build_site", "slug"]
