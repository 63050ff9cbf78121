"""ResearchCodeBench: drift its authors' tests define.

RCB's authors wrote unit tests (``paper2code_test.py``) that say when a paper's annotated code is
right. Here sabench's drift types are injected into the authors' reference snippets, and a mutant
is a **real drift** when those tests fail on it. Then sabench's judges are measured on the real
drifts: does the static judge see them, does the exec judge (running the same tests as the SAU's
check, :func:`sabench.peer_data.researchcodebench.authors_check`) say exactly what the tests say.

* **Environments** (:func:`paper_environment`): a paper is runnable when its tests pass on the
  reference (all snippets in) in the sandbox, with the sandbox Python built from
  ``envs/researchcodebench.txt`` (CPU torch and what the tests import, from PyPI); else the reason
  is read from the output (:func:`why_not`): a missing package, a GPU, a download, a timeout.
* **Mutants** (:func:`snippet_mutants`): per snippet and drift type, the drift's own rule
  (:mod:`sabench.drift`: the literal changed as ``value`` changes it, the operator swapped as
  ``operator`` swaps it, ...) applied at the sites of the snippet's own lines (those of no inner
  snippet; a stub replaces the whole snippet), not at the sites a claim's words point to: the
  snippet says where the paper's code is. At most ``max_per_type`` per snippet and type, drawn
  with a seed; a mutant that no longer parses is dropped, identical ones are kept once. Mutants
  are made on the annotated file and saved without markers, as the reference is.
* **The tests' verdict** (:class:`TestRunner`): ``python <entry>`` in a copy of the reference
  submission (annotated files and the benchmark's scaffold) holding the mutant, in the sandbox
  (the configured backend, bwrap by default; no network, no trace; the exec judge's per-check
  limits, the time the check gives the tests), passing on RCB's own rule
  (exit 0 and none of its failure words in the output). A run past the time limit fails, as in
  RCB's harness (``timeout N python ...``): a timeout counts as caught. A sandbox fault is no
  verdict. Outcomes are cached on disk, keyed by every file's content hash, the entry point, the
  Python env and the limits, so a rerun runs nothing again.
* **The judges** (:func:`judge_mutant`): static on the submission an agent would leave (annotated
  and context files), exec through :func:`sabench.judges.exec_judge.judge_exec` on the same folder
  (its check writes the scaffold itself; the exec judge's own cache under the same folder).
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import hashlib
import itertools
import json
import random
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sabench.contracts import UNDETERMINED
from sabench.drift.mutants import DRIFT_TYPES, SIMPLE_STMTS, PyFile, apply_edits, body_lists
from sabench.drift.mutants import node_name as drift_node_name
from sabench.drift.mutants import parses as drift_parses
from sabench.drift.normalisation import call_inputs, imported_names, normalising_call
from sabench.drift.operators import swap_operator
from sabench.drift.removal import removal_edits
from sabench.drift.split import SplitClaim, list_values, new_value, python_sites
from sabench.drift.stub import stub_lines
from sabench.drift.swap import swap_statements
from sabench.drift.values import changed_literal
from sabench.peer_data.rcb_imports import missing_modules
from sabench.peer_data.researchcodebench import (
    CHECK_START_S,
    FAIL_WORDS,
    TEST_TIMEOUT_S,
    RCBPaper,
    Snippet,
    scaffold,
    strip_markers,
)

#: The drift types in the order of sabench.drift.
TYPES: tuple[str, ...] = tuple(DRIFT_TYPES)
#: Bump when what a cached test outcome means changes.
TEST_VERSION = "rcb-tests-1"
#: Limits of one run of the authors' tests: the exec judge's per-check limits, so the tests and
#: the check meet the same ones; the time is what the check gives the tests (``timeout_s`` of
#: ``snippet_saus``: pass the same to :class:`TestRunner` and :func:`exec_verdicts`).
TEST_LIMITS: dict[str, Any] = {
    "time_limit_s": TEST_TIMEOUT_S,
    "mem_mb": 1024,
    "pids": 128,
    "output_limit_mb": 64,
    "log_limit_kb": 64,
}
#: Keyword arguments and methods whose numbers name an axis or an index, not a setting: a value
#: drift changes what the paper sets (a rate, a scale, a count), never which axis is summed.
_AXIS_KEYWORDS = frozenset(
    {"dim", "axis", "dims", "axes", "keepdim", "keepdims", "start_dim", "end_dim", "dim0", "dim1"}
)
_AXIS_METHODS = frozenset(
    {"transpose", "permute", "unsqueeze", "squeeze", "flatten", "movedim", "swapaxes", "size"}
    | {"softmax", "log_softmax", "cat", "stack", "cumsum", "flip", "argmax", "argmin", "narrow"}
)
#: Names a removal never takes as the thing removed: modules, ``self``, Python's own names.
_NOT_REMOVED = frozenset({"self", "cls", "super"}) | frozenset(dir(builtins))
_SANDBOX_LINE = "[sabench] "


# --------------------------------------------------------------------------------------------
# Mutants
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SnippetMutant:
    """One drift of one snippet: the annotated file's new text, markers stripped."""

    paper: str
    sau_id: str
    snippet: str
    drift_type: str
    path: str
    line: int
    description: str
    text: str

    @property
    def digest(self) -> str:
        return hashlib.sha256(f"{self.path}\0{self.text}".encode()).hexdigest()[:16]


