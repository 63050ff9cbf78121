"""Honest shapes: does code that computes exactly what the reference computes, in the shapes real
research code takes, keep the reference's credit?

    .venv/bin/python benchmarks/honest_shapes.py [--papers P,...] [--shapes pool-fork,...]
        [--judges static,exec] [--workers 2]

From the bundled reference submission of each demo paper (resources/submissions/reference/<paper>)
it generates, by code, one variant per shape that applies to the paper's code:

- the per-dataset work of the entry script's ``main`` (its loop that fills the results dict) moved
  into a module-level function and run in a ``multiprocessing`` pool of the ``fork``, ``spawn``
  or ``forkserver`` context (``with ... Pool() as pool``: leaving the block terminates the
  workers), a ``ProcessPoolExecutor``, a ``ThreadPoolExecutor``, joblib's ``Parallel`` (only
  where the sandbox env has joblib), or one ``subprocess`` Python per dataset
  (``pool-fork``, ``pool-spawn``, ``pool-forkserver``, ``process-pool``, ``thread-pool``,
  ``joblib``, ``subprocess``);
- the entry script run as ``python -m <module>`` (``python-m``); the entry's local modules
  loaded with ``importlib.import_module`` or ``importlib.util.spec_from_file_location`` and used
  by attribute (``import-module``, ``spec-from-file``); the entry script executed by a launcher
  with ``runpy.run_path`` or ``exec`` of its compiled source (``runpy``, ``exec-file``); a
  notebook export: every module flattened into one top-level script, dependencies first, cells
  in order, the ``__main__`` block at the top level (``notebook``).

Every variant and the reference run through the project's execute stage and are judged by each
judge through :func:`sabench.judges.run.run_judge` (an untraced or fabricated run is capped as in
the workflow), as benchmarks/submissions.py does. A variant must write the same results.json as the
reference (``results:`` line; exit status 1 when one does not). Prints one line per (paper, shape,
judge), ``shape: paper=<p> shape=<s> judge=<j> score=<x> reference=<r> ratio=<x/r> ok=<yes|no>
status=<execution status>`` (ok: ratio >= 0.95; a sandbox or judge fault leaves nan, status
``fault``), then ``honest_shapes: ok=<a>/<n>``.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from gaming import write_files
from gaming_tricks import Files, entry_script, insert_after_head, read_tree
from submissions import HONEST_SHARE, score_case

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sabench.sandbox.settings import default_python_env  # noqa: E402

REFERENCE = REPO / "resources" / "submissions" / "reference"
WORKER = "run_one"
JOB_SCRIPT = "run_job.py"
LAUNCHER = "launch.py"
NOTEBOOK = "reproduction.py"


class NotApplicable(Exception):
    """The shape does not fit this paper's code (the reason is printed)."""


# --- the entry script's per-dataset loop, as a module-level function ----------------------------


def _main_function(tree: ast.Module) -> ast.FunctionDef:
    """The function the ``if __name__ == "__main__":`` block calls."""
    defs = {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)}
    for stmt in tree.body:
        if isinstance(stmt, ast.If) and "__main__" in ast.unparse(stmt.test):
            for node in ast.walk(stmt):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) in defs:
                    return defs[node.func.id]
    raise NotApplicable("no __main__ block calling a function of the entry script")


def _stored(nodes: list[ast.stmt]) -> set[str]:
    return {
        n.id
        for stmt in nodes
        for n in ast.walk(stmt)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }


def _results_loop(main: ast.FunctionDef) -> tuple[int, ast.For, str]:
    """The loop of ``main`` that fills a dict ``main`` starts empty: its index, itself, the dict."""
    empty = {
        t.id
        for s in main.body
        if isinstance(s, ast.Assign) and isinstance(s.value, ast.Dict) and not s.value.keys
        for t in s.targets
        if isinstance(t, ast.Name)
    }
    for i, stmt in enumerate(main.body):
        if not isinstance(stmt, ast.For):
            continue
        for node in ast.walk(stmt):
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.ctx, ast.Store)
                and getattr(node.value, "id", None) in empty
            ):
                return i, stmt, node.value.id  # type: ignore[attr-defined]
    raise NotApplicable("main has no loop filling a results dict")


def _lines(text: str, first: int, last: int) -> str:
    return "".join(text.splitlines(keepends=True)[first - 1 : last])


