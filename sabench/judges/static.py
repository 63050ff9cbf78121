"""The offline ``static`` judge: does the submission's code say what the paper's claim says?

No model, no network: the submission is indexed once (:mod:`sabench.index`), then every SAU is judged
by general rules per dimension:

* D1 numbers: each number of the claim with its name ("learning rate of 0.05") is looked up among the
  code's named values (``lr = 0.05``, ``Adam(lr=...)``, ``--lr`` defaults, YAML keys); same value ->
  support, the same name with another value -> ``drifted``.
* D2 formulas: a backticked formula is compared with code statements as multisets of operands and
  operators after normalisation (``np.sum(x)`` = ``x.sum()``, ``**`` = ``^``): same operands and
  operators -> aligned; same operands, different operators -> ``drifted``.
* D3 protocol: named datasets, baselines and metrics must appear in code or config.
* D4 order: the claim's steps (``a → b → c``) are mapped to calls in the function that runs them
  (following calls into the repo); out of order -> ``drifted``.
* Everywhere: evidence only in docs/tests -> ``missing``; evidence in (or a claim naming) a stub
  function -> ``placeholder``; otherwise a weighted term coverage gives aligned / partial / missing on
  SA-Bench's scale (0, .25, .5, .75, 1).
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import json
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sabench.contracts import Evidence, Judgment
from sabench.index import (
    CODE,
    CONFIG,
    DOCS,
    TESTS,
    CodeIndex,
    Fact,
    Function,
    build_index,
    chunk_info,
    identifier_terms,
    squash,
    text_terms,
)
from sabench.values import NumberMention, extract_numbers, values_match, words

JUDGE_VERSION = "1"

#: Rule parameters (part of the fingerprint). General, not per paper.
RULES: dict[str, float] = {
    "comment_credit": 0.75,  # a term found only in comments/docstrings of a real function
    "loose_comment_credit": 0.4,  # ... only in module-level comments or in stubs
    "prefix_credit": 0.7,  # a term found only as an abbreviation (``min`` for ``minimum``)
    "window_lines": 14,  # size of an evidence window
    "window_cap": 150,  # terms on more lines than this do not locate a claim
    "window_share": 0.5,  # weight of the best window against repo-wide coverage
    "name_weight": 3.0,  # backticked names
    "entity_weight": 2.0,  # capitalised / hyphenated names
    "generic_weight": 0.3,  # words of every claim and every repo ("model", "train")
    "formula_names_min": 0.75,  # share of a formula's operands a statement needs to be compared
    "formula_ops_min": 0.5,  # ... and share of its operators, to count as the same computation
    "docs_only_cov": 0.5,  # docs/tests coverage from which code-less evidence means "only in docs"
    "docs_only_below": 0.2,  # ... when code coverage is below this
    "anchored_cov": 0.5,  # coverage from which a claim with verified anchors is aligned
    "number_share": 0.4,  # D1 support: share of the values found with their names (rest: coverage)
    "entity_share": 0.15,  # D3 support: share of the named datasets/baselines/metrics found
    "step_share": 0.5,  # D4 support: share of the steps found, when the steps are named
    "anchor_credit": 1.0,  # a backticked name anchors a claim only where code (not a comment) has it
}

#: Support -> SA-Bench level: below BANDS[d][0] -> missing (0), then .25, .5, .75, and at or above
#: BANDS[d][3] -> aligned (equal bounds skip a level). Calibrated once for quadratic-weighted kappa
#: against SA-Bench's verdicts (same bands for every paper and agent; fitted on half of the papers,
#: the other half scores within 0.02 kappa of the full fit). The aligned bound is kept at 0.83 for
#: every dimension, where fully covered claims of the demo papers land. Protocol (D3) and order
#: (D4) claims need near-complete coverage before a static judge may call them half implemented.
BANDS: dict[str, tuple[float, float, float, float]] = {
    "D1": (0.36, 0.48, 0.64, 0.83),
    "D2": (0.32, 0.68, 0.80, 0.83),
    "D3": (0.56, 0.83, 0.83, 0.83),
    "D4": (0.44, 0.76, 0.82, 0.83),
}

#: Words that are in nearly every claim and every repository.
GENERIC = frozenset(
    t
    for w in words(
        "model models train training trained data dataset datasets experiment experiments "
        "result results method methods value values compute computed computes run runs "
        "running implement implementation implemented input output function paper section "
        "table figure approach evaluate evaluation performance set setting settings parameter "
        "parameters use step steps each report reported show shown different new same total "
        "number various given specific"
    )
    for t in identifier_terms(w)
)
#: Single-word names too vague to call a value drifted on their own.
_VAGUE_NAMES = frozenset(
    identifier_terms(w)[0]
    for w in words(
        "size rate step value dim count factor scale weight param length ratio max min time "
        "stride kernel padding shape image input output start end index idx id level"
    )
    if identifier_terms(w)
)
#: Words that name the same thing in a config (name matching of values only).
_RELATED = [
    {t for w in group.split() for t in identifier_terms(w)}
    for group in (
        "feature dimension",
        "sample point example instance",
        "cluster center centroid component",
        "deviation sigma",
        "iteration step update",
        "layer block",
        "head attention",
        "seed random",
    )
]
_RELATED_OF: dict[str, set[str]] = defaultdict(set)
for _group in _RELATED:
    for _t in _group:
        _RELATED_OF[_t] |= _group - {_t}

_ENTITY_STOP = words(
    "The A An In On For With We Our This That These Those It Its To Of And Or By As At From "
    "Each Every All Both Then Finally First Second Third Table Figure Fig Section Sec Eq "
    "Equation Appendix Algorithm Stage Step Phase Reference Note Where When Compare Compared "
    "Evaluate Train Training Use Using Run Compute Generate Report Given If Not No Only Also "
    "Experiment Experimental Results Method Methods Model Baseline Baselines Dataset Datasets "
    "Metric Metrics Ablation Study Main Setup Protocol Workflow Pipeline For Apply Extract "
    "Split Test Sample Initialize Set Measure Perform Fine-tune Finetune Pretrain"
)
_MODULES = words(
    "np numpy torch math jnp jax scipy linalg F nn functional tf special stats random sp "
    "tensorflow keras K backend"
)
_FUNC_ALIASES = {
    "average": "mean",
    "amax": "max",
    "amin": "min",
    "absolute": "abs",
    "fabs": "abs",
    "nansum": "sum",
    "nanmean": "mean",
    "matmul": "@",
    "dot": "@",
    "mm": "@",
    "clamp": "clip",
    "sub": "-",
    "subtract": "-",
    "add": "+",
    "mul": "*",
    "multiply": "*",
    "div": "/",
    "divide": "/",
    "true_divide": "/",
    "power": "^",
    "pow": "^",
}
_ARROW_RE = re.compile(r"\s*(?:→|->|⟶|⇒|=>|⟹)\s*")
_THEN_RE = re.compile(
    r"(?:,\s*|;\s*|\s+)(?:and\s+)?then\s+|(?:,\s*|\s+)(?:and\s+)?finally\s+", re.I
)
_ENUM_RE = re.compile(r"(?:^|\s)(?:\(?\d{1,2}\)|\d{1,2}\.(?=\s)|step\s+\d+:?)\s*", re.I)
_BACKTICK_RE = re.compile(r"`([^`\n]+)`")


def static_fingerprint() -> str:
    """Hash of the judge's code (this module, the index, value parsing) and its rule parameters:
    changing any of them reruns exactly this judge."""
    here = Path(__file__).resolve()
    h = hashlib.sha256()
    h.update(JUDGE_VERSION.encode())
    h.update(json.dumps([RULES, BANDS], sort_keys=True).encode())
    for path in (here, here.parents[1] / "index.py", here.parents[1] / "values.py"):
        try:
            h.update(path.read_bytes())
        except OSError:
            h.update(path.name.encode())
    return f"static-{JUDGE_VERSION}-{h.hexdigest()[:12]}"


FINGERPRINT = static_fingerprint()


# --------------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------------


@dataclass
class Step:
    """One step of an ordered claim: its text, backticked keys and weighted terms."""

    text: str
    keys: list[str]
    terms: dict[str, float]


@dataclass
class Claim:
    """What a claim asks for, parsed once."""

    sau_id: str
    dimension: str
    text: str
    names: list[str] = field(default_factory=list)
    formulas: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    numbers: list[NumberMention] = field(default_factory=list)
    terms: dict[str, float] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    expected: list[dict[str, Any]] = field(default_factory=list)


def _is_name(span: str) -> bool:
    span = span.strip()
    return bool(re.fullmatch(r"[A-Za-z_][\w.\-+]*", span)) and not span.endswith(".")


def entity_keys(name: str) -> list[str]:
    """Squashed spellings of a name: ``k-means++`` -> kmeansplusplus, kmeanspp, kmeans."""
    keys = []
    if "++" in name:
        base = squash(name.replace("++", ""))
        keys += [base + "plusplus", base + "pp"]
    k = squash(name)
    if k:
        keys.append(k)
    return list(dict.fromkeys(keys))


def _claim_entities(text: str) -> list[str]:
    """Capitalised, camel-case, acronym or hyphenated-with-digits names (datasets, baselines...)."""
    out: list[str] = []
    for m in re.finditer(r"(?<![\w`])([A-Za-z][\w]*(?:[-+][\w+]+)*\+*)", text):
        tok = m.group(1).rstrip("-")
        if len(tok) < 2 or tok in _ENTITY_STOP or "_" in tok or re.search(r"\+\w", tok):
            continue  # "h_A", "r_1", "i+1" are mathematical symbols, not names
        core = tok.replace("-", "").replace("+", "")
        has_upper_inside = any(c.isupper() for c in core[1:])
        has_digit = any(c.isdigit() for c in core) and any(c.isalpha() for c in core)
        hyphen_cap = "-" in tok and tok[0].isupper()
        if not (has_upper_inside or has_digit or hyphen_cap or "++" in tok):
            continue
        if re.fullmatch(r"[A-Z]\d*", core) or re.fullmatch(r"[DdEe]\d", core):
            continue
        if re.fullmatch(r"\d+[A-Za-z]?", core):
            continue
        out.append(tok)
    return list(dict.fromkeys(out))


def _split_steps(text: str) -> list[str]:
    """``a → b → c``, ``a, then b, then c`` or ``(1) a (2) b`` -> the steps' texts."""
    # asides in parentheses go, unless they name the step: "seed the centroids (`init`)"
    plain = re.sub(r"\([^()`]*\)", " ", text)
    plain = re.sub(r"\([^()`]*\)", " ", plain)
    if _ARROW_RE.search(plain):
        parts = _ARROW_RE.split(plain)
        first, last = parts[0], parts[-1]
        bt = list(_BACKTICK_RE.finditer(first))
        # the chain starts at the last named item, or after the last clause boundary
        first = first[bt[-1].start() :] if bt else re.split(r"[:;]|\.\s", first)[-1]
        m = re.match(r"\s*`[^`]+`", last)
        last = m.group(0) if m else re.split(r"[,;:]|\.(?:\s|$)", last)[0]
        parts = [first, *parts[1:-1], last]
    elif len(_ENUM_RE.findall(plain)) >= 2:
        parts = _ENUM_RE.split(plain)[1:]
    elif _THEN_RE.search(plain):
        parts = _THEN_RE.split(plain)
    else:
        return []
    steps = [p.strip(" .,;:") for p in parts if p and p.strip(" .,;:")]
    return steps if len(steps) >= 2 else []


