"""D4, two steps swapped: the statements of two consecutive steps of the claim, in the block that
runs them.

Which statement runs a step: a step with backticked names, a statement calling a function of that
name; a step in prose, a statement whose code names (calls, variables, attributes: not its strings
or keyword names) hold most of the step's weighted terms, one of them in a call that does work
(not ``print``, ``get``, ``append``...), or, second choice, a statement calling a repository
function whose name or docstring holds one of the step's terms and whose name, docstring and body
hold most. An acronym the claim defines (``Power Spectral Density (PSD)``) stands for its words.
With lines another judge cited for the claim, only the statements within them or the functions
that hold them are candidates, so a swap moves code credited for the claim, never statements
that merely share its words elsewhere."""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sabench.drift.mutants import (
    Mutant,
    PyFile,
    Submission,
    apply_edits,
    body_lists,
    cited_lines,
    is_docstring,
    node_name,
    parses,
)
from sabench.values import words

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
#: statements that run nothing a step is made of, or end the block (moving them moves control flow)
_NOT_RUN = (
    *_DEFS,
    ast.Import,
    ast.ImportFrom,
    ast.Return,
    ast.Raise,
    ast.Pass,
    ast.Break,
    ast.Continue,
    ast.Global,
    ast.Nonlocal,
)
#: a step matches a statement when the statement (or the function it calls) holds this share of
#: the step's weighted terms
STEP_SHARE = 0.5
#: a statement this long (a loop, a branch) runs more than one step
MAX_STEP_LINES = 30
#: calls that read, print, log, collect or convert: no step is run by them
_BOOKKEEPING = words(
    "get getattr setattr hasattr print info debug warning warn error exception log format "
    "append extend items keys values len range enumerate zip list dict set tuple str int float "
    "bool isinstance join exists makedirs mkdir open to cpu cuda detach item numpy tolist empty "
    "zeros ones full array tensor asarray copy deepcopy set_postfix tqdm add_argument parse_args"
)
#: mode switches when called without arguments (``model.train()``, ``model.eval()``)
_MODES = words("train eval")
#: enumerated steps the claim parser leaves whole: ``(1) ...; (2) ...``, ``(a) ...``,
#: ``Stage 1 — ...``, ``Step 2: ...``
_ENUM_RE = re.compile(
    r"(?:^|(?<=[\s;:.,]))(?:\((?:\d{1,2}|[a-h])\)|(?:stage|step|phase)\s+\d{1,2}(?:\.\d)?\s*"
    r"(?:[—–:-]|\))?)\s*",
    re.I,
)
#: where a step's head ends and its explanation starts
_HEAD_END_RE = re.compile(r"\s+[—–]\s+|;\s|:\s|,\s(?:which|so|because|then)\b")
#: an acronym defined in the claim: ``Power Spectral Density (PSD)``
_ACRONYM_RE = re.compile(r"((?:[A-Za-z][\w-]*\s+){1,5}?)\(([A-Z][A-Za-z0-9]{1,7})\)")


@dataclass
class SwapStep:
    """One step of the claim: its text, backticked names, weighted terms, and the acronyms
    (lowercase) that stand for some of its terms."""

    text: str
    keys: list[str]
    terms: dict[str, float]
    acronyms: dict[str, set[str]] = field(default_factory=dict)


def _walk_code(node: ast.AST) -> Iterable[ast.AST]:
    """The nodes a statement runs: nested definitions are not entered (defining is not running)."""
    if isinstance(node, _DEFS):
        return
    stack = [node]
    while stack:
        cur = stack.pop()
        yield cur
        stack.extend(c for c in ast.iter_child_nodes(cur) if not isinstance(c, _DEFS))


def _call_names(node: ast.AST) -> list[str]:
    out = []
    for n in _walk_code(node):
        if isinstance(n, ast.Call):
            name = node_name(n.func)
            if name:
                out.append(name)
    return out


def _work_calls(node: ast.AST) -> list[str]:
    """The calls of a statement that do work: not reading, printing, logging, collecting,
    converting, or switching a model's mode."""
    out = []
    for n in _walk_code(node):
        if not isinstance(n, ast.Call):
            continue
        name = node_name(n.func)
        if not name or name.lower() in _BOOKKEEPING:
            continue
        if name in _MODES and not n.args and not n.keywords:
            continue
        out.append(name)
    return out


def _code_names(node: ast.AST) -> list[str]:
    """Names a statement runs with: variables, attributes and calls (strings and keyword names
    are not code: ``split="test"`` does not split)."""
    out = []
    for n in _walk_code(node):
        if isinstance(n, ast.Name):
            out.append(n.id)
        elif isinstance(n, ast.Attribute):
            out.append(n.attr)
    return out


