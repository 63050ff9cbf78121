"""What the execution trace costs: a pure-Python loop and a numpy script, with and without it.

    .venv/bin/python benchmarks/trace_overhead.py [--python .venv-sandbox/bin/python] [--repeat 3]
        [--recorder coverage|sys.monitoring|settrace]

Each script runs in a submission-like folder through the sandbox Python directly (a subprocess,
no sandbox), once plain and once with the site folder first on PYTHONPATH
(``sabench.runtrace.install_site``) and a trace channel served, as ``sabench.execute`` arms it
(each traced process sends its record over the channel); the best of ``--repeat``
CPU times (user + system of the child: the machine may be shared, wall times are printed too) of
each is compared, and under coverage also with calls off (``install_site(calls=False)``: lines only). The pure-Python loop is the worst case (every line of it is
submission code, a call per iteration); the numpy script is what most submissions spend their time
in. Prints ``trace_overhead: pure_python=<x>x numpy=<y>x recorder=<name>``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sabench.runtrace import TraceChannel, install_site, read_trace, trace_path  # noqa: E402

PURE = """def step(x):
    return (x * 31 + 7) % 1000003


def loop(n):
    total = 0
    for i in range(n):
        if i % 3:
            total += step(i)
        else:
            total -= 1
    return total


print(loop(3_000_000))
"""

NUMPY = """import numpy as np


def fit(X, y, lr, epochs):
    w = np.zeros(X.shape[1])
    for _ in range(epochs):
        grad = X.T @ (X @ w - y) / len(y)
        w -= lr * grad
    return w


rng = np.random.default_rng(0)
X = rng.normal(size=(20000, 200))
y = X @ rng.normal(size=200)
w = fit(X, y, 0.05, 200)
print(float(np.mean((X @ w - y) ** 2)))
"""


def _time(
    python: str, folder: Path, script: str, env: dict[str, str], repeat: int
) -> tuple[float, float]:
    """The best wall time and the best CPU time (user + system, the child's) of ``repeat`` runs."""
    best_wall = best_cpu = float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run([python, script], cwd=folder, env=env, check=True, capture_output=True)
        best_wall = min(best_wall, time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best_cpu = min(best_cpu, cpu)
    return best_wall, best_cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=str(REPO / ".venv-sandbox" / "bin" / "python"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--recorder", help="force a recorder (default: the site program's choice)")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="sabench-trace-bench-") as tmp,
        TraceChannel() as channel,
    ):
        root = Path(tmp)
        sub = root / "submission"
        sub.mkdir()
        arm = {"root": str(sub), "channel": str(channel.path)}
        site = install_site(root / "site", recorder=args.recorder or "", **arm)
        lines_site = install_site(root / "lines", calls=False, **arm)
        (sub / "pure.py").write_text(PURE)
        (sub / "heavy.py").write_text(NUMPY)
        base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp, "LANG": "C.UTF-8"}
        # one BLAS thread: idle BLAS threads spinning on a shared machine swamp the CPU times
        base.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
        traced = {**base, "PYTHONPATH": str(site)}
        lines_only = {**base, "PYTHONPATH": str(lines_site)}
        ratios: dict[str, float] = {}
        for name, script in (("pure_python", "pure.py"), ("numpy", "heavy.py")):
            plain = _time(args.python, sub, script, base, args.repeat)
            with_trace = _time(args.python, sub, script, traced, args.repeat)
            ratios[name] = with_trace[1] / plain[1]
            line = f"  {name}: plain {plain[0]:.3f}s wall {plain[1]:.3f}s cpu; traced "
            line += f"{with_trace[0]:.3f}s wall {with_trace[1]:.3f}s cpu ({ratios[name]:.2f}x cpu)"
            if not args.recorder or args.recorder == "coverage":
                lines = _time(args.python, sub, script, lines_only, args.repeat)
                ratios[name + "_lines_only"] = lines[1] / plain[1]
                line += f"; lines only {lines[1]:.3f}s cpu ({ratios[name + '_lines_only']:.2f}x)"
            print(line, file=sys.stderr)
        channel.close()
        channel.write(trace_path(sub))
        trace = read_trace(sub)
        assert trace is not None and trace.processes > 0, "no process sent a trace"
        assert not trace.problems, trace.problems
        recorder = trace.recorder
        print(f"  trace: {json.dumps(trace.summary())}", file=sys.stderr)
    print(
        f"trace_overhead: pure_python={ratios['pure_python']:.2f}x numpy={ratios['numpy']:.2f}x "
        f"recorder={recorder.replace(' ', '-')}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