def _number_text(text: str) -> str:
    """The claim with formulas blanked and names made single words (numbers in them are not values)."""

    def repl(m: re.Match[str]) -> str:
        span = m.group(1)
        if _is_name(span):
            return re.sub(r"[-.+]", "_", span)
        if re.fullmatch(r"\s*[\w.]+\s*=\s*[-+0-9.eE]+\s*", span):
            return span
        return " " * len(span)

    return _BACKTICK_RE.sub(repl, text)


def analyze_claim(sau: dict[str, Any], claim_df: Counter[str], n_claims: int) -> Claim:
    """Parse a SAU's claim into names, formulas, entities, numbers, weighted terms and steps."""
    raw = sau.get("claim")
    text = raw if isinstance(raw, str) else ""
    dim = str(sau.get("dimension") or "")
    c = Claim(str(sau.get("sau_id") or sau.get("id") or ""), dim, text)
    for span in _BACKTICK_RE.findall(text):
        span = span.strip()
        if not span:
            continue
        if _is_name(span):
            c.names.append(span)
        elif re.fullmatch(r"[\w.]+\s*=\s*[-+0-9.eE]+", span):
            c.names.append(span.split("=")[0].strip())
        else:
            c.formulas.append(span)
    c.names = list(dict.fromkeys(c.names))
    plain = _BACKTICK_RE.sub(" ", text)
    c.entities = [e for e in _claim_entities(plain) if e not in c.names]
    c.expected = _expected(sau.get("expected"))
    ntext = _number_text(text)
    c.numbers = [n for n in extract_numbers(ntext) if _is_value(ntext, n)]
    weights: dict[str, float] = {}

    def add(terms: list[str] | tuple[str, ...], w: float) -> None:
        for t in terms:
            if len(t) < 2 or t.isdigit():
                continue
            base = RULES["generic_weight"] if t in GENERIC else 1.0
            weights[t] = max(weights.get(t, 0.0), w * base)

    add(text_terms(plain), 1.0)
    for f in c.formulas:
        add(text_terms(f), 1.0)
    for e in c.entities:
        add(text_terms(e), RULES["entity_weight"])
    for n in c.names:
        add(text_terms(n), RULES["name_weight"])
    for t in list(weights):
        df = claim_df.get(t, 0)
        if n_claims > 2:
            idf = math.log((n_claims + 1) / (df + 0.5)) / math.log((n_claims + 1) / 0.5)
            weights[t] *= 0.35 + 0.65 * max(0.0, min(1.0, idf))
    c.terms = weights
    if dim == "D4" or _ARROW_RE.search(text):
        for st in _split_steps(text):
            keys = [k.strip() for k in _BACKTICK_RE.findall(st) if _is_name(k.strip())]
            sw = {t: weights.get(t, 1.0) for t in text_terms(_BACKTICK_RE.sub(r"\1", st))}
            c.steps.append(Step(st, keys, sw))
    return c


def _is_value(text: str, n: NumberMention) -> bool:
    """False for numbers that are operands of an expression ("1 - beta") or years ("COCO 2017")."""
    after = text[n.end : n.end + 4]
    before = text[max(0, n.start - 4) : n.start]
    if re.match(r"\s*[-−+*/^×·]\s*[^\W\d(]|[}{_^]", after) or re.search(
        r"[^\W\d)]\s*[-−+*/^×·]\s*$|[{_^]$", before
    ):
        return False
    if n.value == int(n.value) and 1950 <= n.value <= 2035 and not n.percent:
        prev = n.context_words[-1:] if n.context_words else ()
        if prev and prev[0][:1].isupper():
            return False
    return True


def _expected(raw: Any) -> list[dict[str, Any]]:
    if raw is None or raw == "" or (isinstance(raw, float) and math.isnan(raw)):
        return []
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return []
    if isinstance(raw, dict):
        raw = [raw]
    if not isinstance(raw, list | tuple):
        try:
            raw = list(raw)
        except TypeError:
            return []
    return [r for r in raw if isinstance(r, dict) and "metric" in r and "value" in r]


