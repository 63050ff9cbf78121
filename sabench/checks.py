"""Executable SAUs: checks that run against the executed submission, and expected results.

A **check** is a short Python program (``check`` inline in saus.yaml, or ``check_file``). It runs in
a fresh sandbox on a fresh copy of the run's ``executed/`` folder, never on ``executed/`` itself:

* ``/submission``: the copy (the working directory, writable, size-limited) and first on sys.path;
* ``/sabench-check/check.py``: the check, read-only (the SAU file itself is never shown);
* ``/sabench-check/_sabench_runner.py``: the runner below, read-only; ``/paper``: the agent's view.

No network, time / memory / pids / output limits, the project's pinned sandbox Python. The runner
executes the check as ``__main__`` and reports how it ended on one marker line carrying a per-run
nonce, so a check is classified by what happened, not only by its exit status:

============================================================  ===============================
how the check ended                                           outcome
============================================================  ===============================
ran to the end, or ``sys.exit(0)`` from the check itself      ``pass`` (aligned)
``assert`` failed, any exception, ``sys.exit(n != 0)``        ``fail`` (drifted)
``NotImplementedError`` from the code under test              ``placeholder``
an import of the submission's own code failed                 ``missing`` (omission)
does not parse, a ``NameError`` in the check, tried the       ``error`` (never drift)
network or to write outside its folder, timed out, ran out
of memory or output, a sandbox fault, exited 0 before the
end (``os._exit`` in the code under test), no marker at all
============================================================  ===============================

Outcomes other than ``error`` are cached on disk (one JSON file per key, atomic rename), keyed by
the harness code, the check text and its SAU id, the content of the executed copy and of the agent
view, the sandbox (backend, image, Python env and its pinned requirements) and the check limits:
rerunning or adding judges never re-runs a check.

An **expected** result (``{metric, value, tolerance}`` or a list) is matched against the metrics the
execution captured: absent -> ``missing``, outside the tolerance -> ``drifted``, else aligned.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import secrets
import shutil
import stat
import tempfile
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

#: Bump when the meaning of an outcome changes (the source hash covers the rest).
HARNESS_VERSION = "1"
CHECK_DIR = "/sabench-check"
CHECK_PATH = f"{CHECK_DIR}/check.py"
RUNNER_PATH = f"{CHECK_DIR}/_sabench_runner.py"
MARKER = "[sabench-check "
OUTCOMES = ("pass", "fail", "placeholder", "missing", "error")
#: Limits of one check; the runtime config gives the backend, image and Python env.
DEFAULT_LIMITS: dict[str, Any] = {
    "time_limit_s": 60,
    "mem_mb": 1024,
    "pids": 128,
    "output_limit_mb": 64,
    "log_limit_kb": 64,
}
#: Folders and files left out of the content hash of the executed copy (derived from the sources).
_DIGEST_SKIP_DIRS = frozenset({"__pycache__", ".pytest_cache", ".ipynb_checkpoints"})
_DIGEST_SKIP_SUFFIXES = (".pyc", ".pyo")
#: Files that are bookkeeping, not content (Snakemake marks directory outputs with one).
IGNORED_FILES = frozenset({".snakemake_timestamp"})

# The program that runs inside the sandbox. Standard library only; everything it needs is imported
# before the submission goes on sys.path, so a submission file named like a stdlib module cannot
# shadow it. It always ends with os._exit, so threads or atexit handlers of the code under test
# cannot hold the sandbox open.
RUNNER = r'''
import errno, json, os, socket, sys, traceback, types, urllib.error

CHECK, SUBMISSION = sys.argv[1], sys.argv[2]
NONCE = os.environ.pop("SABENCH_CHECK_NONCE", "")
NET_ERRNOS = {errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ECONNREFUSED, errno.ENETDOWN,
              errno.EADDRNOTAVAIL}


def report(kind, detail="", where=None, code=1):
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    line = json.dumps({"kind": kind, "detail": str(detail)[:2000], "where": where})
    os.write(2, ("\n[sabench-check %s] %s\n" % (NONCE, line)).encode("utf-8", "replace"))
    os._exit(code)


def frames(tb):
    return [(f.filename, f.lineno) for f in traceback.extract_tb(tb)]


def in_submission(filename):
    return filename.startswith(SUBMISSION + "/")


def where(stack):
    for filename, line in reversed(stack):
        if in_submission(filename):
            return [os.path.relpath(filename, SUBMISSION), line]
    return None


def chain(exc):
    seen = []
    while exc is not None and exc not in seen and len(seen) < 8:
        seen.append(exc)
        exc = getattr(exc, "reason", None) if isinstance(exc, urllib.error.URLError) else (
            exc.__cause__ or exc.__context__)
    return seen


def is_network(exc):
    return any(isinstance(e, socket.gaierror) or (isinstance(e, OSError) and e.errno in NET_ERRNOS)
               for e in chain(exc) if isinstance(e, BaseException))


def outside(exc):
    """A read-only file system, or an absolute path outside the working folder and /tmp."""
    for e in chain(exc):
        if not isinstance(e, OSError):
            continue
        if e.errno == errno.EROFS:
            return True
        name = e.filename if isinstance(e.filename, str) else ""
        if e.errno in (errno.EACCES, errno.EPERM, errno.ENOENT) and name.startswith("/") and not (
                name == SUBMISSION or name.startswith((SUBMISSION + "/", "/tmp/"))):
            return True
    return False


def submission_has(module):
    top = module.split(".")[0]
    return bool(top) and (os.path.isdir(os.path.join(SUBMISSION, top))
                          or os.path.isfile(os.path.join(SUBMISSION, top + ".py")))


def classify(exc, stack):
    last = stack[-1][0] if stack else ""
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    if isinstance(exc, NotImplementedError):
        return "placeholder", "the code under test is a stub: " + text
    if isinstance(exc, ModuleNotFoundError):
        name = exc.name or ""
        if submission_has(name) or last == CHECK:
            return "missing", "the submission has no module %r (%s)" % (name, text)
        return "error", "the code under test imports %r, which the sandbox env lacks" % name
    if isinstance(exc, ImportError):
        if exc.path and in_submission(str(exc.path)):
            return "missing", "the submission lacks what the check imports: " + text
        return "error", "an import outside the submission failed: " + text
    if isinstance(exc, NameError) and last == CHECK:
        return "error", "a bug in the check: " + text
    if is_network(exc):
        return "error", "tried the network, which checks do not have: " + text
    if outside(exc):
        return "error", "reached outside its working folder (read-only or absent): " + text
    if isinstance(exc, MemoryError):
        return "error", "ran out of memory: " + text
    return "fail", text


try:
    with open(CHECK, encoding="utf-8") as fh:
        code = compile(fh.read(), CHECK, "exec")
except (SyntaxError, ValueError, UnicodeDecodeError) as exc:
    report("error", "the check does not parse: %s" % exc)
sys.path.insert(0, SUBMISSION)
sys.argv = [CHECK]
module = types.ModuleType("__main__")
module.__file__ = CHECK
sys.modules["__main__"] = module
try:
    exec(code, module.__dict__)
except SystemExit as exc:
    status = exc.code
    stack = frames(exc.__traceback__)
    own = bool(stack) and stack[-1][0] == CHECK
    if status is None or status == 0:
        if own:
            report("pass", code=0)
        report("error", "the code under test exited with status 0 before the check finished",
               where(stack))
    if not isinstance(status, int):
        print(status, file=sys.stderr)
    who = "the check" if own else "the code under test"
    report("fail", "%s exited with status %r" % (who, status), where(stack))
except BaseException as exc:
    stack = frames(exc.__traceback__)
    traceback.print_exception(type(exc), exc, exc.__traceback__.tb_next)
    kind, detail = classify(exc, stack)
    report(kind, detail, where(stack))
report("pass", code=0)
'''


class ExpectedError(ValueError):
    """An ``expected`` entry that cannot be used; ``field`` is relative to ``expected``."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"expected{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Expectation:
    """One number the run must report: ``metric`` within ``tolerance`` of ``value``."""

    metric: str
    value: float
    #: absolute tolerance (a relative one is turned into an absolute one at parse time)
    tolerance: float
    #: how the tolerance was written, for the reasoning ("0.005", "1%", "default ±0.0005")
    written: str


_PERCENT = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*%\s*$")


def _default_tolerance(value: float) -> tuple[float, str]:
    """Half a unit in the last digit of the number as written (0.597 -> 0.0005, 12 -> 0.5)."""
    text = repr(float(value))
    if "e" in text or "E" in text:
        mantissa, _, exponent = text.lower().partition("e")
        decimals = len(mantissa.partition(".")[2].rstrip("0")) - int(exponent)
    else:
        decimals = len(text.partition(".")[2].rstrip("0"))
    tol = 0.5 * 10.0 ** (-decimals)
    return tol, f"±{tol:g} (half a unit of the last digit)"


def parse_expected(raw: Any) -> list[Expectation]:
    """Validate ``expected`` (a mapping or a list of them); raise :class:`ExpectedError`."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raise ExpectedError("", f"not a mapping or a list of mappings: {raw[:80]!r}") from None
    items = raw if isinstance(raw, list) else [raw]
    if not items:
        raise ExpectedError("", "an empty list: give at least one {metric, value}")
    out = []
    for i, item in enumerate(items):
        where = f"[{i}]" if isinstance(raw, list) else ""
        if not isinstance(item, Mapping):
            raise ExpectedError(where, "must be a mapping {metric, value, tolerance}")
        unknown = sorted(set(item) - {"metric", "value", "tolerance"})
        if unknown:
            raise ExpectedError(
                f"{where}.{unknown[0]}", "unknown key (allowed: metric, value, tolerance)"
            )
        metric = item.get("metric")
        if not isinstance(metric, str) or not metric.strip():
            raise ExpectedError(f"{where}.metric", f"a metric name is needed, got {metric!r}")
        value = item.get("value")
        if isinstance(value, bool) or not isinstance(value, int | float):
            hint = ""
            if isinstance(value, str) and re.fullmatch(r"\s*-?[0-9.]+[eE][-+]?[0-9]+\s*", value):
                hint = " (YAML reads 1e-4 as text: write 1.0e-4)"
            raise ExpectedError(f"{where}.value", f"{value!r} is not a number{hint}")
        if not math.isfinite(value):
            raise ExpectedError(f"{where}.value", f"{value!r} is not a finite number")
        tol_raw = item.get("tolerance")
        percent = _PERCENT.match(tol_raw) if isinstance(tol_raw, str) else None
        if tol_raw is None:
            tol, written = _default_tolerance(value)
        elif isinstance(tol_raw, int | float) and not isinstance(tol_raw, bool):
            if not math.isfinite(tol_raw) or tol_raw < 0:
                raise ExpectedError(f"{where}.tolerance", f"{tol_raw!r} must be a number >= 0")
            tol, written = float(tol_raw), f"±{tol_raw:g}"
        elif percent:
            pct = float(percent.group(1))
            tol, written = abs(value) * pct / 100.0, f"±{pct:g}%"
        else:
            raise ExpectedError(
                f"{where}.tolerance",
                f"{tol_raw!r} is not a tolerance "
                '(an absolute number such as 0.005, or a relative one such as "5%")',
            )
        out.append(Expectation(metric.strip(), float(value), tol, written))
    return out


@dataclass
class Outcome:
    """How one check or one expected result came out."""

    kind: str
    detail: str
    tail: str = ""
    where: tuple[str, int] | None = None
    exit_code: int | None = None
    status: str | None = None
    wall_s: float = 0.0
    cached: bool = False

    def __post_init__(self) -> None:
        if self.kind not in OUTCOMES:
            raise ValueError(f"unknown outcome {self.kind!r}")
        if self.where is not None:
            self.where = (str(self.where[0]), int(self.where[1]))

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("cached")
        return data


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)  # non-finite floats are stored as text ("nan", "inf")
        except ValueError:
            return None
    return None


def match_expected(exp: Expectation, metrics: Mapping[str, Any]) -> Outcome:
    """One expectation against the captured metrics."""
    if exp.metric not in metrics:
        near = sorted(k for k in metrics if k.split(".")[-1] == exp.metric.split(".")[-1])[:3]
        hint = f"; reported: {', '.join(near)}" if near else ""
        return Outcome(
            "missing",
            f"{exp.metric} is not reported ({len(metrics)} metric(s) captured{hint})",
        )
    got = _number(metrics[exp.metric])
    paper = f"the paper's {exp.value:g} {exp.written}"
    if got is None or not math.isfinite(got):
        return Outcome("fail", f"{exp.metric} = {metrics[exp.metric]!r}, not a number; {paper}")
    diff = abs(got - exp.value)
    if diff <= exp.tolerance * (1 + 1e-9) + 1e-12:
        return Outcome("pass", f"{exp.metric} = {got:g}, within {paper}")
    return Outcome("fail", f"{exp.metric} = {got:g}, outside {paper} (off by {diff:.3g})")


def check_syntax(text: str) -> str | None:
    """The check's syntax error as one line, or None (compiling runs nothing)."""
    try:
        compile(text, "check.py", "exec")
    except (SyntaxError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


# --- content hashes and the cache ------------------------------------------------------------


def tree_digest(root: Path | None) -> str | None:
    """Content hash of a folder (paths, sizes, bytes, link targets); bytecode caches left out."""
    if root is None or not Path(root).is_dir():
        return None
    digest = hashlib.sha256()
    base = str(root)
    for dirpath, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d not in _DIGEST_SKIP_DIRS)
        for name in sorted(files):
            if name.endswith(_DIGEST_SKIP_SUFFIXES) or name in IGNORED_FILES:
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, base)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                digest.update(f"L {rel}\0{os.readlink(path)}\0".encode("utf-8", "surrogateescape"))
            elif stat.S_ISREG(st.st_mode):
                digest.update(f"F {rel}\0{st.st_size}\0".encode("utf-8", "surrogateescape"))
                try:
                    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
                    with os.fdopen(fd, "rb") as fh:
                        for block in iter(lambda fh=fh: fh.read(1 << 20), b""):
                            digest.update(block)
                except OSError:
                    digest.update(b"<unreadable>")
        # links to folders are listed among dirs by os.walk (never followed): hash them too
        for name in list(dirs):
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                rel = os.path.relpath(path, base)
                digest.update(f"L {rel}\0{os.readlink(path)}\0".encode("utf-8", "surrogateescape"))
                dirs.remove(name)
    return digest.hexdigest()


