"""Claims: what a SAU's claim asks for (names, formulas, entities, numbers, steps), parsed once."""

from __future__ import annotations

import ast
import functools
import hashlib
import itertools
import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sabench.index import squash, text_terms
from sabench.judges.static.params import GENERIC, RULES
from sabench.values import NumberMention, extract_numbers, named_by_its_subject, words

_ENTITY_STOP = words(
    "The A An In On For With We Our This That These Those It Its To Of And Or By As At From "
    "Each Every All Both Then Finally First Second Third Table Figure Fig Section Sec Eq "
    "Equation Appendix Algorithm Stage Step Phase Reference Note Where When Compare Compared "
    "Evaluate Train Training Use Using Run Compute Generate Report Given If Not No Only Also "
    "Experiment Experimental Results Method Methods Model Baseline Baselines Dataset Datasets "
    "Metric Metrics Ablation Study Main Setup Protocol Workflow Pipeline For Apply Extract "
    "Split Test Sample Initialize Set Measure Perform Fine-tune Finetune Pretrain"
)
_ARROW_RE = re.compile(r"\s*(?:→|->|⟶|⇒|=>|⟹)\s*")
_THEN_RE = re.compile(
    r"(?:,\s*|;\s*|\s+)(?:and\s+)?then\s+|(?:,\s*|\s+)(?:and\s+)?finally\s+", re.I
)
_ENUM_RE = re.compile(r"(?:^|\s)(?:\(?\d{1,2}\)|\d{1,2}\.(?=\s)|step\s+\d+:?)\s*", re.I)
_BACKTICK_RE = re.compile(r"`([^`\n]+)`")


#: the operation words of a claim in prose, by the operator that computes them
OPERATION_WORDS = {
    "+": re.compile(r"\b(?:sum|sums|summed|summing|plus|add|adds|added|adding|addition)\b", re.I),
    "-": re.compile(r"\b(?:minus|difference|differences|subtract\w*)\b", re.I),
    "*": re.compile(r"\b(?:product|times|multipl\w*|scaled by|weighted|element-?wise)\b", re.I),
    "/": re.compile(
        r"\b(?:ratio|divided|divides|divide|division|quotient|normali[sz]ed by)\b", re.I
    ),
    "^": re.compile(r"\b(?:squared?|cubed?|power|powers|exponent)\b|²|³", re.I),
    "@": re.compile(r"\b(?:matrix product|matmul|dot product|inner product)\b", re.I),
}
#: a token of inline math in a claim: an operator, or a symbol (``x_t``, ``W``, ``f(x)``, ``0.5``)
_MATH_TOKEN_RE = re.compile(
    r"^(?:[-−+*/^×·⋅∗⊙@=<>≤≥]+|[A-Za-z]|[\d.]+|[(\[{|]*[A-Za-z]\w*[_^({\[|].*"
    r"|[(\[{|]+[\w.^]{1,4}[)}\]|]*|[\w.^]{0,4}[)}\]|]+"
    r"|(?:alpha|beta|gamma|delta|epsilon|eta|theta|lambda|mu|sigma|tau|phi|psi|omega|pi|rho)\w*"
    r"|.*[-+*/^×·⋅⊙@=].*)[,;.:]?$"
)
_SYMBOLS = {"×": "*", "·": "*", "⋅": "*", "∗": "*", "⊙": "*", "÷": "/", "−": "-", "**": "^"}


def math_spans(text: str) -> list[str]:
    """Runs of inline math in a claim (three or more math tokens, one an operator between
    operands): ``L = L_CE + alpha * L_LB``, ``(sigma - sigma_0)^2``."""
    spans: list[str] = []
    run: list[str] = []
    for tok in [*text.split(), ""]:
        if tok and _MATH_TOKEN_RE.match(tok):
            run.append(tok)
            continue
        span = " ".join(run)
        long = len(run) >= 3 or re.search(r"\w\s*[-−+*/^×·⊙@]\s*[\w(]", span)
        if run and long and span_operations(span):
            spans.append(span)
        run = []
    return spans