def claim_frequencies(saus: list[dict[str, Any]]) -> Counter[str]:
    """In how many of the paper's claims each term occurs (a term in every claim says little)."""
    df: Counter[str] = Counter()
    for sau in saus:
        claim = sau.get("claim")
        df.update(set(text_terms(claim if isinstance(claim, str) else "")))
    return df


# --------------------------------------------------------------------------------------------
# Evidence search over the index
# --------------------------------------------------------------------------------------------


@dataclass
class Presence:
    """Where a term or name occurs: best credit in code/config (0..1), and whether docs/tests have it."""

    credit: float
    docs: bool
    sites: list[tuple[int, int]]
    hits: list[tuple[int, int, float]] = field(default_factory=list)  # code sites with credit


@dataclass
class Window:
    fid: int
    start: int
    end: int
    score: float
    stub: bool


class SubmissionContext:
    """One submission's index plus caches shared by all its claims."""

    def __init__(self, index: CodeIndex, saus: list[dict[str, Any]]) -> None:
        self.index = index
        self.claim_df = claim_frequencies(saus)
        self.n_claims = len(saus)
        self.term_cache: dict[str, Presence] = {}
        self.key_cache: dict[str, Presence] = {}
        self.sorted_terms = sorted(index.term_chunks)
        self.code_fids = {i for i, f in enumerate(index.files) if f.kind in (CODE, CONFIG)}
        self.has_code = any(index.files[i].lines for i in self.code_fids)
        # innermost function of every code line: for stub checks and comment credit
        self.func_at: dict[int, list[int]] = {}
        fid_of = {f.path: i for i, f in enumerate(index.files)}
        self.fid_of = fid_of
        for fi, fn in sorted(
            enumerate(index.functions), key=lambda x: (x[1].start, -(x[1].end - x[1].start))
        ):
            fid = fid_of.get(fn.file)
            if fid is None:
                continue
            arr = self.func_at.setdefault(fid, [-1] * (len(index.files[fid].lines) + 2))
            for ln in range(fn.start, min(fn.end, len(arr) - 1) + 1):
                arr[ln] = fi
        self.by_name: dict[str, list[Function]] = defaultdict(list)
        for fn in index.functions:
            self.by_name[fn.name].append(fn)
        self.facts_by_value: dict[float, list[Fact]] = defaultdict(list)
        for fact in index.facts:
            for v in fact.numbers:
                self.facts_by_value[rounded_value(v)].append(fact)
        self._credits: dict[int, list[float]] = {}
        self.callers: dict[str, list[int]] = defaultdict(list)
        for fi, fn in enumerate(index.functions):
            for callee, _ in fn.calls:
                self.callers[callee].append(fi)
        self.main_scopes = self._main_scopes()
        self.reachable = self._reachable()
        self._fn_keys: list[tuple[Function, set[str]]] | None = None
        #: named settings that may contradict a claim's value (see ``ClaimJudge._conflict``)
        self.settings = [
            f
            for f in index.facts
            if len(f.numbers) == 1
            and fid_of.get(f.file) in self.code_fids
            and any(not t.isdigit() for t in f.terms)
            and not (f.kind == "kwarg" and len([t for t in f.terms if not t.isdigit()]) < 2)
        ]

    def _main_scopes(self) -> list[Function]:
        """``if __name__ == "__main__":`` blocks as pseudo-functions (their calls, in order)."""
        out = []
        for path, (start, end) in self.index.main_blocks.items():
            calls = [
                (c, ln) for c, ln in self.index.module_calls.get(path, []) if start <= ln <= end
            ]
            out.append(
                Function(
                    "__main__", f"{path}:__main__", path, start, end, False, calls, "", start + 1
                )
            )
        return out

    def _entry_files(self) -> list[str]:
        """Scripts that reproduce.sh (or any shell script) runs; else every file with a main block."""
        paths = {f.path for f in self.index.files}
        found: list[str] = []
        for cmds in self.index.commands.values():
            for cmd, _ in cmds:
                for m in re.finditer(r"python[\d.]*\s+(?:-u\s+)?(-m\s+)?([\w./-]+)", cmd):
                    target = m.group(2)
                    rel = target.replace(".", "/") + ".py" if m.group(1) else target.lstrip("./")
                    for cand in (rel, rel + "/__main__.py"):
                        if cand in paths:
                            found.append(cand)
        return found or list(self.index.main_blocks)

    def _reachable(self) -> set[str]:
        """Names of the repo functions that the entry points call, directly or not."""
        todo = [c for path in self._entry_files() for c, _ in self.index.module_calls.get(path, [])]
        seen: set[str] = set()
        while todo:
            name = todo.pop()
            if name in seen or name not in self.by_name:
                continue
            seen.add(name)
            for fn in self.by_name[name]:
                todo.extend(c for c, _ in fn.calls)
        return seen

    # --- presence -----------------------------------------------------------------------
    def function_at(self, fid: int, line: int) -> Function | None:
        arr = self.func_at.get(fid)
        if arr is None or line >= len(arr) or arr[line] < 0:
            return None
        return self.index.functions[arr[line]]

    def credits(self, fid: int) -> list[float]:
        """Credit of every line of a file (1-based): code 1, code in a stub 0.5, a comment or
        docstring in a real function ``comment_credit``, elsewhere ``loose_comment_credit``;
        docs/tests 0."""
        arr = self._credits.get(fid)
        if arr is None:
            n = len(self.index.files[fid].lines)
            arr = [0.0] * (n + 2)
            if fid in self.code_fids:
                comment = self.index.files[fid].comment
                funcs = self.func_at.get(fid)
                fns = self.index.functions
                cc, lc = RULES["comment_credit"], RULES["loose_comment_credit"]
                for ln in range(1, n + 1):
                    fi = funcs[ln] if funcs is not None else -1
                    stub = fi >= 0 and fns[fi].stub
                    if comment[ln - 1]:
                        arr[ln] = cc if fi >= 0 and not stub else lc
                    else:
                        arr[ln] = 0.5 if stub else 1.0
            self._credits[fid] = arr
        return arr

    def site_credit(self, fid: int, line: int) -> float:
        arr = self.credits(fid)
        return arr[line] if 0 < line < len(arr) else 0.0

    def _presence(self, sites: list[tuple[int, int]]) -> Presence:
        best = 0.0
        docs = False
        hits: list[tuple[int, int, float]] = []
        code = self.code_fids
        for fid, ln in sites:
            if fid in code:
                c = self.credits(fid)[ln]
                hits.append((fid, ln, c))
                if c > best:
                    best = c
            else:
                docs = True
        return Presence(best, docs, sites, hits)

    def term(self, t: str) -> Presence:
        p = self.term_cache.get(t)
        if p is None:
            p = self._presence(self.index.term_sites(t))
            if p.credit == 0.0 and len(t) >= 4:
                alt = self._abbreviation_sites(t)
                if alt:
                    q = self._presence(alt)
                    pc = RULES["prefix_credit"]
                    p = Presence(
                        q.credit * pc,
                        p.docs or q.docs,
                        alt,
                        [(f, ln, c * pc) for f, ln, c in q.hits],
                    )
            self.term_cache[t] = p
        return p

    def _abbreviation_sites(self, t: str) -> list[tuple[int, int]]:
        """Sites of code terms that abbreviate ``t`` (``min`` for ``minimum``) or extend it."""
        out: list[tuple[int, int]] = []
        for k in range(len(t) - 1, 2, -1):
            if k < 0.4 * len(t):
                break
            if t[:k] in self.index.term_chunks:
                out.extend(self.index.term_sites(t[:k]))
                break
        i = bisect.bisect_left(self.sorted_terms, t)
        n = 0
        while i < len(self.sorted_terms) and self.sorted_terms[i].startswith(t) and n < 5:
            if self.sorted_terms[i] != t:
                out.extend(self.index.term_sites(self.sorted_terms[i]))
            i += 1
            n += 1
        return out

    def key(self, name: str) -> Presence:
        p = self.key_cache.get(name)
        if p is None:
            sites: list[tuple[int, int]] = []
            for k in entity_keys(name):
                sites.extend(self.index.key_sites(k))
                if sites:
                    break
            p = self._presence(sites)
            self.key_cache[name] = p
        return p

    # --- windows ------------------------------------------------------------------------
    def windows(self, terms: dict[str, float]) -> list[Window]:
        """Best small windows of code by weighted distinct-term coverage, highest first.

        A term counts fully when a window has it on a code line, ``comment_credit`` when only in
        comments; terms on more than ``window_cap`` lines say nothing about where a claim is."""
        per_file: dict[int, list[tuple[int, int, bool]]] = defaultdict(list)
        names = list(terms)
        cap = int(RULES["window_cap"])
        for ti, t in enumerate(names):
            hits = self.term(t).hits
            if len(hits) > cap:
                continue
            for fid, ln, c in hits:
                per_file[fid].append((ln, ti, c >= 1.0))
        w = int(RULES["window_lines"])
        weights = [terms[t] for t in names]
        part = RULES["comment_credit"]
        out: list[tuple[float, int, Window]] = []
        # Files in order of the most a window of theirs could score (their distinct terms); a file
        # that cannot beat the fifth best window so far is skipped. Ties keep the file order.
        bounds = []
        for order, (fid, hits) in enumerate(per_file.items()):
            seen: dict[int, bool] = {}
            for _, ti, is_full in hits:
                seen[ti] = seen.get(ti, False) or is_full
            bound = sum(weights[ti] * (1.0 if f else part) for ti, f in seen.items())
            bounds.append((-bound, order, fid))
        bounds.sort()
        for neg_bound, order, fid in bounds:
            if len(out) >= 5 and -neg_bound < -sorted(x[0] for x in out)[4] - 1e-9:
                break
            hits = per_file[fid]
            hits.sort()
            full = [0] * len(names)
            some = [0] * len(names)
            best, b_lo, b_hi = 0.0, 0, 0
            lo = 0
            score = 0.0
            for ln, ti, is_full in hits:
                wt = weights[ti]
                before = wt if full[ti] else (wt * part if some[ti] else 0.0)
                some[ti] += 1
                if is_full:
                    full[ti] += 1
                after = wt if full[ti] else wt * part
                score += after - before
                while hits[lo][0] < ln - w:
                    _, l_ti, l_full = hits[lo]
                    lw = weights[l_ti]
                    before = lw if full[l_ti] else lw * part
                    some[l_ti] -= 1
                    if l_full:
                        full[l_ti] -= 1
                    after = lw if full[l_ti] else (lw * part if some[l_ti] else 0.0)
                    score += after - before
                    lo += 1
                if score > best:
                    best, b_lo, b_hi = score, hits[lo][0], ln
            if best > 0:
                fn = self.function_at(fid, b_lo)
                stub = fn is not None and fn.stub and b_hi <= fn.end
                out.append((-best, order, Window(fid, b_lo, b_hi, best, stub)))
        out.sort(key=lambda x: (x[0], x[1]))
        return [x[2] for x in out[:5]]

    # --- functions ----------------------------------------------------------------------
    def functions_for(self, name: str) -> list[Function]:
        """Functions a claim's name refers to: ``r2`` -> ``r2_score``, ``k-means++`` -> ``kmeans_pp``."""
        if self._fn_keys is None:
            self._fn_keys = [
                (fn, {*chunk_info(fn.name)[1], squash(fn.name)})
                for fn in self.index.functions
                if self.fid_of.get(fn.file) in self.code_fids
            ]
        for k in entity_keys(name):  # most specific spelling first
            out = [fn for fn, keys in self._fn_keys if k in keys]
            if out:
                return out
        return []


