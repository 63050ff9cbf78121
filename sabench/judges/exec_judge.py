"""The ``exec`` judge: decide SAUs by running things, not by reading code.

It judges only the SAUs that carry a ``check`` (a Python program run against the executed
submission, see :mod:`sabench.checks`) or an ``expected`` result (matched against the metrics the
execution captured); every other SAU gets no row from it.

* check: pass -> aligned, but missing (omission) when a function or class the check imports is
  one that the submission's own run never ran (its trace, ``execution["lines_run"]``; without
  one, :meth:`sabench.index.CodeIndex.dead_definition`: nothing reaches it): code the run never
  uses implements nothing, however well it works; the code under test ending or hanging the check -> drifted
  (crashed_under_check); a function the check used returning, on its own run's inputs, what it
  did not return there, or the check running a function the completed run never ran (reached
  through code the run did run) -> drifted (check_dependent); fail -> drifted (implementation_mismatch); a stub raising
  NotImplementedError -> placeholder; an import of the submission's code that fails -> missing
  (omission); anything that says more about the check or the sandbox than about the submission
  (does not parse, times out, tries the network, a sandbox fault, ...) -> error, never drift.
* expected: the metric within the tolerance -> aligned; outside -> drifted, with both numbers;
  absent -> missing. A run whose execution did not end ``ok`` (failed, timed out, no
  reproduce.sh) reports nothing: its expected results are ``missing``, whatever files it left.
  A result the submission writes as a literal (:mod:`sabench.judges.fabrication`) -> drifted
  (fabricated_result), whatever the run reported.
* Checks run whatever the execution's status: a check imports code, and the code may be right even
  when the run failed later (its reasoning names the status). But a pass on a function that a run
  which did not complete never reached (its trace) is partial, at most ``UNREACHED_CAP``: the code
  works, nothing shows the run uses it. An empty submission has no code to
  import: its checks are ``missing`` without starting a sandbox.
* An SAU with both: drifted, placeholder or missing from either part wins; otherwise error if a
  part could not be decided; otherwise aligned.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import logging
import os
import textwrap
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sabench.checks import (
    DEFAULT_LIMITS,
    IGNORED_FILES,
    CheckCache,
    ExpectedError,
    Outcome,
    cache_key,
    default_cache_dir,
    env_identity,
    match_expected,
    parse_expected,
    run_check,
    tree_digest,
)
from sabench.contracts import CHECK_DEPENDENT, CRASHED, UNREACHED_CAP, Evidence, Judgment
from sabench.errors import UserError
from sabench.faults import Fault
from sabench.index import CodeIndex, build_index
from sabench.index.model import Definition
from sabench.judges.fabrication import FABRICATED, METRICS_FILES, fabricated_by_sau
from sabench.judges.fabrication import reasoning as fabricated_reasoning
from sabench.judges.registry import JudgeInputs
from sabench.reseed import stayed_of, stayed_reasoning

log = logging.getLogger("sabench.judges.exec")

EXEC = "exec"
#: ``judge_settings.exec`` keys and their defaults (the limits apply to each check).
DEFAULT_SETTINGS: dict[str, Any] = {
    **DEFAULT_LIMITS,
    "total_time_s": 900,
    "cache": True,
    "cache_dir": None,
    "tail_chars": 1500,
}
VERDICT = {
    "pass": "aligned",
    "fail": "drifted",
    "crash": "drifted",
    "inconsistent": "drifted",
    "placeholder": "placeholder",
    "missing": "missing",
    "error": "error",
    "unused": "missing",
    "unreached": "partial",
    "unconfirmed": "partial",
}
#: Outcomes whose failure mode is their own, not their verdict's.
OUTCOME_FAILURE_MODE = {"crash": CRASHED, "inconsistent": CHECK_DEPENDENT}
FAILURE_MODE = {
    "drifted": "implementation_mismatch",
    "placeholder": "placeholder",
    "missing": "omission",
}
#: Which part decides an SAU with both a check and expected results (first wins).
_PRECEDENCE = (
    "inconsistent",
    "crash",
    "fail",
    "placeholder",
    "missing",
    "error",
    "unused",
    "unreached",
    "unconfirmed",
    "pass",
)


def resolve_exec_settings(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    merged = {**DEFAULT_SETTINGS, **{k: v for k, v in (settings or {}).items() if v is not None}}
    unknown = sorted(set(merged) - set(DEFAULT_SETTINGS))
    if unknown:
        raise UserError(
            None,
            f"judge_settings.exec.{unknown[0]}",
            f"unknown setting (known: {', '.join(sorted(DEFAULT_SETTINGS))})",
        )
    for key in (*DEFAULT_LIMITS, "total_time_s"):
        value = merged[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise UserError(
                None, f"judge_settings.exec.{key}", f"must be a positive number, got {value!r}"
            )
    return merged


def has_expected(sau: Mapping[str, Any]) -> bool:
    """Whether the SAU names results the exec judge matches against the captured metrics."""
    return sau.get("expected") not in (None, "", "null")


def has_exec_part(sau: Mapping[str, Any]) -> bool:
    """Whether the exec judge has something to run or match for this SAU."""
    return bool(sau.get("check")) or has_expected(sau)


def _metrics_line(executed: Path | None, metric: str) -> Evidence | None:
    """Where the metric's value sits in the first metrics file (for the evidence column)."""
    if executed is None:
        return None
    path = executed / "results.json"
    try:
        if path.is_symlink() or path.stat().st_size > 4 << 20:
            return None
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for needle in (json.dumps(metric), json.dumps(metric.split(".")[-1])):
        for i, line in enumerate(lines, 1):
            if needle in line:
                return Evidence("results.json", i, i)
    return Evidence("results.json", 1, max(len(lines), 1))