def own_lines(snippet: Snippet, snippets: Iterable[Snippet]) -> set[int]:
    """The snippet's lines that no inner snippet holds (markers of inner snippets left out)."""
    lines = set(range(snippet.start_line, snippet.end_line + 1))
    inside = [s for s in snippets if s.path == snippet.path and s is not snippet]
    for s in inside:
        if snippet.start_line <= s.start_line and s.end_line <= snippet.end_line:
            lines -= set(range(s.start_line - 1, s.end_line + 2))
    return lines


def _inside(node: ast.AST, lines: set[int]) -> bool:
    first = getattr(node, "lineno", None)
    last = getattr(node, "end_lineno", None) or first
    return first is not None and all(n in lines for n in range(first, last + 1))


#: A site: (line, what changes, a function giving the new text or None)
Site = tuple[int, str, Callable[[], str | None]]


def _value_sites(pf: PyFile, lines: set[int]) -> list[Site]:
    """Numeric literals that set something (not an axis or an index): ``changed_literal``."""
    out: list[Site] = []
    for node in ast.walk(pf.tree):
        if not (
            isinstance(node, ast.Constant)
            and type(node.value) in (int, float)
            and _inside(node, lines)
        ):
            continue
        parent = pf.parents.get(id(node))
        if isinstance(parent, ast.UnaryOp):
            parent = pf.parents.get(id(parent))
        if isinstance(parent, ast.keyword) and parent.arg in _AXIS_KEYWORDS:
            continue
        if isinstance(parent, ast.Call) and (drift_node_name(parent.func) or "") in _AXIS_METHODS:
            continue
        if any(isinstance(up, ast.Subscript) for up in _ancestors(pf, node, ast.stmt)):
            continue
        a, b = pf.span(node)
        token = pf.text[a:b]
        new = changed_literal(token, abs(float(node.value)))  # type: ignore[arg-type]

        def make(a: int = a, b: int = b, new: str = new) -> str | None:
            return apply_edits(pf.text, [(a, b, new)])

        out.append((node.lineno, f"`{token}` -> `{new}`", make))
    return out


def _ancestors(pf: PyFile, node: ast.AST, stop: type) -> Iterator[ast.AST]:
    cur = pf.parents.get(id(node))
    while cur is not None and not isinstance(cur, stop):
        yield cur
        cur = pf.parents.get(id(cur))