def _sha(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


#: The harness's own code: any change to it invalidates every cached outcome.
HARNESS_HASH = _sha(HARNESS_VERSION.encode() + Path(__file__).read_bytes())


def env_identity(backend: str, runtime: Mapping[str, Any]) -> dict[str, Any]:
    """What the sandbox's software is: backend, image, Python env, its interpreter and its pins."""
    ident: dict[str, Any] = {"backend": backend, "image": runtime.get("image")}
    env = runtime.get("python_env")
    if env:
        root = Path(env).expanduser().resolve()
        python = root / "bin" / "python"
        stamp = root / ".sabench-requirements.sha256"
        ident["python_env"] = str(root)
        ident["python"] = str(python.resolve()) if python.exists() else None
        ident["requirements"] = stamp.read_text().strip() if stamp.is_file() else None
        cfg = root / "pyvenv.cfg"
        ident["pyvenv"] = _sha(cfg.read_bytes())[:16] if cfg.is_file() else None
    return ident


def cache_key(
    check_text: str,
    submission_digest: str | None,
    view_digest: str | None,
    env: Mapping[str, Any],
    limits: Mapping[str, Any],
    sau_id: str = "",
) -> str:
    """The content address of one check's outcome (the check sees its SAU id, so it counts)."""
    data = {
        "harness": HARNESS_HASH,
        "check": _sha(check_text),
        "sau": sau_id,
        "submission": submission_digest,
        "paper": view_digest,
        "env": dict(env),
        "limits": {k: limits[k] for k in sorted(DEFAULT_LIMITS) if k in limits},
    }
    return _sha(json.dumps(data, sort_keys=True, default=str))


def default_cache_dir() -> Path:
    """``$SABENCH_EXEC_CACHE``, else ``.cache/sabench/exec`` in the repository (git-ignored)."""
    env = os.environ.get("SABENCH_EXEC_CACHE")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1] / ".cache" / "sabench" / "exec"


