"""Declare-without-implementing submissions: can the static judge be gamed by text?

    .venv/bin/python benchmarks/gaming.py [--verbose] [--judges static,exec]

For every demo paper (resources/papers/*) it writes, in a temporary folder, submissions that hold the
paper's method only as text: (a) ``values``: the claims' numbers as module constants nobody reads;
(b) ``formulas``: the claims' backticked formulas as strings and comments; (c) ``steps``: the step
names as a list nothing calls; (d) ``results``: a reproduce.sh whose script writes the SAUs'
``expected`` numbers as literals to results.json; (e) ``all``: everything together; (f) ``stubs`` and
``all+stubs``: functions with the claims' names whose bodies are ``pass``, ``raise
NotImplementedError`` or ``return 0``, called in the claimed order; (g) ``unused reference``: the
reference submission's code with its ``__main__`` blocks removed, beside a ``run.py`` that runs
none of it (the method written, never run). Each is judged by the static judge
and the exec judge (the paper's checks in the sandbox, and its expected results; with the execution
record its reproduce.sh gives) and scored with the project's rule (mean claim score per dimension,
overall = mean of the dimensions, over the SAUs a judge judges). Prints one line per judge,
``gaming: judge=<name> max_score=... mean_score=...``, and the reference submissions' overall.
Goal: no declaring submission (a to f) above 0.2; the references stay at 1.0. The unused
reference (g) is measured beside them: a config file's values still count as set.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sabench.judges.static import analyze_claims, judge_static  # noqa: E402
from sabench.saus import import_paper_saus  # noqa: E402
from sabench.scoring import OVERALL, run_scores  # noqa: E402

PAPERS = REPO / "resources" / "papers"
REFERENCE = REPO / "resources" / "submissions" / "reference"
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


def execute(sub: Path) -> dict[str, Any]:
    """Run reproduce.sh in the submission (what the pipeline's execute step records)."""
    if not (sub / "reproduce.sh").is_file():
        return {"status": "failed", "metrics": {}}
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]}
    try:
        code = subprocess.run(
            ["bash", "reproduce.sh"], cwd=sub, env=env, capture_output=True, timeout=300
        ).returncode
    except (OSError, subprocess.TimeoutExpired):
        code = -1
    res = sub / "results.json"
    metrics = json.loads(res.read_text()) if res.is_file() else {}
    (res.unlink() if res.is_file() else None)
    return {"status": "ok" if code == 0 else "failed", "metrics": metrics}


def judgments_of(judge: str, sub: Path, saus: list[dict[str, Any]], execution: dict[str, Any]):
    """The judge's verdicts: ``static`` reads the code, ``exec`` runs the paper's checks on it in
    the sandbox (bwrap, the project's sandbox Python) and compares the expected results."""
    if judge == "static":
        return judge_static(sub, saus, execution)
    from sabench.judges.exec_judge import judge_exec
    from sabench.sandbox.settings import default_python_env

    runtime = {"backend": "bwrap", "python_env": default_python_env()}
    view = PAPERS / saus[0]["paper"]
    return judge_exec(sub, saus, execution, executed=sub, agent_view=view, runtime=runtime)


def overall(
    sub: Path, saus: list[dict[str, Any]], paper: str, variant: str, judges: list[str]
) -> dict[str, float]:
    """Per judge, the run's overall score (SAUs the judge does not judge left out, as in the tables)."""
    execution = execute(sub)
    out = {}
    for judge in judges:
        rows = [
            {**j.row(), "agent": variant, "paper": paper, "seed": 0, "judge": judge}
            for j in judgments_of(judge, sub, saus, execution)
        ]
        runs = run_scores(pd.DataFrame(rows)) if rows else pd.DataFrame()
        score = runs.loc[runs["dimension"] == OVERALL, "score"] if len(runs) else []
        out[judge] = float(score.iloc[0]) if len(score) else float("nan")
    return out


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


def gaming_scores(papers: list[str] | None = None, judges: list[str] | None = None) -> pd.DataFrame:
    """One row per (paper, variant, judge): the overall; reference rows have variant ``reference``."""
    judges = judges or ["static"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for pdir in sorted(PAPERS.iterdir()):
            if papers and pdir.name not in papers:
                continue
            saus = import_paper_saus(pdir)
            subs = {
                name: write_files(Path(tmp) / pdir.name / name, files)
                for name, files in variants(paper_text(saus)).items()
            }
            ref = REFERENCE / pdir.name
            if ref.is_dir():
                work = Path(tmp) / pdir.name / "reference"
                subprocess.run(["cp", "-r", str(ref), str(work)], check=True)
                subs["reference"] = work
                subs["unused reference"] = write_files(
                    Path(tmp) / pdir.name / "unused-reference", unused_reference(ref)
                )
            for name, sub in subs.items():
                for judge, score in overall(sub, saus, pdir.name, name, judges).items():
                    rows.append((pdir.name, name, judge, score))
    return pd.DataFrame(rows, columns=["paper", "variant", "judge", "overall"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--verbose", action="store_true", help="print the per-variant table")
    ap.add_argument("--papers", nargs="*", help="only these demo papers")
    ap.add_argument(
        "--judges", default="static,exec", help="comma-separated: static, exec (needs bwrap)"
    )
    args = ap.parse_args(argv)
    judges = [j for j in args.judges.split(",") if j]
    scores = gaming_scores(args.papers, judges)
    if args.verbose:
        table = scores.pivot(index="variant", columns=["judge", "paper"], values="overall")
        print(table.round(3).to_string())
    for judge in judges:
        mine = scores[scores["judge"] == judge]
        gaming = mine[mine["variant"] != "reference"]
        ref = mine[mine["variant"] == "reference"]
        print(
            f"gaming: judge={judge} max_score={gaming['overall'].max():.3f} "
            f"mean_score={gaming['overall'].mean():.3f} n={gaming['overall'].notna().sum()}"
        )
        print(
            f"reference: judge={judge} "
            + " ".join(f"{p}={s:.3f}" for p, s in zip(ref["paper"], ref["overall"], strict=True))
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
