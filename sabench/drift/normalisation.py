"""D2-D4, a normalisation step dropped: the calls that normalise the claim's data
(``standardise(X)``, ``F.normalize(h)``, ``self.norm(h)``) replaced by their inputs."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import Any

from sabench.drift.mutants import (
    Mutant,
    PyFile,
    Submission,
    apply_edits,
    cited_lines,
    parses,
)

#: a claim about normalising (not about computing a norm, as ``max norm`` clipping or "the L2
#: norm of the gradients" is)
CLAIM_RE = re.compile(
    r"normali[sz]|standardi[sz]|z-score|\b(?:layer|rms|batch|group|instance|qk)[ -]?norm"
    r"|\bunit[ -](?:l2[ -])?norm",
    re.I,
)
#: a claim that defines the normalisation itself (``Norm(x) = x / ||x||_2``, "RMSNorm: x /
#: RMS(x) * gamma"): dropping one of its uses elsewhere leaves what it states intact
_DEFINES_RE = re.compile(
    r"(?:^|:)\s*\w*norm\w*\s*\(\s*\w+\s*\)\s*=(?!=)|^\s*\w*norm\w*\s*(?:\([^()]*\))?\s*:", re.I
)
#: callee names that normalise their input, squashed (lowercase, no underscores)
_CALLEE_RE = re.compile(
    r"normali[sz]|standardi[sz]|zscore|(?:layer|rms|batch|group|instance|qk|l2)norm"
)
#: the kinds of norm a claim or a callee names: a claim about one kind is not drifted by
#: dropping another (a layer norm for a claim about RMSNorm)
_KINDS = {
    kind: re.compile(kind + r"[ _-]?norm", re.I)
    for kind in ("layer", "rms", "batch", "group", "instance")
}
#: abbreviations only code uses for a kind (``self.ln_f``, ``self.bn1``); in prose "ln" is a log
_CODE_KINDS = {
    "layer": re.compile(r"\bln(?:_|\d|\b)", re.I),
    "batch": re.compile(r"\bbn(?:_|\d|\b)", re.I),
}
#: a module attribute of the model that is a norm layer: ``self.norm1``, ``self.ln_f``
_LAYER_RE = re.compile(r"^(?:\w*norm\w*|ln(?:_?\w+|\d*))$", re.I)
#: arguments that need no parentheses where the call stood
_ATOMS = (ast.Name, ast.Attribute, ast.Subscript, ast.Call, ast.Constant)


def imported_names(tree: ast.Module) -> set[str]:
    """Names bound by imports: a call ``F.normalize(x)`` on one is a function, not a method."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
    return out


def _root(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def normalising_call(call: ast.Call, imported: set[str]) -> bool:
    """Whether a call normalises its first argument: a function named so (``standardise``,
    ``F.normalize``), or a norm layer of the model (``self.norm(h)``). A method of a value
    (``x.norm()``), a norm computed (``torch.norm(x)``) or a layer built (``nn.LayerNorm(d)``) is
    not."""
    if not call.args or isinstance(call.args[0], ast.Starred):
        return False
    func = call.func
    if isinstance(func, ast.Name):
        return func.id[:1].islower() and bool(_CALLEE_RE.search(func.id.lower().replace("_", "")))
    if not isinstance(func, ast.Attribute) or func.attr[:1].isupper():
        return False
    root = _root(func.value)
    if root == "self":
        return bool(_LAYER_RE.match(func.attr))
    return root in imported and bool(_CALLEE_RE.search(func.attr.lower().replace("_", "")))


def call_inputs(pf: PyFile, call: ast.Call) -> str:
    """The call's inputs in its place: all positional arguments where the result is unpacked
    into as many names (``a, b = standardise(a, b)``), else the first."""
    parent = pf.parents.get(id(call))
    if (
        isinstance(parent, ast.Assign)
        and len(parent.targets) == 1
        and isinstance(parent.targets[0], ast.Tuple)
        and len(parent.targets[0].elts) == len(call.args) > 1
    ):
        return ", ".join(pf.segment(a) for a in call.args)
    arg = call.args[0]
    text = pf.segment(arg)
    return text if isinstance(arg, _ATOMS) else f"({text})"


def _kinds(text: str, code: bool = False) -> set[str]:
    patterns = [*_KINDS.items(), *(_CODE_KINDS.items() if code else ())]
    return {kind for kind, pattern in patterns if pattern.search(text)}


def about_normalising(claim: Any) -> bool:
    """Whether a claim says that something is normalised: the method's data or tensors, in its
    formulas, protocol or pipeline. Not a value claim (its drift is a value), nor one that defines
    the norm (its drift is in the norm's own code, not in one of its uses)."""
    return (
        claim.dimension != "D1"
        and bool(CLAIM_RE.search(claim.text))
        and not _DEFINES_RE.search(claim.text)
    )


def _calls(
    pf: PyFile, imported: set[str], lines: set[int] | None, kinds: set[str]
) -> list[ast.Call]:
    """The normalising calls (within ``lines`` when given), less those of a kind of norm the
    claim does not name when it names one."""
    out = []
    for n in ast.walk(pf.tree):
        if not (isinstance(n, ast.Call) and normalising_call(n, imported)):
            continue
        if lines is not None and n.lineno not in lines:
            continue
        own = _kinds(ast.unparse(n.func), code=True)
        if kinds and own and not own & kinds:
            continue
        out.append(n)
    return out


def normalisation_mutant(
    sub: Submission, sau: dict[str, Any], claim: Any, cited: Sequence[tuple[str, int, int]] = ()
) -> Mutant | None:
    """The first file's normalising calls of one callee removed, for a claim about normalising
    (:func:`about_normalising`): within the lines another judge cited (and their functions) when it
    cited any, else anywhere in the code; of the kind of norm the claim names, when it names one."""
    if not about_normalising(claim):
        return None
    kinds = _kinds(claim.text)
    for path in sub.code_files:
        pf = sub.py[path]
        lines = cited_lines(cited, path, pf) if cited else None
        if lines is not None and not lines:
            continue
        calls = _calls(pf, imported_names(pf.tree), lines, kinds)
        if not calls:
            continue
        first = ast.unparse(calls[0].func)
        same = [c for c in calls if ast.unparse(c.func) == first]
        text = apply_edits(pf.text, [(*pf.span(c), call_inputs(pf, c)) for c in same])
        if text is None or not parses(path, text, pf.text):
            continue
        where = ", ".join(str(c.lineno) for c in same)
        return Mutant(
            str(sau["sau_id"]),
            str(sau["dimension"]),
            "normalisation",
            path,
            same[0].lineno,
            f"`{first}(...)` dropped, its input passed on ({path}:{where})",
            {path: text},
        )
    return None