class CheckCache:
    """One JSON file per key under ``root/<2 hex>/``, written by atomic rename."""

    def __init__(self, root: Path | str | None) -> None:
        self.root = Path(root) if root else None

    def _path(self, key: str) -> Path:
        assert self.root is not None
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Outcome | None:
        if self.root is None:
            return None
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
            outcome = Outcome(**data)
        except (OSError, ValueError, TypeError):
            return None
        outcome.cached = True
        return outcome

    def put(self, key: str, outcome: Outcome) -> None:
        if self.root is None or outcome.kind == "error":  # faults may be transient: retry them
            return
        from sabench.io import write_json

        with contextlib.suppress(OSError):  # a read-only or full cache never fails a judgment
            write_json(self._path(key), outcome.to_json())


# --- running one check -----------------------------------------------------------------------


def _parse_log(text: str, nonce: str) -> tuple[dict[str, Any] | None, str]:
    """(the runner's report, the check's own output without sabench's lines)."""
    report = None
    kept = []
    tag = f"{MARKER}{nonce}] "
    for line in text.splitlines():
        if line.startswith(tag):
            try:
                report = json.loads(line[len(tag) :])
            except ValueError:
                report = None
            continue
        if line.startswith("[sabench] ") and not line.startswith("[sabench] ..."):
            continue
        kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    return report, "\n".join(kept)


