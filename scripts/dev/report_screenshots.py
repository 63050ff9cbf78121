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

PAGES = {
    "summary": ("index.html", ""),
    "run": ("site/runs/drifted/ridge-gd/0.html", "#q=ridge-gd-D1-001"),
    "paper": ("site/papers/ridge-gd.html", ""),
    "disagreements": ("site/disagreements/ridge-gd.html", ""),
    "agent": ("site/agents/drifted.html", ""),
    "legend": ("site/legend.html", ""),
    "file": ("site/files/drifted/ridge-gd/0/model.py.html", "#L14-15"),
    "diff": ("site/diff/ridge-gd.html", "#a=0&b=2&file=model.py"),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", type=Path, default=Path("results/report"))
    parser.add_argument("--out", type=Path, default=Path("docs/report"))
    parser.add_argument("--size", default="1100,1000", help="window width,height in pixels")
    args = parser.parse_args()
    binary = next(filter(None, map(shutil.which, ("chromium", "chromium-browser"))), None)
    if binary is None:
        print("error: chromium: not installed (apt-get install chromium)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    for name, (page, fragment) in PAGES.items():
        path = args.report / page
        if not path.is_file():
            print(f"error: {path}: missing (run make demo first)", file=sys.stderr)
            return 2
        with tempfile.TemporaryDirectory() as profile:
            argv = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--user-data-dir={profile}", f"--window-size={args.size}",
                    f"--screenshot={(args.out / f'{name}.png').resolve()}",
                    path.resolve().as_uri() + fragment]  # fmt: skip
            subprocess.run(argv, check=True, capture_output=True, timeout=120)
        print(args.out / f"{name}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