def span_operations(span: str) -> set[str]:
    """The arithmetic operators of inline math; a hyphen counts as minus where it stands
    between symbols or spaces (``x - y``, ``(1-t)``), not inside a word (``stop-gradient``)."""
    out = set()
    text = span
    for sym, op in _SYMBOLS.items():
        if sym in text:
            out.add(op)
            text = text.replace(sym, " ")
    for op in "+*/^@":
        if op in text.replace("++", ""):
            out.add(op)
    if re.search(r"(?:^|[\s(\[{=,])-\s*[\w(]|\s-\s|[)\]}]\s*-|-\s*\(|\b\w{1,2}-\w{1,2}\b", text):
        out.add("-")
    return out


#: where an equation's right-hand side ends: a clause boundary or prose resuming
_CLAUSE_END_RE = re.compile(
    r";|\n|\s(?:where|with|for|and|in which)\s|\.\s+[A-Z]|,\s+[a-z]{4,}\s|\s[—–]\s"
)
_EQUALS_RE = re.compile(r"(?<![=<>!:])=(?!=)")


_MATH_SYMBOLS = str.maketrans(
    {"−": "-", "×": "*", "·": "*", "⋅": "*", "∗": "*", "⊙": "*", "÷": "/", "√": "sqrt "}
)


@functools.lru_cache(maxsize=4096)
def equation_tree(rhs: str) -> ast.Expression | None:
    """An equation's right-hand side as a Python expression, read tolerantly: subscripts joined
    (``x_{i,m}`` -> ``x_im``), ``^`` as ``**``, ``||x||`` as ``norm(x)``, brackets as parentheses,
    juxtaposition as a product; the longest prefix ending at a word that parses (the prose that
    follows an equation does not). None when nothing does."""
    t = rhs.translate(_MATH_SYMBOLS).replace("²", "**2").replace("³", "**3")
    t = re.sub(r"_\{([^{}]*)\}", lambda m: "_" + re.sub(r"\W", "", m.group(1)), t)
    t = re.sub(r"\^\{([^{}]*)\}", r"**(\1)", t).replace("^", "**")
    t = re.sub(r"\|\|([^|]+)\|\|(?:_\w+)?", r"norm(\1)", t)
    t = re.sub(r"\|([^|]+)\|", r"abs(\1)", t)
    t = t.translate(str.maketrans("[]{}", "()()"))
    t = re.sub(r"(\w)'", r"\1_prime", t)
    t = re.sub(r"(?<=[\w)])\s+(?=[A-Za-z(])", " * ", t)
    ends = [len(t)] + [m.start() for m in reversed(list(re.finditer(r"(?<=[\w)])\s*[,;:]|\s", t)))]
    for end in ends:
        try:
            return ast.parse(t[:end], mode="eval")
        except (SyntaxError, ValueError):
            continue
    return None


def _split_at_equals(clause: str) -> list[str]:
    """``clause`` split at its equals signs outside brackets (``sum_{i=1}^{N} x_i`` is one side)."""
    depth, cuts = 0, []
    for m in re.finditer(r"[([{]|[)\]}]|" + _EQUALS_RE.pattern, clause):
        c = m.group()
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(0, depth - 1)
        elif depth == 0:
            cuts.append(m.start())
    bounds = [-1, *cuts, len(clause)]
    return [clause[a + 1 : b] for a, b in itertools.pairwise(bounds)]


#: the name an equation's left-hand side defines: ``c_skip(sigma)``, ``sigma_min_rho``, ``K'``
_DEFINED_RE = re.compile(r"([A-Za-z_]\w*)('?)\s*(?:\([^()]*\))?\s*$")


def _computes(rhs: str) -> bool:
    return bool(span_operations(rhs) - {"@"} and re.search(r"[A-Za-z]", rhs))


def equations(text: str) -> list[str]:
    """The right-hand sides of a claim's equations that compute with an arithmetic operator:
    ``c_skip(sigma) = sigma_d^2 / (sigma_d^2 + (sigma - sigma_0)^2), where ...`` gives
    ``sigma_d^2 / (sigma_d^2 + (sigma - sigma_0)^2)``; ``lr = 0.05`` gives nothing."""
    out = []
    for clause in _CLAUSE_END_RE.split(text):
        for rhs in _split_at_equals(clause)[1:]:
            rhs = rhs.strip(" ,.:")
            if _computes(rhs):
                out.append(rhs)
    return out