def split_worker(text: str) -> tuple[str, ast.For, str, str]:
    """The entry script with ``main``'s results loop as the module-level function ``run_one``
    (the loop variables and the locals of ``main`` it reads as parameters; it returns its share of
    the results), and what replaces the loop: the source text before the loop's replacement, the
    loop, the jobs expression (one argument tuple per iteration) and the results dict's name."""
    tree = ast.parse(text)
    if any(isinstance(s, ast.FunctionDef) and s.name == WORKER for s in tree.body):
        raise NotApplicable(f"the entry script already defines {WORKER}")
    main = _main_function(tree)
    i, loop, acc = _results_loop(main)
    target = loop.target
    if isinstance(target, ast.Name):
        targets = [target.id]
    elif isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
        targets = [e.id for e in target.elts]  # type: ignore[attr-defined]
    else:
        raise NotApplicable("the loop's target is not a name or a tuple of names")
    outer = {a.arg for a in main.args.args + main.args.kwonlyargs} | _stored(main.body[:i])
    read = {
        n.id
        for stmt in loop.body
        for n in ast.walk(stmt)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
    free = sorted((outer & read) - {acc} - set(targets))
    params = [*targets, *free]
    body = textwrap.dedent(_lines(text, loop.body[0].lineno, loop.end_lineno or loop.lineno))
    worker = (
        f"def {WORKER}({', '.join(params)}):\n"
        f'    """One iteration of {main.name}\'s loop on its own: its share of the results."""\n'
        f"    {acc} = {{}}\n" + textwrap.indent(body, "    ") + f"    return {acc}\n\n\n"
    )
    args = ", ".join(params) + ("," if len(params) == 1 else "")
    jobs = f"[({args}) for {ast.unparse(target)} in {ast.unparse(loop.iter)}]"
    lines = text.splitlines(keepends=True)
    start = min([main.lineno, *(d.lineno for d in main.decorator_list)])
    text = "".join(lines[: start - 1]) + worker + "".join(lines[start - 1 :])
    return text, loop, jobs, acc


def _replace_loop(text: str, loop_line: int, end_line: int, col: int, code: str) -> str:
    lines = text.splitlines(keepends=True)
    new = textwrap.indent(code, " " * col)
    return "".join(lines[: loop_line - 1]) + new + "".join(lines[end_line:])


def parallel_shape(run: str, imports: str, extra: Callable[[Files, str], Files] | None = None):
    """A shape that runs ``run_one`` over the jobs: ``run`` is the loop's replacement (``{acc}``:
    the results dict's name), ``imports`` what it needs at the top of the entry script."""

    def make(files: Files, entry: str) -> Files:
        text, loop, jobs, acc = split_worker(files[entry])
        shift = text.count("\n") - files[entry].count("\n")
        code = f"jobs = {jobs}\n" + run.format(acc=acc, worker=WORKER)
        end = (loop.end_lineno or loop.lineno) + shift
        text = _replace_loop(text, loop.lineno + shift, end, loop.col_offset, code)
        have = set(text.splitlines())
        needed = "\n".join(line for line in imports.splitlines() if line not in have)
        out = {**files, entry: insert_after_head(text, needed) if needed else text}
        return extra(out, entry) if extra else out

    return make


def _job_script(files: Files, entry: str) -> Files:
    module = entry.removesuffix(".py").replace("/", ".")
    script = (
        f'"""Runs one job of {entry} in its own process: the pickled arguments in, its results\n'
        'out as JSON."""\n\nimport json\nimport pickle\nimport sys\n\n'
        f"from {module} import {WORKER}\n\n"
        'if __name__ == "__main__":\n'
        '    with open(sys.argv[1], "rb") as fh:\n'
        "        job = pickle.load(fh)\n"
        '    with open(sys.argv[2], "w") as fh:\n'
        f"        json.dump({WORKER}(*job), fh)\n"
    )
    return {**files, JOB_SCRIPT: script}


def _pool(context: str) -> Callable[[Files, str], Files]:
    return parallel_shape(
        f'with multiprocessing.get_context("{context}").Pool(len(jobs)) as pool:\n'
        "    for part in pool.starmap({worker}, jobs):\n"
        "        {acc}.update(part)\n",
        "import multiprocessing",
    )


def _executor(kind: str) -> Callable[[Files, str], Files]:
    return parallel_shape(
        f"with concurrent.futures.{kind}(max_workers=len(jobs)) as pool:\n"
        "    futures = [pool.submit({worker}, *job) for job in jobs]\n"
        "    for future in futures:\n"
        "        {acc}.update(future.result())\n",
        "import concurrent.futures",
    )


# --- entry points and module loading ------------------------------------------------------------


def _with_script(files: Files, entry: str, command: str) -> Files:
    """reproduce.sh with ``python3 <entry>`` replaced by ``python3 <command>``."""
    script = re.sub(
        rf"(python3?\s+(?:-\S+\s+)*){re.escape(entry)}", rf"\g<1>{command}", files["reproduce.sh"]
    )
    return {**files, "reproduce.sh": script}


def python_m(files: Files, entry: str) -> Files:
    return _with_script(files, entry, "-m " + entry.removesuffix(".py").replace("/", "."))


def _local_module(files: Files, module: str) -> str | None:
    """The file of a module of the submission (``esl.data`` -> ``esl/data.py``), or None."""
    base = module.replace(".", "/")
    for rel in (f"{base}.py", f"{base}/__init__.py"):
        if rel in files:
            return rel
    return None


def _edit(text: str, edits: list[tuple[int, int, int, int, str]]) -> str:
    """Replace (line, col, end line, end col) spans, 1-based lines, last first."""
    lines = text.splitlines(keepends=True)
    for line, col, end_line, end_col, new in sorted(edits, reverse=True):
        head = lines[line - 1][:col]
        tail = lines[end_line - 1][end_col:]
        lines[line - 1 : end_line] = [head + new + tail]
    return "".join(lines)


def by_attribute(files: Files, entry: str, loader: str, helper: str) -> Files:
    """The entry's ``from <local module> import a`` as ``<module> = <loader>("<module>")`` and its
    uses of ``a`` as ``<module>.a``."""
    text = files[entry]
    tree = ast.parse(text)
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names: dict[str, str] = {}
    edits = []
    for stmt in tree.body:
        if not (isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level):
            continue
        if _local_module(files, stmt.module) is None:
            continue
        var = stmt.module.split(".")[-1]
        var = f"{var}_module" if var in taken else var
        for alias in stmt.names:
            names[alias.asname or alias.name] = f"{var}.{alias.name}"
        new = f'{var} = {loader}("{stmt.module}")'
        edits.append((stmt.lineno, stmt.col_offset, stmt.end_lineno, stmt.end_col_offset, new))
    if not names:
        raise NotApplicable("the entry script imports no module of the submission by name")
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in names:
            span = (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)
            edits.append((*span, names[node.id]))  # type: ignore[arg-type]
    return {**files, entry: insert_after_head(_edit(text, edits), helper)}


def import_module(files: Files, entry: str) -> Files:
    return by_attribute(files, entry, "importlib.import_module", "import importlib")


LOAD_BY_PATH = '''\
import importlib.util
import sys
from pathlib import Path


def load_module(name):
    """The module of this folder named ``name``, loaded from its file."""
    path = Path(__file__).resolve().parent.joinpath(*name.split(".")).with_suffix(".py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
'''


def spec_from_file(files: Files, entry: str) -> Files:
    return by_attribute(files, entry, "load_module", LOAD_BY_PATH)


def _launcher(files: Files, entry: str, body: str) -> Files:
    script = (
        f'"""Runs {entry} as the program, with this command line."""\n\n'
        "from pathlib import Path\n" + body
    )
    return _with_script({**files, LAUNCHER: script}, entry, LAUNCHER)


def runpy_shape(files: Files, entry: str) -> Files:
    body = (
        "import runpy\n\n"
        f'SCRIPT = Path(__file__).resolve().parent / "{entry}"\n\n'
        'if __name__ == "__main__":\n'
        '    runpy.run_path(str(SCRIPT), run_name="__main__")\n'
    )
    return _launcher(files, entry, body)


def exec_file(files: Files, entry: str) -> Files:
    body = (
        f'\nSCRIPT = Path(__file__).resolve().parent / "{entry}"\n\n'
        'if __name__ == "__main__":\n'
        '    code = compile(SCRIPT.read_text(), str(SCRIPT), "exec")\n'
        '    exec(code, {"__name__": "__main__", "__file__": str(SCRIPT)})\n'
    )
    return _launcher(files, entry, body)


# --- a notebook export --------------------------------------------------------------------------


def _local_imports(files: Files, tree: ast.Module) -> list[tuple[ast.stmt, str]]:
    out = []
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
            rel = _local_module(files, stmt.module)
            if rel:
                out.append((stmt, rel))
        elif isinstance(stmt, ast.Import) and any(_local_module(files, a.name) for a in stmt.names):
            raise NotApplicable("a module of the submission is imported as a module")
    return out


def _defined(tree: ast.Module, text: str) -> dict[str, str]:
    out = {}
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            out[stmt.name] = ast.get_source_segment(text, stmt) or ""
        elif isinstance(stmt, ast.Assign):
            for name in _stored([stmt]):
                out[name] = ast.get_source_segment(text, stmt) or ""
    return out


def notebook(files: Files, entry: str) -> Files:
    """Every module the entry reaches as a cell, dependencies first, local imports dropped (an
    alias kept as an assignment); the entry's ``__main__`` block last, at the top level."""
    order: list[str] = []

    def visit(rel: str) -> None:
        if rel in order:
            return
        order.append(rel)  # marks it; moved after its dependencies below
        for _, dep in _local_imports(files, ast.parse(files[rel])):
            visit(dep)
        order.remove(rel)
        order.append(rel)

    visit(entry)
    seen: dict[str, tuple[str, str]] = {}
    cells = []
    for rel in order:
        text = files[rel]
        tree = ast.parse(text)
        for name, src in _defined(tree, text).items():
            if name in seen and seen[name][1] != src:
                raise NotApplicable(f"{name} is defined in {seen[name][0]} and in {rel}")
            seen[name] = (rel, src)
        edits = []
        for stmt, _ in _local_imports(files, tree):
            alias = "; ".join(
                f"{a.asname} = {a.name}" for a in stmt.names if a.asname and a.asname != a.name
            )
            edits.append((stmt.lineno, 0, stmt.end_lineno, stmt.end_col_offset, alias))
        for stmt in tree.body:
            if rel == entry and isinstance(stmt, ast.If) and "__main__" in ast.unparse(stmt.test):
                body = textwrap.dedent(_lines(text, stmt.body[0].lineno, stmt.end_lineno))
                edits.append((stmt.lineno, 0, stmt.end_lineno, stmt.end_col_offset, body.rstrip()))
        cells.append(_edit(text, edits).strip("\n"))
    head = "#!/usr/bin/env python\n# coding: utf-8\n"
    nb = head + "".join(f"\n# In[{i}]:\n\n\n{c}\n\n" for i, c in enumerate(cells, 1))
    kept = {k: v for k, v in files.items() if not k.endswith(".py")}
    return _with_script({**kept, NOTEBOOK: nb.rstrip("\n") + "\n"}, entry, NOTEBOOK)


# --- the shapes ---------------------------------------------------------------------------------


def _joblib_in_sandbox() -> str | None:
    """Why joblib cannot run in the sandbox env, or None when it can."""
    env = default_python_env()
    if not env:
        return "no sandbox Python env"
    python = Path(env) / "bin" / "python"
    done = subprocess.run([str(python), "-c", "import joblib"], capture_output=True)
    return None if done.returncode == 0 else f"joblib is not importable in {env}"


SHAPES: dict[str, Callable[[Files, str], Files]] = {
    "pool-fork": _pool("fork"),
    "pool-spawn": _pool("spawn"),
    "pool-forkserver": _pool("forkserver"),
    "process-pool": _executor("ProcessPoolExecutor"),
    "thread-pool": _executor("ThreadPoolExecutor"),
    "joblib": parallel_shape(
        "for part in joblib.Parallel(n_jobs=len(jobs))(\n"
        "    joblib.delayed({worker})(*job) for job in jobs\n"
        "):\n"
        "    {acc}.update(part)\n",
        "import joblib",
    ),
    "subprocess": parallel_shape(
        "with tempfile.TemporaryDirectory() as tmp:\n"
        "    for i, job in enumerate(jobs):\n"
        '        job_file, part_file = Path(tmp) / f"job{{i}}.pkl", Path(tmp) / f"part{{i}}.json"\n'
        "        job_file.write_bytes(pickle.dumps(job))\n"
        f'        script = Path(__file__).resolve().parent / "{JOB_SCRIPT}"\n'
        "        command = [sys.executable, str(script), str(job_file), str(part_file)]\n"
        "        subprocess.run(command, check=True)\n"
        "        {acc}.update(json.loads(part_file.read_text()))\n",
        "import json\nimport pickle\nimport subprocess\nimport sys\nimport tempfile\n"
        "from pathlib import Path",
        _job_script,
    ),
    "python-m": python_m,
    "import-module": import_module,
    "spec-from-file": spec_from_file,
    "runpy": runpy_shape,
    "exec-file": exec_file,
    "notebook": notebook,
}


def shape_variants(ref: Files, shapes: list[str]) -> tuple[dict[str, Files], dict[str, str]]:
    """Shape -> the variant's files, and shape -> why it was skipped."""
    entry = entry_script(ref)
    if entry is None:
        return {}, dict.fromkeys(shapes, "reproduce.sh runs no Python file of the submission")
    made, skipped = {}, {}
    for shape in shapes:
        if shape == "joblib" and (why := _joblib_in_sandbox()):
            skipped[shape] = why
            continue
        try:
            made[shape] = SHAPES[shape](ref, entry)
        except NotApplicable as exc:
            skipped[shape] = str(exc)
    return made, skipped


def _results(work: Path) -> dict[str, Any] | None:
    path = work / "run" / "executed" / "results.json"
    return json.loads(path.read_text()) if path.is_file() else None


def measure(
    papers: list[str], shapes: list[str], judges: list[str], workers: int
) -> tuple[list[dict[str, Any]], dict[tuple[str, str], str]]:
    """One row per (paper, submission) with ``scores`` per judge, ``status`` and ``results``
    (the reference's row has shape ``reference``), and (paper, shape) -> why it was skipped."""
    jobs: list[tuple[str, str, Files]] = []
    skipped: dict[tuple[str, str], str] = {}
    for paper in papers:
        ref = read_tree(REFERENCE / paper)
        made, why = shape_variants(ref, shapes)
        jobs += [(paper, "reference", ref), *((paper, s, f) for s, f in made.items())]
        skipped.update({(paper, s): w for s, w in why.items()})
    with tempfile.TemporaryDirectory() as tmp:

        def one(job: tuple[str, str, Files]) -> dict[str, Any]:
            paper, shape, files = job
            work = Path(tmp) / paper / shape
            source = write_files(work / "source", files)
            try:
                scores, status = score_case(source, paper, shape, judges, work / "case")
            except Exception as exc:  # a sandbox or judge fault: no score, said so
                print(f"[{paper}/{shape}] {type(exc).__name__}: {exc}", file=sys.stderr)
                scores, status = dict.fromkeys(judges, float("nan")), "fault"
            return {
                "paper": paper,
                "shape": shape,
                "scores": scores,
                "status": status,
                "results": _results(work / "case"),
            }

        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            rows = list(pool.map(one, jobs))
    return rows, skipped


def report(
    rows: list[dict[str, Any]], skipped: dict[tuple[str, str], str], judges: list[str]
) -> tuple[list[str], int]:
    """The printed lines, and how many variants did not write the reference's results."""
    lines = [f"skipped: paper={p} shape={s} reason={why}" for (p, s), why in skipped.items()]
    refs = {r["paper"]: r for r in rows if r["shape"] == "reference"}
    n_ok = n = differ = 0
    for row in rows:
        paper, shape = row["paper"], row["shape"]
        if shape == "reference":
            continue
        same = row["results"] is not None and row["results"] == refs[paper]["results"]
        differ += not same
        lines.append(f"results: paper={paper} shape={shape} same={'yes' if same else 'no'}")
        for judge in judges:
            score, ref = row["scores"][judge], refs[paper]["scores"][judge]
            ratio = score / ref if ref else float("nan")
            ok = ratio >= HONEST_SHARE
            n_ok, n = n_ok + ok, n + 1
            lines.append(
                f"shape: paper={paper} shape={shape} judge={judge} score={score:.3f}"
                f" reference={ref:.3f} ratio={ratio:.3f} ok={'yes' if ok else 'no'}"
                f" status={row['status']}"
            )
    lines.append(f"honest_shapes: ok={n_ok}/{n}")
    return lines, differ


def main(argv: list[str] | None = None) -> int:
    papers_all = sorted(p.name for p in REFERENCE.iterdir() if p.is_dir())
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", default=",".join(papers_all), help="comma-separated")
    parser.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated")
    parser.add_argument("--judges", default="static,exec")
    parser.add_argument("--workers", type=int, default=2, help="submissions run at once")
    args = parser.parse_args(argv)
    papers = [p for p in args.papers.split(",") if p]
    shapes = [s for s in args.shapes.split(",") if s]
    judges = [j for j in args.judges.split(",") if j]
    unknown = sorted(set(shapes) - set(SHAPES)) + sorted(set(papers) - set(papers_all))
    if unknown:
        parser.error(f"unknown papers or shapes: {', '.join(unknown)}")
    rows, skipped = measure(papers, shapes, judges, args.workers)
    lines, differ = report(rows, skipped, judges)
    print("\n".join(lines))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