def _stayed(sau: Mapping[str, Any], execution: Mapping[str, Any] | None) -> list[str]:
    """The SAU's expected metrics that stayed when the run was re-seeded (sabench.reseed)."""
    try:
        return stayed_of((e.metric for e in parse_expected(sau["expected"])), execution)
    except ExpectedError:
        return []


def _expected_outcomes(
    raw: Any, execution: Mapping[str, Any] | None, executed: Path | None
) -> list[tuple[Outcome, Evidence | None]]:
    try:
        expectations = parse_expected(raw)
    except ExpectedError as exc:  # imported before validation existed: judge, do not crash
        return [(Outcome("error", f"expected: {exc}"), None)]
    status = (execution or {}).get("status")
    if execution is None:
        return [(Outcome("missing", "no execution record: nothing was reported"), None)]
    if status != "ok":
        why = f"the run did not complete (execution {status}): its results are not counted"
        return [(Outcome("missing", f"{e.metric}: {why}"), None) for e in expectations]
    metrics = execution.get("metrics") or {}
    out = []
    for exp in expectations:
        outcome = match_expected(exp, metrics)
        ev = _metrics_line(executed, exp.metric) if outcome.kind != "missing" else None
        out.append((outcome, ev))
    return out


def _imported(check_text: str) -> list[tuple[str, str]]:
    """The submission's functions and classes the check takes by name: ``from kmeans import
    kmeans_plusplus_init``, ``import main`` then ``main.main()``, as (module, name)."""
    try:
        tree = ast.parse(check_text)
    except (SyntaxError, ValueError):
        return []
    wanted: list[tuple[str, str]] = []
    modules: dict[str, str] = {}  # the names `import m` / `import m as x` bind
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            wanted += [(node.module, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            modules.update({a.asname or a.name: a.name for a in node.names})
    for node in ast.walk(tree):
        value = node.value if isinstance(node, ast.Attribute) else None
        if isinstance(value, ast.Name) and value.id in modules:
            wanted.append((modules[value.id], node.attr))  # type: ignore[attr-defined]
    return list(dict.fromkeys(wanted))


def _unused_targets(
    check_text: str,
    index: CodeIndex,
    lines_run: Mapping[str, Any] | None,
    under_check: Mapping[str, Any] | None = None,
) -> list[str]:
    """What the check takes from the submission (:func:`_imported`) that the submission's own
    run never ran, as ``name (file:line)``: by the run's trace where there is one (no line of the
    body ran), else by reading the code (nothing reaches it from an entry point). A wrapper that
    computes nothing itself (``return Objective(X, y)(w)``) and under the check ran only code
    the run ran is the run's computation under another name: not unused."""
    out = []
    for module, name in _imported(check_text):
        if lines_run is None:
            d = index.dead_definition(module, name)
        else:
            d = _never_ran(index, lines_run, module, name)
            if (
                d is not None
                and under_check
                and _delegates_to_run(index, d, lines_run, under_check)
            ):
                d = None
        if d is not None:
            out.append(f"`{name}` ({index.files[d.fid].path}:{d.start})")
    return out


def _delegates_to_run(
    index: CodeIndex, d: Definition, lines_run: Mapping[str, Any], under_check: Mapping[str, Any]
) -> bool:
    """``d`` does no arithmetic of its own, and every line of a function body that the check ran
    outside ``d`` the run ran too (and there is one)."""
    source = "\n".join(index.files[d.fid].lines[d.start - 1 : d.end])
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return False
    if any(isinstance(n, ast.BinOp | ast.UnaryOp | ast.Compare) for n in ast.walk(tree)):
        return False
    own = (index.files[d.fid].path, set(range(d.start, d.end + 1)))
    elsewhere = False
    for x in index.definitions:
        path = index.files[x.fid].path
        body = set(range(x.start + 1, x.end + 1)) - (own[1] if path == own[0] else set())
        seen = body & set(under_check.get(path) or ())
        if not seen <= set(lines_run.get(path) or ()):
            return False
        elsewhere = elsewhere or bool(seen)
    return elsewhere


def _target_sites(check_text: str, index: CodeIndex) -> list[Evidence]:
    """Where the submission defines what the check takes from it (:func:`_imported`): the lines
    a verdict cites when no frame of the submission's own code says more (a failed assertion
    sits in the check, which the run folder does not keep)."""
    sites = []
    for module, name in _imported(check_text):
        for d in index.module_definitions(module, name):
            sites.append(Evidence(index.files[d.fid].path, d.start, d.end))
    return list(dict.fromkeys(sites))


def _check_only(
    check_text: str,
    index: CodeIndex,
    lines_run: Mapping[str, Any],
    under_check: Mapping[str, Any],
) -> list[str]:
    """Functions that ran under the check, in modules the run ran, but of whose body the run
    itself ran no line, and that the check did not call by name: code reachable only under a
    check (a branch on something that tells a check from the run), as ``name (file:line)``."""
    named = {name for _, name in _imported(check_text)}
    out = []
    for d in index.definitions:
        path = index.files[d.fid].path
        if path not in lines_run or d.name in named:
            continue
        body = set(range(d.start + 1, d.end + 1))
        if body & set(under_check.get(path) or ()) and not body & set(lines_run[path]):
            out.append(f"`{d.name}` ({path}:{d.start})")
    return out


def _lines_only_under_check(
    index: CodeIndex, lines_run: Mapping[str, Any], under_check: Mapping[str, Any]
) -> list[str]:
    """Lines, as ``file:line``, of functions the run ran, that ran under the check and never in
    the run: a branch the check took and the run did not (``if len(X) > 64: <fast path>``), so
    what the check passed on is not all the run ran."""
    out = []
    for d in index.definitions:
        path = index.files[d.fid].path
        ran, seen = set(lines_run.get(path) or ()), set(under_check.get(path) or ())
        body = set(range(d.start + 1, d.end + 1))
        extra = sorted((body & seen) - ran)
        if body & ran and extra:
            out.append(f"{path}:{extra[0]}")
    return sorted(set(out))


def _never_ran(
    index: CodeIndex, lines_run: Mapping[str, Any], module: str, name: str
) -> Definition | None:
    """The module-level definition ``name`` of ``module`` none of whose body lines ran in the
    submission's own execution (its ``def`` line runs at import; a one-line body proves nothing)."""
    found = index.module_definitions(module, name)
    for d in found:
        ran = set(lines_run.get(index.files[d.fid].path) or ())
        body = set(range(d.start + 1, d.end + 1))
        if not body or body & ran:
            return None
    return found[0] if found else None


def _after_pass(
    outcome: Outcome, check: str, index: CodeIndex, execution: Mapping[str, Any] | None
) -> Outcome:
    """A pass on code the run's own execution never ran: ``inconsistent`` when the check reached
    it through code the run did run (it is there only for checks), ``unused`` when the check
    called it by name (the code works; the pipeline does not use it, so it implements nothing)."""
    # a run that did not complete left code unrun that a complete run would have run: what it
    # never reached works under the check, but nothing shows the run uses it (at most partial)
    status = (execution or {}).get("status")
    ran = (execution or {}).get("lines_run")
    if status != "ok" and ran is not None:
        unreached = _unused_targets(check, index, ran)
        if unreached:
            note = (
                f"{outcome.detail}; but the run did not complete (execution {status}) and never"
                f" reached {', '.join(unreached)}: the code works under the check, but nothing"
                " shows the run uses it (at most partial)"
            )
            return dataclasses.replace(outcome, kind="unreached", detail=note)
        return outcome
    lines_run = ran if status == "ok" else None
    if lines_run is not None and outcome.lines:
        only = _check_only(check, index, lines_run, outcome.lines)
        if only:
            note = (
                f"the check passed, but under it the code under test ran {', '.join(only[:5])},"
                " of which the submission's own run ran nothing: code reachable only under a check"
            )
            return dataclasses.replace(outcome, kind="inconsistent", detail=note)
        other = _lines_only_under_check(index, lines_run, outcome.lines)
        if other:
            note = (
                f"{outcome.detail}; but under the check the code ran {', '.join(other[:3])},"
                " which the submission's own run never ran: the check confirmed a path the run"
                " did not take (at most partial)"
            )
            return dataclasses.replace(outcome, kind="unconfirmed", detail=note)
    unused = _unused_targets(check, index, lines_run, outcome.lines)
    if unused:
        note = (
            f"{outcome.detail}; but nothing in the submission runs"
            f" {', '.join(unused)}: the code works, but the run never uses it, so it implements"
            " nothing"
        )
        return dataclasses.replace(outcome, kind="unused", detail=note)
    return outcome


def _is_empty(folder: Path) -> bool:
    try:
        return not any(e.name not in IGNORED_FILES for e in os.scandir(folder))
    except OSError:
        return True


def _combine(parts: list[tuple[str, Outcome, list[Evidence]]]) -> tuple[str, str, list[Evidence]]:
    kinds = {o.kind for _, o, _ in parts}
    kind = next(k for k in _PRECEDENCE if k in kinds)
    lines = []
    evidence = []
    for label, outcome, sites in parts:
        # a cached outcome reads the same (the row's `cached` says so): reruns give equal tables
        text = f"{label} {outcome.kind}: {outcome.detail}".rstrip()
        if outcome.tail and outcome.kind != "pass":
            text += f"\n--- output (tail) ---\n{outcome.tail}"
        lines.append(text)
        evidence += [ev for ev in sites if ev not in evidence]
    return kind, "\n".join(lines), evidence


def judge_exec(
    submission: Path | str,
    saus: list[dict[str, Any]],
    execution: Mapping[str, Any] | None,
    *,
    executed: Path | str | None,
    runtime: Mapping[str, Any] | None = None,
    settings: Mapping[str, Any] | None = None,
    backend: Any = None,
) -> list[Judgment]:
    """Judge the SAUs with a check or expected results; see the module docstring."""
    from sabench.sandbox.settings import default_python_env, resolve_runtime

    cfg = resolve_exec_settings(settings)
    todo = [s for s in saus if has_exec_part(s)]
    if not todo:
        return []
    metrics_files = (runtime or {}).get("metrics_files") or METRICS_FILES
    fabricated = fabricated_by_sau(submission, todo, metrics_files)
    executed_path = Path(executed) if executed is not None else None
    source_note = ""
    if (executed_path is None or not executed_path.is_dir()) and Path(submission).is_dir():
        # execution switched off (runtime.execute: false): the code is still there to import
        executed_path, source_note = Path(submission), " (no executed copy: checked the submission)"
    needs_sandbox = any(s.get("check") for s in todo)
    empty = executed_path is None or not executed_path.is_dir() or _is_empty(executed_path)
    run_cfg: dict[str, Any] = {}
    cache = CheckCache(None)
    sub_digest = None
    env: dict[str, Any] = {}
    if needs_sandbox and not empty:
        rt = dict(runtime or {})
        rt["python_env"] = rt.get("python_env") or default_python_env()
        run_cfg = resolve_runtime(rt)
        if backend is None:
            from sabench.sandbox import get_backend

            try:
                backend = get_backend(run_cfg["backend"])
            except Exception as exc:  # no usable sandbox: every check of this run is an error
                log.error("exec: no sandbox for the checks: %s: %s", type(exc).__name__, exc)
                raise Fault("sandbox_error", f"no sandbox for the checks: {exc}") from None
        name = getattr(backend, "name", "unavailable")
        env = env_identity(name, run_cfg)
        if cfg["cache"]:
            cache = CheckCache(cfg["cache_dir"] or default_cache_dir())
        sub_digest = tree_digest(executed_path)
    status = (execution or {}).get("status", "not executed")
    status_note = "" if status == "ok" else f" (execution {status}; the check ran anyway)"
    status_note = source_note or status_note
    limits = {k: cfg[k] for k in DEFAULT_LIMITS}
    spent = 0.0
    index: CodeIndex | None = None  # built once, when a check passes or has no site of its own
    judgments = []
    checked: list[str] = []  # per judgment, its check's outcome ("" without a check)
    sandbox_faults: list[str] = []
    for sau in todo:
        t0 = time.monotonic()
        parts: list[tuple[str, Outcome, list[Evidence]]] = []
        check = sau.get("check")
        if check:
            if empty:
                outcome = Outcome("missing", "the submission is empty: no code to check")
            else:
                key = cache_key(check, sub_digest, env, limits)
                outcome = cache.get(key)
                if outcome is None and spent >= cfg["total_time_s"]:
                    outcome = Outcome(
                        "error",
                        f"not run: the exec judge's time budget of {cfg['total_time_s']:g} s "
                        "(judge_settings.exec.total_time_s) is spent",
                    )
                elif outcome is None:
                    outcome = run_check(
                        check,
                        executed_path,  # type: ignore[arg-type]
                        run_cfg,
                        limits,
                        backend=backend,
                        tail_chars=int(cfg["tail_chars"]),
                    )
                    spent += time.monotonic() - t0
                    cache.put(key, outcome)
                if outcome.status == "sandbox_error":
                    sandbox_faults.append(outcome.detail)
                if outcome.kind != "pass" and status_note:
                    outcome.detail += status_note
                if outcome.kind in ("pass", "unconfirmed") and Path(submission).is_dir():
                    index = index or build_index(Path(submission))
                    outcome = _after_pass(outcome, check, index, execution)
            where = outcome.where
            sites = [Evidence(where[0], where[1], where[1])] if where else []
            if not sites and not empty and Path(submission).is_dir():
                index = index or build_index(Path(submission))
                sites = _target_sites(check, index)
            parts.append(("check", outcome, sites))
        fab = fabricated.get(str(sau["sau_id"]))
        stayed = _stayed(sau, execution) if has_expected(sau) else []
        if has_expected(sau):
            for outcome, ev in _expected_outcomes(sau["expected"], execution, executed_path):
                parts.append(("expected", outcome, [ev] if ev else []))
            if fab:  # typed in, not computed: it scores 0 even where it matches the paper
                site = Evidence(fab[0].file, fab[0].line, fab[0].line)
                parts.insert(0, ("expected", Outcome("fail", fabricated_reasoning(fab)), [site]))
            elif stayed:  # the same number whatever the run computed: not computed by it
                parts.insert(0, ("expected", Outcome("fail", stayed_reasoning(stayed)), []))
        kind, reasoning, evidence = _combine(parts)
        checked.append(next((o.kind for label, o, _ in parts if label == "check"), ""))
        verdict = VERDICT[kind]
        made_up = fab or stayed
        mode = FABRICATED if made_up else OUTCOME_FAILURE_MODE.get(kind, FAILURE_MODE.get(verdict))
        judgments.append(
            Judgment(
                sau_id=str(sau["sau_id"]),
                dimension=str(sau["dimension"]),
                verdict=verdict,
                # else the verdict's
                score=UNREACHED_CAP if kind in ("unreached", "unconfirmed") else None,
                failure_mode=mode,
                evidence=evidence,
                reasoning=reasoning,
                cached=any(label == "check" and o.cached for label, o, _ in parts),
                latency_s=round(time.monotonic() - t0, 4),
            )
        )
    if sandbox_faults:  # not the submission's doing: the run is redone, never scored
        raise Fault(
            "sandbox_error",
            f"{len(sandbox_faults)} check(s) could not run: {sandbox_faults[0]}",
        )
    return _unconfirmed_beside_inconsistent(judgments, checked)


def _unconfirmed_beside_inconsistent(
    judgments: list[Judgment], checked: list[str]
) -> list[Judgment]:
    """Once one check proved that the code under the checks behaves otherwise than in the run
    (``inconsistent``: a replayed call answered differently, or code ran only under a check),
    a check that passed on the same code confirms nothing about the run: at most partial.
    ``checked``: per judgment, its check's outcome kind."""
    proof = next(
        (j.sau_id for j, k in zip(judgments, checked, strict=True) if k == "inconsistent"), None
    )
    if proof is None:
        return judgments
    note = (
        f"\nbut the check of {proof} proved that this submission's code behaves otherwise under"
        " a check than in its own run: a pass confirms nothing about the run (at most partial)"
    )
    return [
        dataclasses.replace(j, verdict="partial", score=UNREACHED_CAP, reasoning=j.reasoning + note)
        if j.verdict == "aligned" and k == "pass"
        else j
        for j, k in zip(judgments, checked, strict=True)
    ]


def judge(inputs: JudgeInputs) -> list[Judgment]:
    """The registry's entry point: the run's ``executed/`` folder and the sandbox settings."""
    return judge_exec(
        inputs.submission,
        inputs.saus,
        inputs.execution,
        executed=inputs.folder / "executed",
        runtime=inputs.runtime,
        settings=inputs.settings,
    )