def _acronyms(text: str) -> dict[str, set[str]]:
    """The acronyms a claim defines and the terms they stand for: ``Frequency Keep Score (FKS)``
    -> fks: {frequency, keep, scor}."""
    from sabench.index import text_terms

    out: dict[str, set[str]] = {}
    for m in _ACRONYM_RE.finditer(text):
        short = m.group(2)
        long_words = m.group(1).split()[-len(short) :]  # as many words as the acronym's letters
        if "".join(w[0] for w in long_words).lower() == short.lower():
            out[short.lower()] = set(text_terms(" ".join(long_words)))
    return out


def claim_steps(claim: Any) -> list[SwapStep]:
    """The claim's steps as the claim parser reads them, else its enumerated items (``(1) ...
    (2) ...``, ``Stage 1 — ...``), each cut to its head (the words before a dash, colon or
    semicolon explain it); with the acronyms the claim defines for their words."""
    from sabench.index import text_terms

    acronyms = _acronyms(claim.text)
    steps = [SwapStep(s.text, list(s.keys), dict(s.terms)) for s in claim.steps]
    if not steps:
        parts = _ENUM_RE.split(claim.text)
        for part in parts[1:] if len(parts) >= 3 else []:
            part = re.sub(r"\([^()`]*\)", " ", part).strip()  # asides go, as the claim parser's
            head = _HEAD_END_RE.split(part, maxsplit=1)[0].strip(" .,;:")
            terms = {t: claim.terms.get(t, 1.0) for t in text_terms(head.replace("`", " "))}
            if terms:
                steps.append(SwapStep(head, re.findall(r"`([A-Za-z_][\w.]*)`", head), terms))
    for step in steps:
        step.acronyms = {a: ts for a, ts in acronyms.items() if ts and ts <= set(step.terms)}
    return steps if len(steps) >= 2 else []


def _term_in(term: str, terms: set[str]) -> bool:
    """A step's term among code terms, or a code term its stem (``predict`` of ``predictiv``,
    ``valid`` of ``validat``: 5 letters or more) or that stems from it."""
    if term in terms:
        return True
    return any(
        min(len(t), len(term)) >= 5 and (t.startswith(term) or term.startswith(t)) for t in terms
    )


def _share(step: SwapStep, terms: set[str]) -> tuple[float, int]:
    """The share of the step's weight, and the number of its terms, among code terms."""
    covered = {t for a, ts in step.acronyms.items() if a in terms for t in ts}
    hit = [t for t in step.terms if t in covered or _term_in(t, terms)]
    total = sum(step.terms.values())
    return (sum(step.terms[t] for t in hit) / total if total else 0.0), len(hit)


class _Matcher:
    """Whether a statement runs a step (the module's docstring says how)."""

    def __init__(self, sub: Submission) -> None:
        self.sub = sub
        self.functions: dict[str, list[Any]] = {}
        for fn in sub.index.functions:
            self.functions.setdefault(fn.name, []).append(fn)
        self._terms: dict[str, tuple[set[str], set[str]]] = {}

    def fn_terms(self, name: str) -> tuple[set[str], set[str]]:
        """(name and docstring terms, body terms) of the repository functions of a name."""
        from sabench.index import text_terms

        if name not in self._terms:
            head: set[str] = set()
            body: set[str] = set()
            for fn in self.functions.get(name, []):
                head |= set(text_terms(f"{fn.name} {fn.docstring}"))
                text = self.sub.texts.get(fn.file, "")
                lines = text.splitlines()[fn.start - 1 : fn.end]
                body |= set(text_terms("\n".join(lines)))
            self._terms[name] = (head, body)
        return self._terms[name]

    def direct(self, stmt: ast.stmt, step: SwapStep) -> bool:
        from sabench.index import chunk_info, squash, text_terms
        from sabench.judges.static import entity_keys

        if step.keys:
            keys = [k for key in step.keys for k in entity_keys(key)]
            for name in _call_names(stmt):
                ckeys = set(chunk_info(name)[1]) | {squash(name)}
                if any(k in ckeys for k in keys):
                    return True
            return False
        if (stmt.end_lineno or stmt.lineno) - stmt.lineno >= MAX_STEP_LINES:
            return False
        called = {t for name in _work_calls(stmt) for t in text_terms(name)}
        if len(step.terms) == 1:  # one word: it names a call the statement makes
            return _share(step, called)[1] == 1
        share, hits = _share(step, set(text_terms(" ".join(_code_names(stmt)))))
        return share >= STEP_SHARE and hits >= 2 and _share(step, called)[1] >= 1

    def through_call(self, stmt: ast.stmt, step: SwapStep) -> bool:
        if step.keys or (stmt.end_lineno or stmt.lineno) - stmt.lineno >= MAX_STEP_LINES:
            return False
        for name in dict.fromkeys(_work_calls(stmt)):
            if name not in self.functions:
                continue
            head, body = self.fn_terms(name)
            share, hits = _share(step, head | body)
            if share >= STEP_SHARE and _share(step, head)[1] >= 1 and hits >= 2:
                return True
        return False