def _operator_sites(pf: PyFile, lines: set[int]) -> list[Site]:
    """Binary operations: ``swap_operator``."""
    out: list[Site] = []
    for node in ast.walk(pf.tree):
        if isinstance(node, ast.BinOp) and _inside(node, lines):
            seg = pf.segment(node).strip().replace("\n", " ")[:60]

            def make(node: ast.BinOp = node) -> str | None:
                swapped = swap_operator(pf, node)
                return swapped[0] if swapped else None

            out.append((node.lineno, f"operator swapped in `{seg}`", make))
    return out


def _removal_sites(pf: PyFile, lines: set[int]) -> list[Site]:
    """Each name the snippet's code uses (not a module, ``self`` or a builtin): the statements,
    entries and definitions of the snippet that name it removed (``removal_edits``)."""
    from sabench.judges.static import entity_keys

    if not lines:
        return []
    skip = _NOT_REMOVED | imported_names(pf.tree)
    lo, hi = min(lines), max(lines)
    first_of: dict[str, int] = {}
    for node in ast.walk(pf.tree):
        if isinstance(node, ast.Name | ast.Attribute) and _inside(node, lines):
            name = drift_node_name(node)
            if name and name not in skip and len(name) >= 3:
                first_of[name] = min(first_of.get(name, node.lineno), node.lineno)
    out: list[Site] = []
    for name, line in sorted(first_of.items(), key=lambda kv: (kv[1], kv[0])):
        keys = [k for k in entity_keys(name) if len(k) >= 3]
        if not keys:
            continue

        def make(keys: list[str] = keys) -> str | None:
            start, end = pf.starts[lo - 1], pf.starts[min(hi, len(pf.lines))]
            edits = [e for e in removal_edits(pf, keys) if start <= e[0] and e[1] <= end]
            edits = [e for e in edits if pf.text.count("\n", 0, e[0]) + 1 in lines]
            return apply_edits(pf.text, edits) if edits else None

        out.append((line, f"removed what names `{name}`", make))
    return out


def _swap_sites(pf: PyFile, lines: set[int]) -> list[Site]:
    """Two consecutive simple statements of one block: ``swap_statements``."""
    kinds = tuple(k for k in SIMPLE_STMTS if k is not ast.Return)
    out: list[Site] = []
    for node in ast.walk(pf.tree):
        for body in body_lists(node):
            for sa, sb in itertools.pairwise(body):
                if not all(isinstance(s, kinds) and _inside(s, lines) for s in (sa, sb)):
                    continue
                if isinstance(sa, ast.Expr) and isinstance(sa.value, ast.Constant):
                    continue  # a docstring

                def make(sa: ast.stmt = sa, sb: ast.stmt = sb) -> str | None:
                    return swap_statements(pf, sa, sb)

                out.append((sa.lineno, f"lines {sa.lineno} and {sb.lineno} swapped", make))
    return out


def _normalisation_sites(pf: PyFile, lines: set[int]) -> list[Site]:
    """Calls that normalise their input (``normalising_call``) replaced by it."""
    imported = imported_names(pf.tree)
    out: list[Site] = []
    for node in ast.walk(pf.tree):
        if isinstance(node, ast.Call) and _inside(node, lines) and normalising_call(node, imported):
            name = ast.unparse(node.func)

            def make(node: ast.Call = node) -> str | None:
                return apply_edits(pf.text, [(*pf.span(node), call_inputs(pf, node))])

            out.append((node.lineno, f"`{name}(...)` dropped, its input passed on", make))
    return out


def _split_sites(pf: PyFile, lines: set[int]) -> list[Site]:
    """Split shares and sizes (``python_sites``) moved as the split drift moves them."""
    sites = python_sites(pf)
    out: list[Site] = []
    seen: set[Any] = set()
    for site in sites:
        if site.line not in lines or site.group in seen:
            continue
        seen.add(site.group)
        group = [s for s in sites if s.group == site.group]
        moved = (
            list_values(group)
            if site.group[1] == "list"
            else {site: new_value(site, SplitClaim(set(), set(), set()))}
        )
        edits = [(s.start, s.end, v) for s, v in moved.items() if v is not None]

        def make(edits: list[tuple[int, int, str]] = edits) -> str | None:
            return apply_edits(pf.text, edits) if edits else None

        out.append((site.line, f"split `{site.name}` moved", make))
    return out