_PROSE_RE = re.compile(
    r"\s(?:be|is|are|was|being|the|an?|as|of|to|in|on|by|for|with|and|that|which|denotes|gives)\s"
)


def defined_equations(text: str) -> list[tuple[str, str]]:
    """(name, right-hand side) of the claim's equations that define a code-like name
    (``c_skip(sigma) = sigma_d^2 / (...)`` gives ``c_skip``): the code assigning or returning that
    name computes the equation. Only names written as identifiers (an underscore or camelCase):
    ``L`` or ``loss`` name too many things."""
    out = []
    for clause in _CLAUSE_END_RE.split(text):
        sides = _split_at_equals(clause)
        # the formula ends where prose resumes ("(t-s)/(e-s) be the rescaled timestep")
        rhs = _PROSE_RE.split(sides[1])[0].strip(" ,.:") if len(sides) > 1 else ""
        if not _computes(rhs):
            continue
        m = _DEFINED_RE.search(sides[0])
        if m is None or sides[0][: m.start()].rstrip()[-1:] in tuple("+-−*/^×·(|<>"):
            continue  # "x - v_t(x) = ..." is an identity about v_t, not its definition
        name = m.group(1) + ("_prime" if m.group(2) else "")  # K' is written K_prime in code
        if "_" in name.strip("_") or re.search(r"[a-z][A-Z]", name):
            out.append((name, rhs))
    return list(dict.fromkeys(out))


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
    #: inline math of the prose (``c = a / (a + b^2)``), outside backticks
    math: list[str] = field(default_factory=list)
    #: right-hand sides of the prose's equations that compute something (``a / (a + b^2)``)
    equations: list[str] = field(default_factory=list)
    #: (name, right-hand side) of the equations that define a code-like name (``c_skip``)
    defined: list[tuple[str, str]] = field(default_factory=list)


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
    c.math = math_spans(plain)
    c.equations = equations(plain)
    c.defined = defined_equations(plain)
    c.entities = [e for e in _claim_entities(plain) if e not in c.names]
    c.expected = _expected(sau.get("expected"))
    ntext = _number_text(text)
    c.numbers = [n for n in extract_numbers(ntext) if _is_value(ntext, n)]
    if len(c.numbers) == 1:  # "<what is set> = <value>": the claim is its value's name
        c.numbers = [named_by_its_subject(ntext, c.numbers[0])]
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


#: The analysed claims of the last SAU sets judged, by a digest of what the analysis reads: a batch
#: judges one paper's SAUs for every run (sabench.judges.batch, drift injection), and parsing the
#: claims again for each run was about a sixth of its judging.
_ANALYSED: dict[str, tuple[Claim, ...]] = {}
_ANALYSED_MAX = 64


def analyze_claims(saus: list[dict[str, Any]]) -> tuple[Claim, ...]:
    """Every SAU's claim analysed (:func:`analyze_claim` with the paper's term frequencies), the
    same objects for SAUs judged again: the claims are shared by runs and only read."""
    fields = [
        [
            sau.get("sau_id") or sau.get("id"),
            sau.get("dimension"),
            sau.get("claim"),
            _expected(sau.get("expected")),
        ]
        for sau in saus
    ]
    # the rule parameters the parsing weighs terms with are part of the key: a calibration
    # sweep that changes them in one process parses again
    key = hashlib.sha256(
        json.dumps([RULES, sorted(GENERIC), fields], sort_keys=True, default=str).encode()
    ).hexdigest()
    if key not in _ANALYSED:
        if len(_ANALYSED) >= _ANALYSED_MAX:
            del _ANALYSED[next(iter(_ANALYSED))]
        df = claim_frequencies(saus)
        _ANALYSED[key] = tuple(analyze_claim(sau, df, len(saus)) for sau in saus)
    return _ANALYSED[key]


def claim_frequencies(saus: list[dict[str, Any]]) -> Counter[str]:
    """In how many of the paper's claims each term occurs (a term in every claim says little)."""
    df: Counter[str] = Counter()
    for sau in saus:
        claim = sau.get("claim")
        df.update(set(text_terms(claim if isinstance(claim, str) else "")))
    return df