def _positions(
    m: _Matcher, stmts: list[ast.stmt], steps: list[SwapStep]
) -> tuple[list[int | None], int]:
    """Per step, the first statement that runs it (a direct match first, else through a call),
    and how many steps matched directly."""
    pos: list[int | None] = []
    direct = 0
    for step in steps:
        p = next((i for i, s in enumerate(stmts) if m.direct(s, step)), None)
        if p is not None:
            direct += 1
        else:
            p = next((i for i, s in enumerate(stmts) if m.through_call(s, step)), None)
        pos.append(p)
    return pos, direct


def swap_mutant(
    sub: Submission, sau: dict[str, Any], claim: Any, cited: Sequence[tuple[str, int, int]] = ()
) -> Mutant | None:
    """D4: in the block that runs the most of the claim's steps, the statements of two steps
    swapped that follow each other among the steps it runs (the first such pair, in claim order;
    a step the block does not run is skipped, as the claim orders the ones around it too). With
    lines another judge cited for the claim, only statements within them or the functions that
    hold them."""
    steps = claim_steps(claim)
    if len(steps) < 2:
        return None
    m = _Matcher(sub)
    blocks: list[tuple[tuple[int, int], int, PyFile, list[ast.stmt], list[int | None]]] = []
    for path in sub.code_files:
        pf = sub.py[path]
        lines = cited_lines(cited, path, pf) if cited else None
        if lines is not None and not lines:
            continue
        for node in ast.walk(pf.tree):
            for body in body_lists(node):
                stmts = [s for s in body if not is_docstring(s) and not isinstance(s, _NOT_RUN)]
                if lines is not None:
                    stmts = [s for s in stmts if s.lineno in lines]
                if len(stmts) < 2:
                    continue
                pos, direct = _positions(m, stmts, steps)
                key = (len({p for p in pos if p is not None}), direct)
                if key[0] >= 2:
                    blocks.append((key, -len(blocks), pf, stmts, pos))
    # the block that runs the most steps first; the next one where its pair cannot be swapped
    for _, _, pf, stmts, pos in sorted(blocks, key=lambda b: (b[0], b[1]), reverse=True):
        mutant = _swap(sau, steps, pf, stmts, pos)
        if mutant is not None:
            return mutant
    return None


def _swap(
    sau: dict[str, Any],
    steps: list[SwapStep],
    pf: PyFile,
    stmts: list[ast.stmt],
    pos: list[int | None],
) -> Mutant | None:
    """The first pair of steps, in claim order, that follow each other among those the block
    runs, with their statements in that order: swapped."""
    found = [i for i, p in enumerate(pos) if p is not None]
    for i, j in itertools.pairwise(found):
        a, b = pos[i], pos[j]
        if a is None or b is None or a >= b:
            continue
        sa, sb = stmts[a], stmts[b]
        new = swap_statements(pf, sa, sb)
        if new is None:
            continue
        return Mutant(
            str(sau["sau_id"]),
            str(sau["dimension"]),
            "swap",
            pf.path,
            sa.lineno,
            f"swapped '{steps[i].text[:40]}' ({pf.path}:{sa.lineno}) and "
            f"'{steps[j].text[:40]}' ({pf.path}:{sb.lineno})",
            {pf.path: new},
        )
    return None


def swap_statements(pf: PyFile, sa: ast.stmt, sb: ast.stmt) -> str | None:
    """The file with the whole lines of two statements (``sa`` before ``sb``) exchanged; None
    where they share a line or the file no longer parses."""
    if sa.lineno == sb.lineno or (sa.end_lineno or sa.lineno) >= sb.lineno:
        return None
    ra = pf.line_span(sa.lineno, sa.end_lineno or sa.lineno)
    rb = pf.line_span(sb.lineno, sb.end_lineno or sb.lineno)
    ta, tb = pf.text[ra[0] : ra[1]], pf.text[rb[0] : rb[1]]
    if not ta.endswith("\n") or not tb.endswith("\n"):
        return None
    new = apply_edits(pf.text, [(ra[0], ra[1], tb), (rb[0], rb[1], ta)])
    if new is None or not parses(pf.path, new, pf.text):
        return None
    return new
