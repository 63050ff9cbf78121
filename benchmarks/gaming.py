"""Gaming submissions: can the judges be fooled by text, by tricks, by reading the checks?

    .venv/bin/python benchmarks/gaming.py [--verbose] [--judges static,exec] [--papers P ...]
        [--classes declare,unused-reference,check-reading,...] [--workers 2]

For every demo paper (resources/papers/*) it writes, in a temporary folder, submissions that hold the
paper's method only as text (class ``declare``): (a) ``values``: the claims' numbers as module
constants nobody reads; (b) ``formulas``: the claims' backticked formulas as strings and comments;
(c) ``steps``: the step names as a list nothing calls; (d) ``results``: a reproduce.sh whose script
writes the SAUs' ``expected`` numbers as literals to results.json; (e) ``all``: everything together;
(f) ``stubs`` and ``all+stubs``: functions with the claims' names whose bodies are ``pass``, ``raise
NotImplementedError`` or ``return 0``, called in the claimed order; and (g, class
``unused-reference``) the reference submission's code with its ``__main__`` blocks removed, beside a
``run.py`` that runs none of it. Beside them, the classes of tricks that benchmarks/gaming_tricks.py
generates from the honest reference and drifted submissions (check-reading, check-switching,
dead-formula, kill-checker, blob-results, judge-directed; and the run-record tricks of issue 45:
pilot-constants, overwrite-refit, value-times-zero, unopened-config, argv-switch, trace-tamper), and
the honest ``reference`` and ``drifted`` rows.

Every submission runs through the project's execute stage (:func:`sabench.execute.execute_run`,
bwrap, the sandbox Python env; the record gets the lines that ran via
``sabench.runtrace.with_lines`` where that module exists), once for all judges. Each is judged by
the static judge and the exec judge (the paper's checks on the executed copy, and its expected
results) and scored with the project's rule (mean claim score per dimension, overall = mean of the
dimensions, over the SAUs a judge judges). A judge that faults (a sandbox error: the run would be
redone, never scored) leaves NaN, counted as ``faults=``.

Prints one line per class and judge, ``gaming: class=<c> judge=<j> max_score=<x> drifted=<d>
limit=<max(0.2, d + 0.05)> ok=<yes|no>`` (d: the honest drifted score of the same paper; the paper
with the largest score - limit is shown), ``directed: flagged=<k>/<n>`` (judge-directed submissions
that :mod:`sabench.index.directed` flags), the old lines ``gaming: judge=<j> max_score=...
mean_score=...`` over classes declare and unused-reference, the references' overall, and the total
seconds. Goal: no declaring submission (a to f) above 0.2, no trick above its limit; the
references stay at 1.0.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd
from gaming_tricks import CLASSES, Files, class_of, paper_expected, read_tree, trick_variants

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sabench.index.directed import scan_tree  # noqa: E402
from sabench.judges.static import analyze_claims, judge_static  # noqa: E402
from sabench.saus import import_paper_saus  # noqa: E402
from sabench.scoring import OVERALL, run_scores  # noqa: E402

PAPERS = REPO / "resources" / "papers"
REFERENCE = REPO / "resources" / "submissions" / "reference"
DRIFTED = REPO / "resources" / "submissions" / "drifted"
STUB_BODIES = ("pass", "raise NotImplementedError", "return 0")


def _ident(words: list[str] | tuple[str, ...], fallback: str) -> str:
    name = "_".join(re.sub(r"\W", "", w) for w in words if re.sub(r"\W", "", w))
    return re.sub(r"^(\d)", r"V_\1", name) or fallback


def paper_text(saus: list[dict[str, Any]]) -> dict[str, Any]:
    """What the claims declare: named values, formulas, step names, names, expected results."""
    values: dict[str, float] = {}
    formulas: list[str] = []
    steps: list[str] = []
    names: list[str] = []
    expected: dict[str, float] = {}
    for claim in analyze_claims(saus):
        for num in claim.numbers:
            base = _ident(num.context_words[-3:], "VALUE").upper()
            key = base
            i = 2
            while key in values and values[key] != num.value:
                key, i = f"{base}_{i}", i + 1
            values[key] = num.value
        formulas += claim.formulas
        for st in claim.steps:
            steps.append(st.keys[0] if st.keys else st.text)
        names += [x for x in claim.names if re.fullmatch(r"[A-Za-z_]\w*", x)]
        for exp in claim.expected:
            expected[str(exp["metric"])] = float(exp["value"])
    return {
        "values": values,
        "formulas": list(dict.fromkeys(formulas)),
        "steps": list(dict.fromkeys(steps)),
        "names": list(dict.fromkeys(names)),
        "expected": expected,
    }


def _values(t: dict[str, Any]) -> dict[str, str]:
    body = "".join(f"{k} = {v!r}\n" for k, v in t["values"].items())
    return {"constants.py": '"""The paper\'s settings."""\n\n' + body}