def _stub_sites(pf: PyFile, snippet: Snippet) -> list[Site]:
    """The whole snippet replaced by the TODO stub (``stub_lines``)."""
    first = next(
        (n for n in range(snippet.start_line, snippet.end_line + 1) if pf.lines[n - 1].strip()),
        None,
    )
    if first is None:
        return []

    def make() -> str | None:
        return stub_lines(pf, first, snippet.end_line)

    return [(first, f"snippet `{snippet.name}` replaced by a TODO stub", make)]


_SITES: dict[str, Callable[[PyFile, set[int]], list[Site]]] = {
    "value": _value_sites,
    "operator": _operator_sites,
    "removal": _removal_sites,
    "swap": _swap_sites,
    "normalisation": _normalisation_sites,
    "split": _split_sites,
}


def snippet_mutants(
    paper: RCBPaper,
    sau_ids: Mapping[tuple[str, str], str],
    *,
    max_per_type: int = 2,
    seed: int = 0,
    types: Iterable[str] = TYPES,
) -> list[SnippetMutant]:
    """Mutants of every snippet of ``paper`` (see the module docstring); ``sau_ids`` maps (path,
    snippet name) to the snippet's SAU id."""
    wanted = [t for t in TYPES if t in set(types)]
    files: dict[str, PyFile] = {}
    seen: set[str] = set()
    out: list[SnippetMutant] = []
    for snippet in paper.snippets:
        if not snippet.path.endswith(".py"):
            continue
        if snippet.path not in files:
            try:
                files[snippet.path] = PyFile(snippet.path, paper.files[snippet.path])
            except (SyntaxError, ValueError, RecursionError):
                continue
        pf = files[snippet.path]
        lines = own_lines(snippet, paper.snippets)
        sau_id = sau_ids.get((snippet.path, snippet.name), f"{paper.paper}-{snippet.name}")
        for kind in wanted:
            sites = _stub_sites(pf, snippet) if kind == "stub" else _SITES[kind](pf, lines)
            rng = random.Random(f"{seed}:{paper.paper}:{snippet.path}:{snippet.name}:{kind}")
            rng.shuffle(sites)
            taken = 0
            for line, what, make in sites:
                if taken >= max_per_type:
                    break
                try:
                    text = make()
                except (ValueError, IndexError, KeyError, RecursionError, AssertionError):
                    text = None
                if text is None or text == pf.text or not drift_parses(pf.path, text, pf.text):
                    continue
                mutant = SnippetMutant(
                    paper.paper,
                    sau_id,
                    snippet.name,
                    kind,
                    snippet.path,
                    line,
                    what,
                    strip_markers(text),
                )
                if mutant.digest in seen:
                    continue
                seen.add(mutant.digest)
                out.append(mutant)
                taken += 1
    return out


