"""Screenshots of each page kind of a report, for docs/report/ (headless Chromium, no network).

    .venv/bin/python scripts/dev/report_screenshots.py [--report results/report] [--out docs/report]

Run after ``make demo``: the pages are the demo's (the drifted agent on ridge-gd, its planted
learning-rate drift filtered to the top; its model.py with the lines a judge cites marked; its code
beside the reference's). A fragment naming an element (``#sau-...``) gives Chromium's headless
screenshot a blank page: use the pages' own hash settings (``#q=``, ``#L14-15``, ``#a=..&b=..``).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: page kind -> (page, fragment, window height: the run page is tall enough to show the filtered
#: SAU, its verdicts, the paper's sentence and the cited code under the run's scores)
PAGES = {
    "summary": ("index.html", "", 1000),
    "run": ("site/runs/drifted/ridge-gd/0.html", "#q=ridge-gd-D1-001", 2000),
    "paper": ("site/papers/ridge-gd.html", "", 1000),
    "disagreements": ("site/disagreements/ridge-gd.html", "", 1000),
    "agent": ("site/agents/drifted.html", "", 1000),
    "legend": ("site/legend.html", "", 1000),
    "file": ("site/files/drifted/ridge-gd/0/model.py.html", "#L14-15", 1000),
    "diff": ("site/diff/ridge-gd.html", "#a=0&b=2&file=model.py", 1000),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", type=Path, default=Path("results/report"))
    parser.add_argument("--out", type=Path, default=Path("docs/report"))
    parser.add_argument("--width", type=int, default=1100, help="window width in pixels")
    args = parser.parse_args()
    binary = next(filter(None, map(shutil.which, ("chromium", "chromium-browser"))), None)
    if binary is None:
        print("error: chromium: not installed (apt-get install chromium)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    for name, (page, fragment, height) in PAGES.items():
        path = args.report / page
        if not path.is_file():
            print(f"error: {path}: missing (run make demo first)", file=sys.stderr)
            return 2
        with tempfile.TemporaryDirectory() as profile:
            argv = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--user-data-dir={profile}", f"--window-size={args.width},{height}",
                    f"--screenshot={(args.out / f'{name}.png').resolve()}",
                    path.resolve().as_uri() + fragment]  # fmt: skip
            subprocess.run(argv, check=True, capture_output=True, timeout=120)
        print(args.out / f"{name}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
