"""Score submissions written apart from the judges: honest ones must keep their credit, hostile ones
must not gain it (docs/checks.md, "Measured on cases the judges' authors did not write").

    .venv/bin/python benchmarks/submissions.py --cases DIR [--judges static,exec] [--workers 2]

``DIR/cases.yaml`` lists ``{paper, case, kind: honest|hostile, what}``; each case is a submission
folder ``DIR/<paper>/<case>/`` for a demo paper (resources/papers/<paper>). Every case, and the
paper's bundled reference and drifted submissions, runs through the project's execute stage (bwrap,
the sandbox Python env) once and is judged by each judge through :func:`sabench.judges.run.run_judge`
(so an untraced run is capped as in the workflow), then scored with the tables' rule. A case is
``ok`` when an honest one scores at least 0.95 of the reference's score, and a hostile one at most
``max(0.2, drifted + 0.05)`` (the gaming limit of benchmarks/gaming.py). Prints one line per case
and judge, ``case: paper=<p> case=<c> kind=<k> judge=<j> score=<x> bound=<b> ok=<yes|no>
status=<execution status>``, then ``submissions: honest_ok=<a>/<n> hostile_ok=<b>/<m>``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml
from gaming import execute, overall_score

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sabench.judges.run import run_judge  # noqa: E402
from sabench.sandbox.settings import default_python_env  # noqa: E402
from sabench.saus import import_paper_saus  # noqa: E402

PAPERS = REPO / "resources" / "papers"
BUNDLED = {
    "reference": REPO / "resources/submissions/reference",
    "drifted": REPO / "resources/submissions/drifted",
}
HONEST_SHARE = 0.95


def score_case(
    source: Path, paper: str, name: str, judges: list[str], work: Path
) -> tuple[dict[str, float], str]:
    """Per judge the overall score of one submission, and its execution status."""
    saus = import_paper_saus(PAPERS / paper)
    sub = work / "submission"
    shutil.copytree(source, sub, symlinks=True)
    execution, _ = execute(sub, work / "run", 120)
    runtime = {"backend": "bwrap", "python_env": default_python_env()}
    out = {}
    for judge in judges:
        try:
            found = run_judge(
                judge, {}, sub, saus, execution, run_dir=work / "run", runtime=runtime
            )
        except Exception as exc:  # a fault (a sandbox failing): redone in a workflow, never scored
            print(f"[{paper}/{name}] {judge}: {type(exc).__name__}: {exc}", file=sys.stderr)
            out[judge] = float("nan")
            continue
        out[judge] = overall_score(found, name, paper, judge)
    return out, str((execution or {}).get("status"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=Path, required=True)
    parser.add_argument("--judges", default="static,exec")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    judges = args.judges.split(",")
    cases: list[dict[str, Any]] = yaml.safe_load((args.cases / "cases.yaml").read_text())
    jobs = [(BUNDLED[b] / p, p, b) for p in sorted({c["paper"] for c in cases}) for b in BUNDLED]
    jobs += [(args.cases / c["paper"] / c["case"], c["paper"], c["case"]) for c in cases]
    with tempfile.TemporaryDirectory() as tmp:

        def one(job: tuple[Path, str, str]) -> tuple[str, str, dict[str, float], str]:
            source, paper, name = job
            scores, status = score_case(source, paper, name, judges, Path(tmp) / paper / name)
            return paper, name, scores, status

        with ThreadPoolExecutor(max_workers=max(1, args.workers)) as pool:
            results = {(p, n): (s, st) for p, n, s, st in pool.map(one, jobs)}
    ok = {"honest": [0, 0], "hostile": [0, 0]}
    for c in cases:
        paper, name, kind = c["paper"], c["case"], c["kind"]
        scores, status = results[(paper, name)]
        for judge in judges:
            ref = results[(paper, "reference")][0][judge]
            drifted = results[(paper, "drifted")][0][judge]
            score = scores[judge]
            if kind == "honest":
                bound, good = HONEST_SHARE * ref, score >= HONEST_SHARE * ref
            else:
                bound = max(0.2, drifted + 0.05)
                good = score <= bound
            ok[kind][0] += good
            ok[kind][1] += 1
            print(
                f"case: paper={paper} case={name} kind={kind} judge={judge} score={score:.3f}"
                f" bound={bound:.3f} ok={'yes' if good else 'no'} status={status}"
            )
    for paper in sorted({c["paper"] for c in cases}):
        for name in BUNDLED:
            scores, status = results[(paper, name)]
            shown = " ".join(f"{j}={s:.3f}" for j, s in scores.items())
            print(f"bundled: paper={paper} {name} {shown} status={status}")
    print(
        f"submissions: honest_ok={ok['honest'][0]}/{ok['honest'][1]}"
        f" hostile_ok={ok['hostile'][0]}/{ok['hostile'][1]}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