def rounded_value(v: float) -> float:
    return float(f"{v:.9g}")


# --------------------------------------------------------------------------------------------
# Rules
# --------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """A rule's verdict before it becomes a Judgment."""

    verdict: str
    score: float
    failure_mode: str | None
    reasoning: str
    evidence: list[tuple[int, int, int]]
    support: float = -1.0  # the continuous support behind a coverage-based verdict
    features: dict[str, float] = field(default_factory=dict)


def _terms_match(a: str, b: str) -> bool:
    if a == b:
        return True
    if len(a) >= 3 and len(b) >= 3 and (a.startswith(b) or b.startswith(a)):
        return True
    return b in _RELATED_OF.get(a, ())


def _names_function(name: str, fname: str) -> bool:
    """``k-means++`` names ``kmeans_plusplus_init``: the name is most of the function's name."""
    f = squash(fname)
    return any(len(k) >= 4 and k in f and len(k) >= 0.6 * len(f) for k in entity_keys(name))


def _abbrev_match(a: str, b: str) -> bool:
    return a == b or (len(a) >= 3 and len(b) >= 3 and (a.startswith(b) or b.startswith(a)))


def _name_terms(words: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for w in words:
        out.extend(t for t in identifier_terms(w) if t not in ("the", "a", "of"))
    return out


class ClaimJudge:
    def __init__(self, ctx: SubmissionContext, execution: dict[str, Any] | None) -> None:
        self.ctx = ctx
        self.index = ctx.index
        self.execution = execution
        self.anchored = self.fn_anchor = False
        self.dim = ""
        self.cov = 0.0
        self.features: dict[str, float] = {}

    # --- coverage -----------------------------------------------------------------------
    def coverage(self, terms: dict[str, float]) -> tuple[float, float, list[Window]]:
        """(repo-wide credit share, docs/tests share, best windows)."""
        total = sum(terms.values()) or 1.0
        got = 0.0
        docs = 0.0
        for t, w in terms.items():
            p = self.ctx.term(t)
            got += w * p.credit
            if p.docs or p.credit > 0:
                docs += w * (1.0 if p.docs else 0.0)
        wins = self.ctx.windows(terms)
        win = (wins[0].score / total) if wins else 0.0
        share = RULES["window_share"]
        self.features.update(cov_g=got / total, cov_w=min(1.0, win), docs=docs / total)
        return (1 - share) * (got / total) + share * min(1.0, win), docs / total, wins

    def loc(self, fid: int, start: int, end: int | None = None) -> tuple[int, int, int]:
        n = len(self.index.files[fid].lines)
        start = max(1, min(start, n))
        end = max(start, min(end if end is not None else start, n))
        return (fid, start, end)

    def where(self, fid: int, line: int) -> str:
        return f"{self.index.files[fid].path}:{line}"

    # --- main ---------------------------------------------------------------------------
    def judge(self, claim: Claim) -> Outcome:
        self.features = {}
        o = self._judge(claim)
        o.features = self.features
        return o

    def _judge(self, claim: Claim) -> Outcome:
        self.dim = claim.dimension
        self.anchored = self.fn_anchor = False
        cov, docs_cov, wins = self.coverage(claim.terms)
        self.cov = cov
        ev = [self.loc(w.fid, w.start, w.end) for w in wins[:2]]

        if claim.expected and self.execution is not None:
            out = self.results(claim, ev)
            if out is not None:
                return out

        # Named things (backticked) are required: absent from code -> omission. Names that are
        # operands of the claim's own formulas are notation (``d2`` in ``d2 / sum(d2)``).
        notation = {t for f in claim.formulas for t in re.findall(r"[A-Za-z_]\w*", f)}
        absent, docs_only = [], []
        for name in claim.names:
            p = self.ctx.key(name)
            if p.credit == 0 and name not in notation:
                (docs_only if p.docs else absent).append(name)
        # A claim about results concerns the protocol; the stub rule is for the method's code.
        stub = None if claim.expected else self.stub_check(claim, wins)
        if stub is not None:
            return stub
        if (absent or docs_only) and claim.dimension != "D4":
            where = " (named only in docs/tests)" if docs_only else ""
            return Outcome(
                "missing",
                0.0,
                "omission",
                f"`{'`, `'.join(absent + docs_only)}` not found in code or config{where}.",
                ev,
            )

        if cov < RULES["docs_only_below"] and docs_cov >= RULES["docs_only_cov"]:
            doc = self.doc_evidence(claim)
            return Outcome(
                "missing",
                0.0,
                "omission",
                "The claim's terms appear only in docs/tests, not in code or config.",
                [doc] if doc else ev,
            )

        # Every backticked name is in real code: the anchors the curator gave are implemented.
        self.anchored = bool(claim.names) and all(
            self.ctx.key(n).credit >= RULES["anchor_credit"] for n in claim.names
        )
        if claim.dimension == "D1" and claim.numbers and not claim.expected:
            return self.numbers(claim, cov, ev)
        if claim.formulas:
            out = self.formulas(claim, cov, ev)
            if out is not None:
                return out
        if claim.steps:
            out = self.order(claim, cov, ev)
            if out is not None:
                return out
        if claim.dimension == "D3" or claim.entities:
            return self.protocol(claim, cov, ev)
        return self.by_support(cov, ev, "Weighted term coverage")

    def by_support(
        self,
        s: float,
        ev: list[tuple[int, int, int]],
        what: str,
        extra: str = "",
        verified: bool = False,
    ) -> Outcome:
        """Verdict from a support in [0, 1] on SA-Bench's scale (bands per dimension). A claim whose
        anchors are verified (its backticked names in code, a named non-stub function, all values
        with their names, all formulas, all steps in order) is aligned once its terms are
        reasonably covered."""
        what = what.rstrip(". ")
        where = f" (best evidence {self.where(ev[0][0], ev[0][1])})" if ev else ""
        anchored = verified or self.anchored or self.fn_anchor
        self.features.update(anchored=float(anchored))
        if anchored and self.cov >= RULES["anchored_cov"]:
            why = "verified" if verified else "every named item is in the code"
            o = Outcome("aligned", 1.0, None, f"{what}; {why}{where}. {extra}".strip(), ev)
            o.features["forced"] = 1.0
            return o
        bands = BANDS.get(self.dim, BANDS["D2"])
        level = bisect.bisect_right(bands, s)
        if level >= 4:
            o = Outcome(
                "aligned", 1.0, None, f"{what}, support {s:.2f}{where}. {extra}".strip(), ev
            )
        elif level == 0:
            o = Outcome(
                "missing",
                0.0,
                "omission",
                f"{what}, support {s:.2f}: no implementation found. {extra}".strip(),
                ev,
            )
        else:
            o = Outcome(
                "partial", level / 4, None, f"{what}, support {s:.2f}{where}. {extra}".strip(), ev
            )
        o.support = s
        return o

    def doc_evidence(self, claim: Claim) -> tuple[int, int, int] | None:
        for t in sorted(claim.terms, key=lambda x: -claim.terms[x]):
            for fid, ln in self.ctx.term(t).sites:
                if self.index.files[fid].kind in (DOCS, TESTS):
                    return self.loc(fid, ln)
        return None

    # --- stubs --------------------------------------------------------------------------
    def stub_check(self, claim: Claim, wins: list[Window]) -> Outcome | None:
        for name in [*claim.names, *claim.entities]:
            fns = self.ctx.functions_for(name)
            if claim.dimension == "D2" and any(
                not f.stub and _names_function(name, f.name) for f in fns
            ):
                self.fn_anchor = True  # the algorithm the claim names is a real function
            if fns and all(f.stub for f in fns):
                f = fns[0]
                fid = self.ctx.fid_of[f.file]
                return Outcome(
                    "placeholder",
                    0.0,
                    "placeholder",
                    f"`{f.name}` ({f.file}:{f.start}) is a stub: its body is only "
                    f"pass/.../raise NotImplementedError or a TODO.",
                    [self.loc(fid, f.start, f.end)],
                )
        if wins and wins[0].stub:
            best = wins[0]
            rivals = [w for w in wins[1:] if not w.stub and w.score >= best.score * 0.9]
            if not rivals:
                fn = self.ctx.function_at(best.fid, best.start)
                if fn is not None:
                    return Outcome(
                        "placeholder",
                        0.0,
                        "placeholder",
                        f"The best evidence is `{fn.name}` ({fn.file}:{fn.start}), a stub.",
                        [self.loc(best.fid, fn.start, fn.end)],
                    )
        return None

    # --- D1: numbers --------------------------------------------------------------------
    def numbers(self, claim: Claim, cov: float, ev: list[tuple[int, int, int]]) -> Outcome:
        supports: list[float] = []
        notes: list[str] = []
        conflicts: list[str] = []
        evidence: list[tuple[int, int, int]] = []
        found_values: list[float] = []
        win_lines = {(w[0], ln) for w in ev for ln in range(w[1] - 3, w[2] + 4)}
        for num in claim.numbers:
            ctx_terms = _name_terms(num.context_words)
            near_terms = _name_terms(num.context_words[-1:])
            all_terms = ctx_terms + _name_terms(num.after_words)
            best, best_fact = 0.0, None
            for cand in num.candidates():
                for fact in self.ctx.facts_by_value.get(rounded_value(cand), []):
                    if self.ctx.fid_of.get(fact.file) not in self.ctx.code_fids:
                        continue
                    sim = self._name_sim(all_terms, fact)
                    score = 1.0 if sim > 0 else 0.0
                    if score > best:
                        best, best_fact = score, fact
            if best_fact is not None:
                supports.append(1.0)
                found_values.append(num.value)
                fid = self.ctx.fid_of[best_fact.file]
                evidence.append(self.loc(fid, best_fact.line))
                continue
            if any(values_match(num, v) for v in found_values):
                supports.append(1.0)
                continue
            conflict = self._conflict(num, near_terms, all_terms)
            if conflict is None and num.after_words:
                conflict = self._conflict(num, _name_terms(num.after_words[:1]), all_terms)
            if conflict is not None:
                fid = self.ctx.fid_of[conflict.file]
                evidence.insert(0, self.loc(fid, conflict.line))
                conflicts.append(
                    f"the paper's {num.text} is {conflict.value.strip()} "
                    f"(`{conflict.name}`, {conflict.file}:{conflict.line})"
                )
                supports.append(0.0)
                continue
            sites = []
            for cand in num.candidates():
                sites += [
                    s
                    for s in self.index.literals.get(rounded_value(cand), ())
                    if s[0] in self.ctx.code_fids
                ]
            if sites:
                near = [s for s in sites if s in win_lines]
                small = num.value == int(num.value) and abs(num.value) <= 10
                if near:
                    supports.append(0.6)
                    evidence.append(self.loc(*near[0]))
                else:
                    supports.append(0.15 if small else 0.3)
                    notes.append(f"{num.text} only as a bare literal")
                found_values.append(num.value)
            else:
                supports.append(0.0)
                notes.append(f"{num.text} not found")
        frac = sum(supports) / len(supports)
        self.features.update(num_frac=frac, n_num=len(supports), n_conf=len(conflicts))
        evidence = list(dict.fromkeys(evidence + ev))[:4]
        if conflicts and frac < 0.999 and sum(1 for s in supports if s >= 1.0) == 0:
            return Outcome(
                "drifted",
                0.0,
                "implementation_mismatch",
                "Value mismatch: " + "; ".join(conflicts[:3]) + ".",
                evidence,
            )
        s = RULES["number_share"] * frac + (1 - RULES["number_share"]) * cov
        extra = ("Mismatch: " + "; ".join(conflicts[:2]) + ". ") if conflicts else ""
        extra += ("; ".join(notes[:3]) + ".") if notes else ""
        if conflicts:
            s = min(s, 0.75)
        n_ok = sum(1 for x in supports if x >= 1.0)
        if n_ok < len(supports):
            # named things in the code do not vouch for values that are not found with their names
            self.anchored = self.fn_anchor = False
        return self.by_support(
            s,
            evidence,
            f"{n_ok}/{len(supports)} values found with their names",
            extra,
            verified=n_ok == len(supports) and not conflicts,
        )

    def _name_sim(self, claim_terms: list[str], fact: Fact) -> float:
        if not claim_terms:
            return 0.0
        f_terms = [t for t in fact.terms if len(t) > 1 or fact.terms == (t,)]
        if not f_terms:
            return 0.0
        hit = sum(1 for ft in f_terms if any(_terms_match(ft, ct) for ct in claim_terms))
        return hit / len(f_terms)

    def _conflict(self, num: NumberMention, near: list[str], claim_terms: list[str]) -> Fact | None:
        """A configured value named like the claim's number but set to another value
        (``lr = 0.005`` for the paper's 0.05). Conservative: the fact is a setting (assignment,
        config key, CLI/argparse option, default, or a keyword with a compound name), every term
        of its name is in the claim's words, it covers the number's nearest name (the word or
        identifier right before it, or its unit right after), and no fact of that name holds the
        paper's value."""
        if not near:
            return None
        best: Fact | None = None
        for fact in self.ctx.settings:
            terms = [t for t in fact.terms if not t.isdigit()]
            if len(terms) == 1 and terms[0] in _VAGUE_NAMES:
                continue
            if not any(any(_abbrev_match(ft, nt) for ft in terms) for nt in near):
                continue
            if not all(any(_abbrev_match(ft, ct) for ct in claim_terms) for ft in terms):
                continue
            if not all(any(_abbrev_match(ft, nt) for ft in terms) for nt in near):
                continue
            if any(values_match(num, v) for v in fact.numbers):
                return None
            if best is None:
                best = fact
        return best

    # --- D2: formulas -------------------------------------------------------------------
    def formulas(self, claim: Claim, cov: float, ev: list[tuple[int, int, int]]) -> Outcome | None:
        results = [self._formula(f) for f in claim.formulas]
        drifted = [r for r in results if r[0] == "drifted"]
        matched = [r for r in results if r[0] == "aligned"]
        evidence = [r[2] for r in results if r[2] is not None] + ev
        evidence = list(dict.fromkeys(evidence))[:4]
        if drifted:
            return Outcome(
                "drifted", 0.0, "implementation_mismatch", " ".join(r[1] for r in drifted), evidence
            )
        if matched:
            frac = len(matched) / len(results)
            return self.by_support(
                0.6 * frac + 0.4 * cov,
                evidence,
                " ".join(r[1] for r in matched) if frac == 1 else "Formulas matched in part",
                verified=frac == 1,
            )
        return None

    def _formula(self, formula: str) -> tuple[str, str, tuple[int, int, int] | None]:
        target = formula_tokens(formula)
        names = Counter({k: v for k, v in target.items() if k.startswith("n:")})
        ops = Counter({k: v for k, v in target.items() if not k.startswith("n:")})
        if not names:
            return ("absent", "", None)
        n_names = sum(names.values())
        # candidate lines: code lines with at least half of the formula's operand names
        hits: Counter[tuple[int, int]] = Counter()
        for name in names:
            raw = name[2:]
            for site in self._raw_sites(raw):
                hits[site] += 1
        need = max(1, math.ceil(len(names) * 0.5))
        best: (
            tuple[tuple[bool, float, float], float, float, tuple[int, int], Counter[str]] | None
        ) = None
        for (fid, ln), k in hits.items():
            if k < need or self.index.files[fid].kind != CODE or self.index.is_comment(fid, ln):
                continue
            stmt = self._statement(fid, ln)
            toks = formula_tokens(stmt)
            n_cont = sum(min(c, toks.get(t, 0)) for t, c in names.items()) / n_names
            o_total = sum(ops.values()) or 1
            o_cont = sum(min(c, toks.get(t, 0)) for t, c in ops.items()) / o_total
            if n_cont < RULES["formula_names_min"]:
                continue
            key = (n_cont >= 0.999 and o_cont >= 0.999, n_cont + o_cont, n_cont)
            if best is None or key > best[0]:
                best = (key, n_cont, o_cont, (fid, ln), toks)
        if best is None or best[1] < RULES["formula_names_min"]:
            return ("absent", "", None)
        _, n_cont, o_cont, (fid, ln), toks = best
        loc = self.loc(fid, ln)
        code = self.index.files[fid].lines[ln - 1].strip()
        if n_cont >= 0.999 and o_cont >= 0.999:
            return ("aligned", f"`{formula}` matches {self.where(fid, ln)}: `{code[:100]}`.", loc)
        if len(names) < 2 or o_cont < RULES["formula_ops_min"]:
            return ("absent", "", None)  # a mention of the operands, not the same computation
        lacking = [k.split(":", 1)[1] for k in (target - toks)]
        extra = [
            k.split(":", 1)[1]
            for k in (toks - target)
            if k.startswith("f:") and k[2:] not in ("float", "int", "array", "asarray", "item")
        ]
        diff = f"lacks {', '.join(lacking[:4])}" if lacking else ""
        if extra:
            diff += ("; " if diff else "") + f"has {', '.join(extra[:3])} instead"
        return (
            "drifted",
            f"`{formula}` differs from {self.where(fid, ln)} `{code[:100]}`: {diff}.",
            loc,
        )

    def _raw_sites(self, raw: str) -> list[tuple[int, int]]:
        return self.index.chunk_sites.get(raw, [])

    def _statement(self, fid: int, ln: int) -> str:
        lines = self.index.files[fid].lines
        text = lines[ln - 1]
        depth = text.count("(") + text.count("[") - text.count(")") - text.count("]")
        j = ln
        while depth > 0 and j < len(lines) and j < ln + 6:
            nxt = lines[j]
            text += " " + nxt.strip()
            depth += nxt.count("(") + nxt.count("[") - nxt.count(")") - nxt.count("]")
            j += 1
        return text.split("#", 1)[0]

    # --- D3: protocol -------------------------------------------------------------------
    def protocol(self, claim: Claim, cov: float, ev: list[tuple[int, int, int]]) -> Outcome:
        ents = claim.entities
        if not ents:
            return self.by_support(cov, ev, "Weighted term coverage")
        found, missing = [], []
        evidence = list(ev)
        for e in ents:
            p = self.ctx.key(e)
            if p.credit > 0:
                found.append((e, p.credit))
                site = next((s for s in p.sites if s[0] in self.ctx.code_fids), None)
                if site:
                    evidence.append(self.loc(*site))
            else:
                missing.append(e)
        frac = sum(c for _, c in found) / len(ents)
        self.features.update(ent_frac=frac, n_ent=len(ents))
        s = RULES["entity_share"] * frac + (1 - RULES["entity_share"]) * cov
        what = "datasets/baselines/metrics" if claim.dimension == "D3" else "items"
        msg = f"{len(found)}/{len(ents)} named {what} found in code"
        extra = f"Absent: {', '.join(missing[:5])}." if missing else ""
        return self.by_support(s, list(dict.fromkeys(evidence))[:4], msg, extra)

    # --- D4: order ----------------------------------------------------------------------
    def order(self, claim: Claim, cov: float, ev: list[tuple[int, int, int]]) -> Outcome | None:
        steps = claim.steps
        step_sites: list[set[tuple[int, int]]] = []
        for st in steps:
            step_sites.append(self._step_sites(st))
        scopes = self._scopes(step_sites)
        best = None
        for fn in scopes:
            lin = self._linearize(fn)
            pos: list[tuple[int, bool, int, int, bool] | None] = []
            for st, sites in zip(steps, step_sites, strict=True):
                pos.append(self._first(lin, st, sites))
            n_match = sum(1 for p in pos if p is not None)
            direct = sum(1 for p in pos if p is not None and p[4])
            reachable = fn.name in self.ctx.reachable or fn.name == "__main__"
            key = (n_match, reachable, direct, -len(lin))
            if best is None or key > best[0]:
                best = (key, fn, pos)
        if best is None or best[0][0] == 0:
            found = sum(1 for s in step_sites if s) / len(steps)
            self.features.update(step_frac=found, n_steps=len(steps))
            share = self._step_share(steps)
            return self.by_support(
                share * found + (1 - share) * cov,
                ev,
                f"{sum(1 for s in step_sites if s)}/{len(steps)} steps found",
            )
        _, fn, pos = best
        evidence = [self.loc(p[2], p[3]) for p in pos if p is not None]
        evidence = list(dict.fromkeys(evidence + ev))[:5]
        strong = [(i, p) for i, p in enumerate(pos) if p is not None and p[1]]
        for a in range(len(strong)):
            for b in range(a + 1, len(strong)):
                ia, pa = strong[a]
                ib, pb = strong[b]
                if pa[0] > pb[0]:
                    return Outcome(
                        "drifted",
                        0.0,
                        "implementation_mismatch",
                        f"Steps out of order in `{fn.qualname}`: '{steps[ib].text}' "
                        f"({self.where(pb[2], pb[3])}) runs before '{steps[ia].text}' "
                        f"({self.where(pa[2], pa[3])}).",
                        evidence,
                    )
        n_match = sum(1 for p in pos if p is not None)
        keyed_missing = [st.text for st, p in zip(steps, pos, strict=True) if p is None and st.keys]
        weak_order = [p[0] for p in pos if p is not None]
        in_order = weak_order == sorted(weak_order)
        frac = n_match / len(steps)
        self.features.update(step_frac=frac, n_steps=len(steps))
        msg = f"{n_match}/{len(steps)} steps found in order in `{fn.qualname}`"
        if not in_order:
            msg = f"{n_match}/{len(steps)} steps found in `{fn.qualname}`, loosely matched ones out of order"
        keyed = [st for st in steps if st.keys]
        strong_all = all(p is not None and p[1] for p in pos)
        verified = in_order and not keyed_missing and (strong_all or (bool(keyed) and frac >= 0.66))
        extra = f"Not found: {', '.join(keyed_missing[:3])}." if keyed_missing else ""
        share = self._step_share(steps)
        return self.by_support(
            share * frac + (1 - share) * cov, evidence, msg, extra, verified=verified
        )

    @staticmethod
    def _step_share(steps: list[Step]) -> float:
        """Weight of the found-steps fraction in the support: prose steps are matched loosely
        (on SA-Bench their fraction ranks claims worse than term coverage), named ones exactly."""
        return RULES["step_share"] if any(st.keys for st in steps) else 0.0

    def _step_sites(self, st: Step) -> set[tuple[int, int]]:
        sites: set[tuple[int, int]] = set()
        for k in st.keys:
            sites.update(s for s in self.ctx.key(k).sites if s[0] in self.ctx.code_fids)
        if sites or not st.terms:
            return sites
        total = sum(st.terms.values()) or 1.0
        acc: dict[tuple[int, int], float] = defaultdict(float)
        for t, w in st.terms.items():
            p = self.ctx.term(t)
            if len(p.sites) > 400:
                continue
            for s in p.sites:
                if s[0] in self.ctx.code_fids and not self.index.is_comment(*s):
                    acc[s] += w
        return {s for s, v in acc.items() if v / total >= 0.5 or (v >= 2 and v / total >= 0.34)}

    def _scopes(self, step_sites: list[set[tuple[int, int]]]) -> list[Function]:
        """Where the steps may run in order: functions (and ``__main__`` blocks) that directly
        contain a step, and the functions that call those."""
        count: Counter[int] = Counter()
        mains: set[int] = set()
        main_scopes = self.ctx.main_scopes
        for sites in step_sites:
            seen: set[int] = set()
            for fid, ln in sites:
                arr = self.ctx.func_at.get(fid)
                fi = arr[ln] if arr is not None and ln < len(arr) else -1
                if fi >= 0:
                    if fi not in seen:  # each step counts once per function
                        seen.add(fi)
                        count[fi] += 1
                    continue
                path = self.index.files[fid].path
                for mi, m in enumerate(main_scopes):
                    if m.file == path and m.start <= ln <= m.end:
                        mains.add(mi)
        callers = self.ctx.callers
        scored: Counter[int] = Counter(count)
        for fi in list(count):
            for caller in callers.get(self.index.functions[fi].name, ()):
                scored[caller] += count[fi]
        called = {self.index.functions[fi].name for fi in scored}
        for mi, m in enumerate(main_scopes):
            if any(c in called for c, _ in m.calls):
                mains.add(mi)
        ranked = [self.index.functions[fi] for fi, _ in scored.most_common(12)]
        return ranked + [main_scopes[mi] for mi in sorted(mains)]

    def _linearize(
        self, fn: Function, depth: int = 0, seen: set[int] | None = None
    ) -> list[tuple[str, int, int, str, bool]]:
        """The function's body lines and calls in order, with calls into the repo expanded (depth 2).

        Items: (kind "line"/"call", file id, line, callee name, direct)."""
        seen = seen if seen is not None else {id(fn)}
        fid = self.ctx.fid_of.get(fn.file)
        if fid is None:
            return []
        calls: dict[int, list[str]] = defaultdict(list)
        for name, ln in fn.calls:
            calls[ln].append(name)
        out: list[tuple[str, int, int, str, bool]] = []
        direct = depth == 0
        for ln in range(max(fn.body_start, fn.start + 1), fn.end + 1):
            if self.index.is_comment(fid, ln):
                continue
            out.append(("line", fid, ln, "", direct))
            for callee in calls.get(ln, ()):
                out.append(("call", fid, ln, callee, direct))
                if depth < 2:
                    target = self._resolve(callee, fn.file)
                    if target is not None and id(target) not in seen and not target.stub:
                        seen.add(id(target))
                        out.extend(self._linearize(target, depth + 1, seen))
        return out

    def _resolve(self, callee: str, file: str) -> Function | None:
        fns = self.ctx.by_name.get(callee)
        if not fns:
            return None
        same = [f for f in fns if f.file == file]
        return (same or fns)[0]

    def _first(
        self, lin: list[tuple[str, int, int, str, bool]], st: Step, sites: set[tuple[int, int]]
    ) -> tuple[int, bool, int, int, bool] | None:
        """Position of a step in a linearised scope: a call named like the step's key (strong),
        else the first line that matches it."""
        keys = [k for key in st.keys for k in entity_keys(key)]
        first_line = None
        for i, (kind, fid, ln, callee, direct) in enumerate(lin):
            if kind == "call" and keys:
                ckeys = set(chunk_info(callee)[1]) | {squash(callee)}
                if any(k in ckeys for k in keys):
                    return (i, True, fid, ln, direct)
            elif kind == "line" and first_line is None and (fid, ln) in sites:
                first_line = (i, bool(keys) and self._is_call_line(fid, ln, keys), fid, ln, direct)
        if first_line is not None and not keys:
            # a prose step: strong only when a call on that line is named by its terms
            i, _, fid, ln, direct = first_line
            return (i, False, fid, ln, direct)
        return first_line

    def _is_call_line(self, fid: int, ln: int, keys: list[str]) -> bool:
        text = self.index.files[fid].lines[ln - 1]
        for m in re.finditer(r"([A-Za-z_]\w*)\s*\(", text):
            ck = set(chunk_info(m.group(1))[1])
            if any(k in ck for k in keys):
                return True
        return False

    # --- results (execution) ------------------------------------------------------------
    def results(self, claim: Claim, ev: list[tuple[int, int, int]]) -> Outcome | None:
        ex = self.execution or {}
        metrics = _flatten(ex.get("metrics") or {})
        status = ex.get("status")
        lookup = {squash(k): v for k, v in metrics.items()}
        bad, ok, absent = [], [], []
        for exp in claim.expected:
            key = str(exp["metric"])
            val = metrics.get(key, lookup.get(squash(key)))
            if not isinstance(val, int | float) or isinstance(val, bool):
                absent.append(key)
                continue
            target = float(exp["value"])
            tol = exp.get("tolerance", 0.0)
            if isinstance(tol, str) and tol.strip().endswith("%"):
                allowed = abs(target) * float(tol.strip()[:-1]) / 100.0
            else:
                allowed = float(tol or 0.0)
            (ok if abs(float(val) - target) <= allowed + 1e-12 else bad).append(
                f"{key} = {val:g} (paper {target:g})"
            )
        if absent:
            why = f"execution {status}" if status and status != "ok" else "no such result"
            return Outcome(
                "missing", 0.0, "omission", f"{why}: {', '.join(absent[:3])} not reported.", ev
            )
        if bad:
            return Outcome(
                "drifted",
                0.0,
                "implementation_mismatch",
                f"Results differ from the paper: {'; '.join(bad[:3])}.",
                ev,
            )
        return Outcome("aligned", 1.0, None, f"Results match: {'; '.join(ok[:3])}.", ev)


def _flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(d, dict):
        for k, v in d.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            if isinstance(v, dict):
                out.update(_flatten(v, key))
            else:
                out[key] = v
    return out


_FTOK_RE = re.compile(
    r"\*\*|//|==|!=|<=|>=|[A-Za-z_][\w]*(?:\s*\.\s*[A-Za-z_]\w*)*|\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+"
    r"|[-+*/@^%<>=()\[\],:|&~√Σ∑]"
)
_UNICODE_OPS = str.maketrans({"−": "-", "×": "*", "·": "*", "⋅": "*", "∗": "*", "÷": "/"})


def formula_tokens(text: str) -> Counter[str]:
    """Operands (``n:``), functions (``f:``), operators (``o:``) and constants (``c:``) of an
    expression, normalised: module prefixes dropped, methods as functions, ``**`` as ``^``."""
    text = text.translate(_UNICODE_OPS).replace("²", "**2").replace("√", "sqrt")
    # keep only the right-hand side of an assignment
    m = re.match(r"^\s*[\w.\[\], ]+?\s*(?<![=!<>])=(?!=)\s*(.+)$", text)
    if m:
        text = m.group(1)
    toks = _FTOK_RE.findall(text)
    out: Counter[str] = Counter()
    for i, tok in enumerate(toks):
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        if re.match(r"[A-Za-z_]", tok):
            parts = [p.strip() for p in tok.split(".")]
            while len(parts) > 1 and parts[0] in _MODULES:
                parts = parts[1:]
            if nxt == "(":
                *objs, fname = parts
                fname = _FUNC_ALIASES.get(fname, fname)
                for o in objs:
                    out[f"n:{o}"] += 1
                if fname in ("^", "@", "+", "-", "*", "/"):
                    out[f"o:{fname}"] += 1
                elif fname == "square":
                    out["o:^"] += 1
                    out["c:2"] += 1
                elif fname not in ("float", "int", "array", "asarray", "tensor", "item", "np"):
                    out[f"f:{fname}"] += 1
            else:
                for p in parts:
                    if p in ("sum", "mean", "T"):
                        out[f"n:{p}" if p == "T" else f"f:{p}"] += 1
                    elif p not in _MODULES:
                        out[f"n:{p}"] += 1
        elif re.match(r"[\d.]", tok):
            with contextlib.suppress(ValueError):
                out[f"c:{float(tok):g}"] += 1
        elif tok in ("(", ")", ",", ":", "[", "]"):
            continue
        else:
            out[f"o:{'^' if tok == '**' else tok}"] += 1
    # keyword arguments (``axis=0``) are not operators
    out.pop("o:=", None)
    return out


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def judge_static(
    submission: Path | str,
    saus: list[dict[str, Any]],
    execution: dict[str, Any] | None = None,
    index: CodeIndex | None = None,
) -> list[Judgment]:
    """Judge every SAU of one run from the submission's code alone (and, for claims with expected
    results, from the execution record's metrics when one is given)."""
    submission = Path(submission)
    if not submission.is_dir():
        if submission.exists():
            return [
                _judgment(
                    sau, Outcome("error", 0.0, None, f"{submission} is not a folder", []), None
                )
                for sau in saus
            ]
        index = CodeIndex(root=submission)
    if index is None:
        try:
            index = build_index(submission)
        except OSError as exc:
            return [
                _judgment(
                    sau, Outcome("error", 0.0, None, f"cannot read submission: {exc}", []), None
                )
                for sau in saus
            ]
    return [_judgment(sau, o, index) for sau, o in judge_outcomes(index, saus, execution)]


def judge_outcomes(
    index: CodeIndex, saus: list[dict[str, Any]], execution: dict[str, Any] | None = None
) -> list[tuple[dict[str, Any], Outcome]]:
    """The rules' outcomes per SAU (with the continuous support, for calibration studies)."""
    ctx = SubmissionContext(index, saus)
    if not ctx.has_code:
        why = "The submission is empty." if index.empty else "The submission has no code or config."
        return [(sau, Outcome("missing", 0.0, "omission", why, [])) for sau in saus]
    judge = ClaimJudge(ctx, execution)
    out = []
    for sau in saus:
        claim = analyze_claim(sau, ctx.claim_df, ctx.n_claims)
        try:
            outcome = judge.judge(claim)
        except Exception as exc:  # a rule bug must not sink the run: fall back to coverage
            try:
                cov, _, wins = judge.coverage(claim.terms)
                judge.cov, judge.dim = cov, claim.dimension
                judge.anchored = judge.fn_anchor = False
                ev = [judge.loc(w.fid, w.start, w.end) for w in wins[:2]]
                outcome = judge.by_support(
                    cov, ev, f"Weighted term coverage (rules failed: {type(exc).__name__})"
                )
            except Exception as exc2:
                outcome = Outcome("error", 0.0, None, f"static judge failed: {exc2!r}", [])
        out.append((sau, outcome))
    return out


def _judgment(sau: dict[str, Any], o: Outcome, index: CodeIndex | None) -> Judgment:
    evidence = []
    if index is not None:
        for fid, start, end in o.evidence:
            f = index.files[fid]
            if f.lines:
                evidence.append(Evidence(f.path, start, end))
    score = o.score if o.verdict == "partial" else None
    return Judgment(
        sau_id=str(sau.get("sau_id") or sau.get("id") or ""),
        dimension=str(sau.get("dimension") or ""),
        verdict=o.verdict,
        score=score,
        failure_mode=o.failure_mode,
        evidence=evidence,
        reasoning=o.reasoning.strip(),
    )