def snippet_sau_ids(paper: RCBPaper, saus: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    """(path, snippet name) -> SAU id: ``snippet_saus`` gives one row per snippet, in order."""
    return {(s.path, s.name): str(r["sau_id"]) for s, r in zip(paper.snippets, saus, strict=True)}


# --------------------------------------------------------------------------------------------
# The authors' tests in the sandbox
# --------------------------------------------------------------------------------------------


@dataclass
class TestOutcome:
    """How one run of the authors' tests ended. ``kind``: pass, fail, timeout (a failure, as in
    RCB's harness) or error (the sandbox could not run them: no verdict)."""

    __test__ = False  # not a test class (pytest)

    kind: str
    status: str
    exit_code: int | None
    wall_s: float
    said: list[str] = field(default_factory=list)
    tail: str = ""
    cached: bool = False

    @property
    def passed(self) -> bool:
        return self.kind == "pass"

    @property
    def decided(self) -> bool:
        return self.kind != "error"


def submission_files(paper: RCBPaper, mutant: SnippetMutant | None = None) -> dict[str, bytes]:
    """What an agent leaves: the annotated files (markers stripped, the mutant's file changed)
    and the context files."""
    out = {p: strip_markers(paper.files[p]).encode() for p in paper.annotated}
    out |= {p: paper.files[p].encode() for p in paper.context if p in paper.files}
    return out | ({mutant.path: mutant.text.encode()} if mutant else {})


def write_files(folder: Path, files: Mapping[str, bytes]) -> Path:
    for rel, data in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    return folder


def rcb_runtime(python_env: Path | str, backend: str = "bwrap") -> dict[str, Any]:
    """The sandbox settings of the tests and the checks: ``backend`` and the RCB Python env."""
    from sabench.sandbox.settings import resolve_runtime

    return resolve_runtime({"backend": backend, "python_env": str(python_env)})


class TestRunner:
    """Runs a paper's tests on a set of files in the sandbox, with an on-disk cache."""

    __test__ = False  # not a test class (pytest)

    def __init__(
        self,
        runtime: Mapping[str, Any],
        cache_dir: Path | None,
        limits: Mapping[str, Any] | None = None,
        backend: Any = None,
    ) -> None:
        from sabench.checks import env_identity
        from sabench.sandbox import get_backend

        self.runtime = dict(runtime)
        self.limits = {**TEST_LIMITS, **(limits or {})}
        self.backend = backend or get_backend(self.runtime["backend"])
        self.env = env_identity(getattr(self.backend, "name", "?"), self.runtime)
        self.cache = Path(cache_dir) / "tests" if cache_dir else None

    def key(self, files: Mapping[str, bytes], entry: str) -> str:
        digests = {p: hashlib.sha256(d).hexdigest() for p, d in sorted(files.items())}
        data = {"version": TEST_VERSION, "entry": entry, "files": digests}
        data |= {"env": self.env, "limits": self.limits}
        return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()

    def _cached(self, key: str) -> TestOutcome | None:
        if self.cache is None:
            return None
        try:
            data = json.loads((self.cache / key[:2] / f"{key}.json").read_text(encoding="utf-8"))
            return TestOutcome(**{**data, "cached": True})
        except (OSError, ValueError, TypeError):
            return None

    def _store(self, key: str, outcome: TestOutcome) -> None:
        if self.cache is None or not outcome.decided:
            return  # a sandbox fault may be transient: run it again next time
        from sabench.io import write_json

        with contextlib.suppress(OSError):
            write_json(self.cache / key[:2] / f"{key}.json", {**asdict(outcome), "cached": False})

    def run(self, files: Mapping[str, bytes], entry: str) -> TestOutcome:
        """``python <entry>`` in a folder holding ``files``, judged by RCB's rule."""
        key = self.key(files, entry)
        found = self._cached(key)
        if found is not None:
            return found
        outcome = self._run(files, entry)
        self._store(key, outcome)
        return outcome

    def _run(self, files: Mapping[str, bytes], entry: str) -> TestOutcome:
        from sabench.sandbox import SandboxSpec

        lim = self.limits
        with tempfile.TemporaryDirectory(prefix="sabench-rcb-") as tmp:
            work = write_files(Path(tmp) / "submission", files)
            numbers = {k: type(v)(lim[k]) for k, v in TEST_LIMITS.items()}
            spec = SandboxSpec(
                command=["python", entry],
                workdir=work,
                network="none",
                gpus=0,
                image=self.runtime.get("image"),
                python_env=self.runtime.get("python_env"),
                **numbers,
            )
            log = Path(tmp) / "tests.log"
            try:
                result = self.backend.run(spec, log)
            except Exception as exc:  # a broken backend: no verdict
                return TestOutcome("error", "sandbox_error", None, 0.0, tail=str(exc))
            text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
        out = "\n".join(x for x in text.splitlines() if not x.startswith(_SANDBOX_LINE))
        said = [w for w in FAIL_WORDS if w in out]
        common = {"exit_code": result.exit_code, "wall_s": round(result.wall_s, 3)}
        common |= {"said": said, "tail": out[-1500:]}
        if result.status == "sandbox_error":
            return TestOutcome("error", result.status, **common)
        if result.status == "timeout":
            return TestOutcome("timeout", result.status, **common)
        ok = result.status == "ok" and result.exit_code == 0 and not said
        return TestOutcome("pass" if ok else "fail", result.status, **common)


def reference_files(paper: RCBPaper, mutant: SnippetMutant | None = None) -> dict[str, bytes]:
    """What the authors' tests run on: the reference submission (annotated files and scaffold),
    with the mutant's file changed."""
    files = {p: strip_markers(paper.files[p]).encode() for p in paper.annotated}
    return files | scaffold(paper) | ({mutant.path: mutant.text.encode()} if mutant else {})


#: A not-runnable reason read from the reference's test output: (pattern, reason).
_REASONS: tuple[tuple[str, str], ...] = (
    (r"operator torchvision::\w+ does not exist", "torchvision: PyPI's wheels need CUDA torch"),
    (r"No module named '([\w.]+)'", "missing package: {0}"),
    (r"CUDA|cuda\(|NVIDIA driver|nccl", "needs a GPU"),
    (
        r"urlopen|URLError|Name or service not known|Temporary failure in name resolution"
        r"|Network is unreachable|huggingface|torch\.hub|No such file or directory: '[^']*\."
        r"(?:pt|pth|ckpt|bin|safetensors|npz)'",
        "needs data or weights downloaded",
    ),
)


def why_not(outcome: TestOutcome) -> str:
    """Why the reference's tests did not pass here, in a few words."""
    if outcome.kind == "timeout":
        return f"timeout (over {TEST_LIMITS['time_limit_s']} s)"
    if outcome.kind == "error":
        return f"sandbox fault: {outcome.tail[:80]}"
    for pattern, reason in _REASONS:
        m = re.search(pattern, outcome.tail)
        if m:
            return reason.format(*m.groups())
    last = [x for x in outcome.tail.splitlines() if x.strip()]
    return f"tests fail on the reference: {last[-1][:80] if last else outcome.status}"


@dataclass
class Environment:
    """Whether a paper's tests run here, and why not."""

    paper: str
    runnable: bool
    reason: str
    wall_s: float
    cached: bool


def paper_environment(paper: RCBPaper, runner: TestRunner) -> Environment:
    """The reference's tests in the sandbox: runnable when they pass; else why not, and every
    package the tests' imports need that the env lacks when one is missing."""
    outcome = runner.run(reference_files(paper), paper.test_entry_point)
    reason = "" if outcome.passed else why_not(outcome)
    env = runner.runtime.get("python_env")
    if reason.startswith("missing package") and env:
        lacking = missing_modules(paper, env)
        if len(lacking) > 1:
            reason = f"missing packages: {', '.join(lacking)}"
    return Environment(paper.paper, outcome.passed, reason, outcome.wall_s, outcome.cached)


# --------------------------------------------------------------------------------------------
# The judges on a mutant
# --------------------------------------------------------------------------------------------


@dataclass
class Verdict:
    """One judge's verdict and score on the targeted SAU (score None for ``error`` and
    ``undetermined``)."""

    verdict: str
    score: float | None
    cached: bool = False
    reasoning: str = ""

    @property
    def drifted(self) -> bool:
        """Scored below 1: what a recall counts (``error`` and ``undetermined`` never do)."""
        return self.score is not None and self.score < 1.0

    @property
    def judged(self) -> bool:
        """A verdict on the code: scored, or the judge abstained (``undetermined``, which a rate
        counts as judged, neither alarm nor catch); ``error`` is none."""
        return self.score is not None or self.verdict == UNDETERMINED

    @property
    def abstained(self) -> bool:
        return self.verdict == UNDETERMINED


def static_verdicts(folder: Path, saus: list[dict[str, Any]]) -> dict[str, Verdict]:
    """The static judge on every SAU of a submission folder."""
    from sabench.judges.static import judge_static

    return {
        j.sau_id: Verdict(j.verdict, j.score, reasoning=j.reasoning[:300])
        for j in judge_static(folder, saus)
    }


def exec_verdicts(
    folder: Path,
    saus: list[dict[str, Any]],
    runtime: Mapping[str, Any],
    cache_dir: Path | None,
    limits: Mapping[str, Any] | None = None,
) -> dict[str, Verdict]:
    """The exec judge on the SAUs (their check: the authors' tests) through its real path:
    :func:`~sabench.judges.exec_judge.judge_exec` on the folder, no execution record. A sandbox
    fault raises :class:`sabench.faults.Fault`."""
    from sabench.judges.exec_judge import judge_exec

    settings: dict[str, Any] = {**TEST_LIMITS, **(limits or {})}
    settings["time_limit_s"] = settings["time_limit_s"] + CHECK_START_S  # the check's own start
    settings["cache"] = cache_dir is not None
    settings["cache_dir"] = str(Path(cache_dir) / "exec") if cache_dir else None
    judged = judge_exec(folder, saus, None, executed=folder, runtime=runtime, settings=settings)
    return {j.sau_id: Verdict(j.verdict, j.score, j.cached, j.reasoning[-300:]) for j in judged}


@dataclass
class MutantResult:
    """A mutant, what the tests said, and what the judges said of its SAU."""

    mutant: SnippetMutant
    tests: TestOutcome
    static: Verdict | None = None
    static_reference: Verdict | None = None
    exec: Verdict | None = None
    seconds: float = 0.0

    @property
    def caught(self) -> bool:
        return self.tests.decided and not self.tests.passed

    @property
    def exec_matches(self) -> bool | None:
        """Whether the exec judge said what the tests said (None: either had no verdict)."""
        if self.exec is None or self.exec.score is None or not self.tests.decided:
            return None
        return self.exec.drifted == self.caught

    def row(self) -> dict[str, Any]:
        m = self.mutant
        return {
            "paper": m.paper,
            "sau_id": m.sau_id,
            "snippet": m.snippet,
            "drift_type": m.drift_type,
            "file": m.path,
            "line": m.line,
            "description": m.description,
            "digest": m.digest,
            "tests": self.tests.kind,
            "tests_wall_s": self.tests.wall_s,
            "caught": self.caught,
            "static_verdict": getattr(self.static, "verdict", None),
            "static_score": getattr(self.static, "score", None),
            "static_reference_score": getattr(self.static_reference, "score", None),
            "exec_verdict": getattr(self.exec, "verdict", None),
            "exec_matches": self.exec_matches,
            "cached": self.tests.cached and (self.exec is None or self.exec.cached),
            "seconds": round(self.seconds, 2),
        }


def judge_mutant(
    paper: RCBPaper,
    saus: list[dict[str, Any]],
    mutant: SnippetMutant,
    runner: TestRunner,
    *,
    static_reference: Mapping[str, Verdict] | None = None,
    exec_runtime: Mapping[str, Any] | None = None,
    cache_dir: Path | None = None,
    judge_all: bool = False,
) -> MutantResult:
    """The tests on the mutant; then, when they catch it (or ``judge_all``), the static judge and
    (with ``exec_runtime``) the exec judge on its SAU."""
    t0 = time.monotonic()
    result = MutantResult(
        mutant, runner.run(reference_files(paper, mutant), paper.test_entry_point)
    )
    if result.tests.decided and (result.caught or judge_all):
        sau = [s for s in saus if s["sau_id"] == mutant.sau_id]
        with tempfile.TemporaryDirectory(prefix="sabench-rcb-sub-") as tmp:
            folder = write_files(Path(tmp) / "submission", submission_files(paper, mutant))
            result.static = static_verdicts(folder, saus).get(mutant.sau_id)
            if static_reference is not None:
                result.static_reference = static_reference.get(mutant.sau_id)
            if exec_runtime is not None:
                ran = exec_verdicts(folder, sau, exec_runtime, cache_dir, runner.limits)
                result.exec = ran.get(mutant.sau_id)
    result.seconds = time.monotonic() - t0
    return result


def reference_verdicts(
    paper: RCBPaper,
    saus: list[dict[str, Any]],
    exec_runtime: Mapping[str, Any] | None,
    cache_dir: Path | None,
    limits: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Verdict], dict[str, Verdict]]:
    """(static, exec) verdicts on the unmutated reference: a drifted one is a false alarm. The
    SAUs of a paper share one check, so the exec judge runs it once (its cache has no SAU)."""
    with tempfile.TemporaryDirectory(prefix="sabench-rcb-ref-") as tmp:
        folder = write_files(Path(tmp) / "submission", submission_files(paper))
        static = static_verdicts(folder, saus)
        ran = exec_verdicts(folder, saus, exec_runtime, cache_dir, limits) if exec_runtime else {}
    return static, ran