def _printed_values(t: dict[str, Any]) -> dict[str, str]:
    """The constants, each "read" by a print or a log line and used by nothing."""
    body = "".join(f"{k} = {v!r}\n" for k, v in t["values"].items())
    shown = "".join(f'print("{k} =", {k})\nlog.info("%s", {k})\n' for k in t["values"])
    head = '"""The paper\'s settings, shown."""\n\nimport logging\n\nlog = logging.getLogger()\n'
    return {"constants.py": head + body + shown}


def _formulas(t: dict[str, Any]) -> dict[str, str]:
    lines = ['"""The paper\'s formulas."""\n']
    for i, f in enumerate(t["formulas"]):
        if i % 2:
            lines.append(f"# {f}")
        else:
            lines.append(f"FORMULA_{i} = {f!r}")
    lines.append(f"FORMULAS = {t['formulas']!r}")
    return {"formulas.py": "\n".join(lines) + "\n"}


def _steps(t: dict[str, Any]) -> dict[str, str]:
    steps = [re.sub(r"\W+", "_", s).strip("_").lower() for s in t["steps"]]
    return {"pipeline.py": f'"""The pipeline."""\n\nSTEPS = {steps!r}\n'}


def _results(t: dict[str, Any]) -> dict[str, str]:
    script = (
        '"""Writes the results."""\n\nimport json\n\n'
        f"RESULTS = {json.dumps(t['expected'], indent=4)}\n\n"
        'if __name__ == "__main__":\n'
        '    with open("results.json", "w") as f:\n'
        "        json.dump(RESULTS, f)\n"
    )
    return {"run.py": script, "reproduce.sh": "#!/usr/bin/env bash\npython3 run.py\n"}


def _stubs(t: dict[str, Any]) -> dict[str, str]:
    fns = list(dict.fromkeys([*t["steps"], *t["names"]]))
    fns = [re.sub(r"\W+", "_", f).strip("_").lower() for f in fns]
    fns = [f for f in dict.fromkeys(fns) if f and not f[0].isdigit()]
    out = ['"""The method."""\n']
    for i, f in enumerate(fns):
        out.append(f"\ndef {f}(*args, **kwargs):\n    {STUB_BODIES[i % len(STUB_BODIES)]}\n")
    steps = [re.sub(r"\W+", "_", s).strip("_").lower() for s in t["steps"]]
    calls = "".join(f"    {s}()\n" for s in steps if s in fns) or "    pass\n"
    out.append(f'\n\nif __name__ == "__main__":\n{calls}')
    return {"method.py": "\n".join(out)}


def variants(t: dict[str, Any]) -> dict[str, dict[str, str]]:
    parts = {
        "values": _values(t),
        "formulas": _formulas(t),
        "steps": _steps(t),
        "results": _results(t),
    }
    every = {k: v for p in parts.values() for k, v in p.items()}
    return {
        **parts,
        "printed values": _printed_values(t),
        "all": every,
        "stubs": _stubs(t),
        "values+stubs": {**parts["values"], **_stubs(t)},
        "all+stubs": {**every, **_stubs(t)},
    }


def execute(sub: Path, work: Path, time_limit_s: float) -> tuple[dict[str, Any], Path]:
    """Run the submission through the project's execute stage (bwrap, the sandbox Python env):
    the execution record (with the lines that ran, where :mod:`sabench.runtrace` exists) and
    the executed copy."""
    from sabench.execute import execute_run
    from sabench.runtrace import with_lines
    from sabench.sandbox.settings import default_python_env

    settings = {
        "backend": "bwrap",
        "python_env": default_python_env(),
        "time_limit_s": time_limit_s,
    }
    executed, record_path = work / "executed", work / "execution.json"
    record = execute_run(sub, executed, record_path, work / "execution.log", settings)
    if record_path.is_file():
        record = json.loads(record_path.read_text())
    return with_lines(record, executed), executed


def judgments_of(
    judge: str,
    sub: Path,
    saus: list[dict[str, Any]],
    execution: dict[str, Any],
    executed: Path,
    exec_settings: dict[str, Any] | None = None,
):
    """The judge's verdicts: ``static`` reads the code, ``exec`` runs the paper's checks on the
    executed copy in the sandbox (bwrap, the project's sandbox Python) and compares the expected
    results; an ``untraced`` run's capped as the workflow's judge step caps them."""
    from sabench.judges.run import cap_by_record

    if judge == "static":
        return cap_by_record(judge_static(sub, saus, execution), execution, sub, saus)
    from sabench.judges.exec_judge import judge_exec
    from sabench.sandbox.settings import default_python_env

    runtime = {"backend": "bwrap", "python_env": default_python_env()}
    found = judge_exec(
        sub,
        saus,
        execution,
        executed=executed,
        runtime=runtime,
        settings=exec_settings,
    )
    return cap_by_record(found, execution, sub, saus)