def run_check(
    check_text: str,
    executed: Path,
    agent_view: Path | None,
    runtime: Mapping[str, Any],
    limits: Mapping[str, Any] | None = None,
    *,
    backend: Any = None,
    sau_id: str = "",
    tail_chars: int = 1500,
) -> Outcome:
    """Run one check in a fresh sandbox on a fresh copy of ``executed``; never raises for what
    the check does. ``runtime`` is resolved (:func:`sabench.sandbox.settings.resolve_runtime`)."""
    from sabench.execute import fresh_copy
    from sabench.sandbox import Mount, SandboxSpec, get_backend

    lim = {**DEFAULT_LIMITS, **(limits or {})}
    syntax = check_syntax(check_text)
    if syntax:
        return Outcome("error", f"the check does not parse: {syntax}")
    if not Path(executed).is_dir():
        return Outcome("error", f"no executed copy at {executed}: nothing to check")
    t0 = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="sabench-check-"))
    try:
        work = scratch / "submission"
        fresh_copy(Path(executed), work)
        check_dir = scratch / "check"
        check_dir.mkdir()
        (check_dir / "check.py").write_text(check_text, encoding="utf-8")
        (check_dir / "_sabench_runner.py").write_text(RUNNER, encoding="utf-8")
        for path in (check_dir, check_dir / "check.py", check_dir / "_sabench_runner.py"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        mounts = [Mount(check_dir, CHECK_DIR)]
        if agent_view is not None and Path(agent_view).is_dir():
            mounts.append(Mount(Path(agent_view), "/paper"))
        nonce = secrets.token_hex(8)
        spec = SandboxSpec(
            command=["python", "-I", "-B", "-u", RUNNER_PATH, CHECK_PATH, "/submission"],
            workdir=work,
            ro_mounts=mounts,
            env={
                "PYTHONPATH": "/submission",
                "PYTHONDONTWRITEBYTECODE": "1",
                "SABENCH_CHECK_NONCE": nonce,
                "SABENCH_SAU_ID": sau_id,
                "MPLBACKEND": "Agg",
            },
            time_limit_s=float(lim["time_limit_s"]),
            mem_mb=int(lim["mem_mb"]),
            pids=int(lim["pids"]),
            output_limit_mb=int(lim["output_limit_mb"]),
            log_limit_kb=int(lim["log_limit_kb"]),
            network="none",
            gpus=0,
            image=runtime.get("image"),
            python_env=runtime.get("python_env"),
        )
        log_path = scratch / "check.log"
        try:
            sandbox = backend or get_backend(runtime.get("backend", "auto"))
            result = sandbox.run(spec, log_path)
        except Exception as exc:  # a broken backend or env: the judgment is an error, not a crash
            return Outcome(
                "error",
                f"sandbox fault: {type(exc).__name__}: {exc}",
                status="sandbox_error",
                wall_s=time.monotonic() - t0,
            )
        text = log_path.read_text(encoding="utf-8", errors="replace") if log_path.is_file() else ""
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    report, output = _parse_log(text, nonce)
    tail = output[-tail_chars:] if tail_chars > 0 else ""
    common = {
        "tail": tail,
        "exit_code": result.exit_code,
        "status": result.status,
        "wall_s": round(result.wall_s, 3),
    }
    problems = {
        "sandbox_error": f"sandbox fault: {result.message or 'see log'}",
        "timeout": f"the check did not finish within {lim['time_limit_s']:g} s",
        "oom": f"the check ran out of memory ({lim['mem_mb']} MB)",
        "output_limit": f"the check wrote more than {lim['output_limit_mb']} MB",
    }
    if result.status in problems:
        return Outcome("error", problems[result.status], **common)
    if report is None or report.get("kind") not in OUTCOMES:
        return Outcome(
            "error",
            f"the check process ended with status {result.exit_code} before the runner could "
            "report (killed, or os._exit in the code under test)",
            **common,
        )
    where = report.get("where")
    detail = str(report.get("detail") or "")
    if report["kind"] == "pass" and not detail:
        lines = [line.strip() for line in output.splitlines() if line.strip()]
        detail = lines[-1][:300] if lines else "the check ran to the end"
    return Outcome(
        report["kind"],
        detail,
        where=tuple(where) if isinstance(where, list) and len(where) == 2 else None,
        **common,
    )