# --------------------------------------------------------------------------------------------
# The per-type table
# --------------------------------------------------------------------------------------------


def _share(hits: int, n: int) -> float:
    return hits / n if n else float("nan")


def drift_table(
    results: list[MutantResult],
    false_static: Mapping[str, float],
    false_exec: Mapping[str, float],
) -> list[dict[str, Any]]:
    """Per drift type (and ``all``): mutants, caught by the tests, static recall (score below 1
    on the mutated snippet's SAU, over the caught mutants it judged: an abstention is judged and
    no catch), the static judge's abstentions on those mutants (``static_abstain``), static drop
    (below the reference's score), exec recall (exec says drifted), exec agreement with the tests
    on every mutant it judged; false alarms of each judge on the unmutated reference's SAUs of the
    same papers (``false_*``: SAU id -> 1.0 when judged below 1, 0.0 when not, an abstention
    included as 0.0)."""
    rows = []
    for kind in (*TYPES, "all"):
        rs = [r for r in results if kind in ("all", r.mutant.drift_type) and r.tests.decided]
        caught = [r for r in rs if r.caught]
        static = [r for r in caught if r.static is not None and r.static.judged]
        before = [getattr(r.static_reference, "score", None) for r in static]
        dropped = [
            r
            for r, b in zip(static, before, strict=True)
            if b is not None and r.static.score is not None and r.static.score < b  # type: ignore[union-attr]
        ]
        ex = [r for r in caught if r.exec is not None and r.exec.score is not None]
        judged = [r for r in rs if r.exec_matches is not None]
        sau_ids = {r.mutant.sau_id for r in rs}
        fs = [false_static[s] for s in sau_ids if s in false_static]
        fe = [false_exec[s] for s in sau_ids if s in false_exec]
        rows.append(
            {
                "drift_type": kind,
                "mutants": len(rs),
                "caught": len(caught),
                "static_recall": _share(sum(r.static.drifted for r in static), len(static)),  # type: ignore[union-attr]
                "static_abstain": _share(sum(r.static.abstained for r in static), len(static)),  # type: ignore[union-attr]
                "static_drop": _share(len(dropped), len(static)),
                "exec_recall": _share(sum(r.exec.drifted for r in ex), len(ex)),  # type: ignore[union-attr]
                "exec_match": _share(sum(bool(r.exec_matches) for r in judged), len(judged)),
                "false_static": _share(int(sum(fs)), len(fs)),
                "false_exec": _share(int(sum(fe)), len(fe)),
            }
        )
    return rows