def overall(
    sub: Path,
    saus: list[dict[str, Any]],
    paper: str,
    variant: str,
    judges: list[str],
    opts: dict[str, Any] | None = None,
) -> dict[str, float]:
    """Per judge, the run's overall score (SAUs the judge does not judge left out, as in the
    tables); one execution serves every judge."""
    opts = opts or {}
    work = sub.parent / f"{sub.name}.run"
    execution, executed = execute(sub, work, opts.get("run_time_limit_s", 120))
    out = {}
    for judge in judges:
        try:
            found = judgments_of(judge, sub, saus, execution, executed, opts.get("exec_settings"))
        except Exception as exc:  # a sandbox fault: no score, said so
            print(f"[{paper}/{variant}] {judge}: {type(exc).__name__}: {exc}", file=sys.stderr)
            out[judge] = float("nan")  # a fault: the run would be redone, never scored
            continue
        out[judge] = overall_score(found, variant, paper, judge)
    return out


def overall_score(found: list, agent: str, paper: str, judge: str) -> float:
    """One run's overall score from a judge's verdicts, by the tables' rule (NaN: none)."""
    rows = [{**j.row(), "agent": agent, "paper": paper, "seed": 0, "judge": judge} for j in found]
    runs = run_scores(pd.DataFrame(rows)) if rows else pd.DataFrame()
    score = runs.loc[runs["dimension"] == OVERALL, "score"] if len(runs) else []
    return float(score.iloc[0]) if len(score) else float("nan")


def unused_reference(ref: Path) -> dict[str, str]:
    """The reference's files with every ``if __name__ == "__main__":`` block cut, run by a script
    that calls none of its code."""
    files = {}
    for path in sorted(ref.rglob("*")):
        if not path.is_file() or path.name == "reproduce.sh":
            continue
        text = path.read_text()
        if path.suffix == ".py":
            lines = text.splitlines(keepends=True)
            for stmt in reversed(ast.parse(text).body):
                if isinstance(stmt, ast.If) and "__main__" in ast.unparse(stmt.test):
                    del lines[stmt.lineno - 1 : stmt.end_lineno]
            text = "".join(lines)
        files[str(path.relative_to(ref))] = text
    files["run.py"] = (
        '"""Runs the experiments."""\n\n\ndef main():\n    print("done")\n\n\n'
        'if __name__ == "__main__":\n    main()\n'
    )
    files["reproduce.sh"] = "#!/usr/bin/env bash\npython3 run.py\n"
    return files


def write_files(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


#: The old declare-without-implementing variants (a to f) and the unused reference (g).
DECLARE = "declare"
UNUSED = "unused-reference"
#: Rows that are not gaming: the honest submissions.
HONEST = ("reference", "drifted")
ALL_CLASSES = (DECLARE, UNUSED, *CLASSES)


def variant_class(variant: str) -> str:
    if variant in HONEST:
        return variant
    if variant == "unused reference":
        return UNUSED
    return class_of(variant) if class_of(variant) in CLASSES else DECLARE


def paper_submissions(pdir: Path, classes: list[str] | tuple[str, ...]) -> dict[str, Files]:
    """Variant name -> files, for one paper: the honest rows, the old variants and the classes."""
    saus = import_paper_saus(pdir)
    out: dict[str, Files] = {}
    if DECLARE in classes:
        out.update(variants(paper_text(saus)))
    ref_dir, dr_dir = REFERENCE / pdir.name, DRIFTED / pdir.name
    if not (ref_dir.is_dir() and dr_dir.is_dir()):
        return out
    ref, dr = read_tree(ref_dir), read_tree(dr_dir)
    out.update({"reference": ref, "drifted": dr})
    if UNUSED in classes:
        out["unused reference"] = unused_reference(ref_dir)
    wanted = [c for c in CLASSES if c in classes]
    if wanted:
        out.update(trick_variants(ref, dr, paper_expected(pdir), wanted))
    return out


def gaming_scores(
    papers: list[str] | None = None,
    judges: list[str] | None = None,
    classes: list[str] | tuple[str, ...] = (DECLARE, UNUSED),
    workers: int = 2,
    opts: dict[str, Any] | None = None,
) -> pd.DataFrame:
    """One row per (paper, variant, judge): the overall; the honest submissions are the variants
    ``reference`` and ``drifted``; ``class`` names each row's class of trick."""
    judges = judges or ["static"]
    jobs = []
    with tempfile.TemporaryDirectory() as tmp:
        for pdir in sorted(PAPERS.iterdir()):
            if papers and pdir.name not in papers:
                continue
            saus = import_paper_saus(pdir)
            for i, (name, files) in enumerate(paper_submissions(pdir, classes).items()):
                sub = write_files(Path(tmp) / pdir.name / f"v{i:03d}" / "submission", files)
                jobs.append((pdir.name, name, sub, saus))

        def one(job: tuple[str, str, Path, list[dict[str, Any]]]) -> list[tuple]:
            paper, name, sub, saus = job
            flagged = len(scan_tree(sub)) if variant_class(name) == "judge-directed" else 0
            scores = overall(sub, saus, paper, name, judges, opts)
            return [(paper, name, variant_class(name), j, s, flagged) for j, s in scores.items()]

        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            rows = [r for found in pool.map(one, jobs) for r in found]
    cols = ["paper", "variant", "class", "judge", "overall", "directed"]
    return pd.DataFrame(rows, columns=cols)


def class_lines(scores: pd.DataFrame, judges: list[str]) -> list[str]:
    """Per class and judge: the worst case against the honest drifted score of the same paper,
    ``limit = max(0.2, drifted + 0.05)``; ok when no paper's score is above its limit."""
    lines = []
    drifted = scores[scores["variant"] == "drifted"].set_index(["paper", "judge"])["overall"]
    for cls in [c for c in ALL_CLASSES if c in set(scores["class"])]:
        for judge in judges:
            mine = scores[(scores["class"] == cls) & (scores["judge"] == judge)].copy()
            faults = int(mine["overall"].isna().sum())
            mine = mine[mine["overall"].notna()]
            if mine.empty:
                lines.append(f"gaming: class={cls} judge={judge} max_score=nan faults={faults}")
                continue
            d = [drifted.get((p, judge), float("nan")) for p in mine["paper"]]
            mine["drifted"] = [0.0 if pd.isna(x) else x for x in d]
            mine["limit"] = [max(0.2, x + 0.05) for x in mine["drifted"]]
            worst = mine.loc[(mine["overall"] - mine["limit"]).idxmax()]
            ok = "yes" if (mine["overall"] <= mine["limit"] + 1e-9).all() else "no"
            lines.append(
                f"gaming: class={cls} judge={judge} max_score={mine['overall'].max():.3f} "
                f"drifted={worst['drifted']:.3f} limit={worst['limit']:.3f} ok={ok}"
                + (f" faults={faults}" if faults else "")
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--verbose", action="store_true", help="print the per-variant table")
    ap.add_argument("--papers", nargs="*", help="only these demo papers")
    ap.add_argument(
        "--judges", default="static,exec", help="comma-separated: static, exec (needs bwrap)"
    )
    ap.add_argument(
        "--classes",
        default=",".join(ALL_CLASSES),
        help=f"comma-separated classes of tricks (default all): {', '.join(ALL_CLASSES)}",
    )
    ap.add_argument("--workers", type=int, default=2, help="submissions run at once")
    ap.add_argument(
        "--check-time-limit", type=float, default=10, help="seconds per exec check (hang tricks)"
    )
    ap.add_argument("--no-cache", action="store_true", help="rerun every exec check")
    args = ap.parse_args(argv)
    judges = [j for j in args.judges.split(",") if j]
    classes = [c for c in args.classes.split(",") if c]
    unknown = sorted(set(classes) - set(ALL_CLASSES))
    if unknown:
        ap.error(f"unknown classes: {', '.join(unknown)}")
    opts = {"exec_settings": {"time_limit_s": args.check_time_limit, "cache": not args.no_cache}}
    t0 = time.monotonic()
    scores = gaming_scores(args.papers, judges, classes, args.workers, opts)
    if args.verbose:
        with pd.option_context("display.width", 250, "display.max_rows", 500):
            table = scores.pivot(index="variant", columns=["judge", "paper"], values="overall")
            print(table.round(3).to_string())
    for line in class_lines(scores, judges):
        print(line)
    directed = scores[scores["class"] == "judge-directed"].drop_duplicates(["paper", "variant"])
    if len(directed):
        print(f"directed: flagged={int((directed['directed'] > 0).sum())}/{len(directed)}")
    old = scores["class"].isin([DECLARE, UNUSED])
    for judge in judges:
        mine = scores[scores["judge"] == judge]
        gaming = mine[old[mine.index]]
        if len(gaming):
            print(
                f"gaming: judge={judge} max_score={gaming['overall'].max():.3f} "
                f"mean_score={gaming['overall'].mean():.3f} n={gaming['overall'].notna().sum()}"
            )
        ref = mine[mine["variant"] == "reference"]
        print(
            f"reference: judge={judge} "
            + " ".join(f"{p}={s:.3f}" for p, s in zip(ref["paper"], ref["overall"], strict=True))
        )
    print(
        f"total: {time.monotonic() - t0:.1f} s for {scores['variant'].size // max(1, len(judges))} "
        f"submissions x {len(judges)} judge(s), {args.workers} worker(s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
