"""D1 numbers: each number of the claim with its name is looked up among the code's named values;
the same name set to another value is a drift."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from sabench.index import Fact, Function, identifier_terms
from sabench.judges.static.claims import Claim
from sabench.judges.static.evidence import rounded_value
from sabench.judges.static.outcome import Outcome
from sabench.judges.static.params import RULES
from sabench.values import NumberMention, values_match, words

if TYPE_CHECKING:
    from sabench.judges.static.rules import ClaimJudge

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


def _terms_match(a: str, b: str) -> bool:
    if a == b:
        return True
    if len(a) >= 3 and len(b) >= 3 and (a.startswith(b) or b.startswith(a)):
        return True
    return b in _RELATED_OF.get(a, ())


def _abbrev_match(a: str, b: str) -> bool:
    return a == b or (len(a) >= 3 and len(b) >= 3 and (a.startswith(b) or b.startswith(a)))


def _name_terms(words: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for w in words:
        out.extend(t for t in identifier_terms(w) if t not in ("the", "a", "of"))
    return out


#: head nouns that say what kind of setting a number is, not which: the word before names it
#: ("momentum coefficient 0.9", "dropout rate 0.1")
_HEADS = _VAGUE_NAMES | frozenset(
    words("coefficient coef constant parameter hyperparameter term strength")
)


def _nearest_terms(words: tuple[str, ...]) -> list[str]:
    """The terms of the word right before a number, and the one before it where that word is
    only a head noun (:data:`_HEADS`) and the one before is a single word ("momentum", not
    "LayerNorm": a part of a compound names no setting)."""
    last = _name_terms(words[-1:])
    if last and all(t in _HEADS for t in last):
        before = _name_terms(words[-2:-1])
        if len(before) == 1:
            return before + last
    return last


def judge_numbers(
    judge: ClaimJudge, claim: Claim, cov: float, ev: list[tuple[int, int, int]]
) -> Outcome:
    supports: list[float] = []
    notes: list[str] = []
    conflicts: list[str] = []
    evidence: list[tuple[int, int, int]] = []
    found_values: list[float] = []
    in_stubs: list[Function] = []
    win_lines = {(w[0], ln) for w in ev for ln in range(w[1] - 3, w[2] + 4)}
    matches = [_best_setting(judge, num) for num in claim.numbers]
    # where a named contradiction counts: the files of the claim's best windows, and the
    # sections (file and enclosing section, class or function) that set its other values with
    # their names: the config section that holds the claim's settings
    windows = {e[0] for e in ev}
    sections = {(m[0].file, m[0].context) for m in matches if m[0] is not None}

    def found(num: NumberMention, fact: Fact) -> None:
        judge.value_facts.append(fact)
        supports.append(1.0)
        found_values.append(num.value)
        evidence.append(judge.loc(judge.ctx.fid_of[fact.file], fact.line))

    def contradicted(num: NumberMention, fact: Fact, value: str, setting: str) -> None:
        evidence.insert(0, judge.loc(judge.ctx.fid_of[fact.file], fact.line))
        conflicts.append(f"the paper's {num.text} is {value} ({setting}, {fact.file}:{fact.line})")
        supports.append(0.0)

    for num, (best_fact, match_sim, stubbed) in zip(claim.numbers, matches, strict=True):
        near_terms = _nearest_terms(num.context_words)
        all_terms = _name_terms(num.context_words) + _name_terms(num.after_words)
        if best_fact is None and stubbed is not None:
            fn, fid = stubbed
            in_stubs.append(fn)
            evidence.append(judge.loc(fid, fn.start, fn.end))
            supports.append(0.0)
            notes.append(f"{num.text} only in or for the stub `{fn.name}`")
            continue
        # "β1=0.9" is the first element of `betas=(0.9, 0.999)`, whatever else holds 0.9
        by_position = _positional_settings(judge, num)
        if by_position:
            k = int(near_terms[-1]) - 1
            hit = [f for f in by_position if values_match(num, f.numbers[k])]
            if hit:
                found(num, hit[0])
                continue
            # the claim's tuple (another element holds another of its values) in its scope
            scoped = [
                f
                for f in by_position
                if (judge.ctx.fid_of[f.file] in windows or (f.file, f.context) in sections)
                and any(values_match(o, v) for o in claim.numbers for v in f.numbers)
            ]
            if scoped:
                f = scoped[0]
                contradicted(num, f, f"{f.numbers[k]:g}", f"element {k + 1} of `{f.name}`")
                continue
        # the setting named exactly like the number decides over one that shares a word with it,
        # and a more specific name over one the claim's words cover
        named = _named_conflict(
            judge, num, claim, windows, sections, best_fact if match_sim >= 1 else None
        )
        if best_fact is not None and named is None:
            found(num, best_fact)
            continue
        if named is None and any(values_match(num, v) for v in found_values):
            supports.append(1.0)
            continue
        conflict = named or _conflict(judge, num, near_terms, all_terms)
        if conflict is None and num.after_words:
            conflict = _conflict(judge, num, _name_terms(num.after_words[:1]), all_terms)
        if conflict is not None:
            contradicted(num, conflict, conflict.value.strip(), f"`{conflict.name}`")
            continue
        sites = []
        for cand in num.candidates():
            sites += [
                s
                for s in judge.index.literals.get(rounded_value(cand), ())
                if s[0] in judge.ctx.code_fids
                and not judge.index.is_text(*s)
                and s not in judge.index.directed
            ]
        if sites:
            near = [s for s in sites if s in win_lines]
            small = num.value == int(num.value) and abs(num.value) <= 10
            if near:
                supports.append(0.6)
                evidence.append(judge.loc(*near[0]))
            else:
                supports.append(0.15 if small else 0.3)
                notes.append(f"{num.text} only as a bare literal")
            found_values.append(num.value)
        else:
            supports.append(0.0)
            notes.append(f"{num.text} not found")
    frac = sum(supports) / len(supports)
    absent = sum(1 for x in supports if x == 0.0)  # in no live code at all: evidence, no guess
    judge.features.update(
        num_frac=frac, n_num=len(supports), n_conf=len(conflicts), n_absent=float(absent)
    )
    evidence = list(dict.fromkeys(evidence + ev))[:4]
    if conflicts and frac < 0.999 and sum(1 for s in supports if s >= 1.0) == 0:
        return Outcome(
            "drifted",
            0.0,
            "implementation_mismatch",
            "Value mismatch: " + "; ".join(conflicts[:3]) + ".",
            evidence,
        )
    if in_stubs and not any(x > 0 for x in supports):
        fn = in_stubs[0]
        return Outcome(
            "placeholder",
            0.0,
            "placeholder",
            f"The claim's values are set only in or for `{fn.name}` ({fn.file}:{fn.start}), a stub.",
            evidence,
        )
    s = RULES["number_share"] * frac + (1 - RULES["number_share"]) * cov
    extra = ("Mismatch: " + "; ".join(conflicts[:2]) + ". ") if conflicts else ""
    extra += ("; ".join(notes[:3]) + ".") if notes else ""
    n_ok = sum(1 for x in supports if x >= 1.0)
    if n_ok < len(supports):
        # named things in the code do not vouch for values that are not found with their names
        judge.anchored = judge.fn_anchor = False
    out = judge.by_support(
        s,
        evidence,
        f"{n_ok}/{len(supports)} values found with their names",
        extra,
        verified=n_ok == len(supports) and not conflicts,
    )
    # a value the code sets otherwise is a contradiction, not a gap: each costs a level
    return judge.demote(out, 1) if conflicts else out


def _best_setting(
    judge: ClaimJudge, num: NumberMention
) -> tuple[Fact | None, float, tuple[Function, int] | None]:
    """The setting that holds the number's value under the most similar name (and that
    similarity), or else the stub that is the only place the value is set or goes."""
    all_terms = _name_terms(num.context_words) + _name_terms(num.after_words)
    best_fact, stubbed = None, None
    match_sim = 0.0
    for cand in num.candidates():
        for fact in judge.ctx.facts_by_value.get(rounded_value(cand), []):
            fid = judge.ctx.fid_of.get(fact.file)
            sim = _name_sim(all_terms, fact)
            if fid not in judge.ctx.code_fids or sim <= 0:
                continue
            fn = judge.ctx.function_at(fid, fact.line)
            if fn is None or not fn.stub:
                fn = judge.ctx.flows_into_stub(fact)
                fid = judge.ctx.fid_of[fn.file] if fn is not None else fid
            if fn is not None:
                stubbed = stubbed or (fn, fid)  # its value reaches no computation
                continue
            if sim > match_sim:
                best_fact, match_sim = fact, sim
    return best_fact, match_sim, stubbed


def _refines(terms: list[str], fact: Fact) -> bool:
    """Whether a name of ``terms`` is ``fact``'s name made more specific (``ema_momentum`` of
    ``momentum``): it holds every word of it, and more."""
    base = {t for t in fact.terms if len(t) > 1 and not t.isdigit()}
    words = {t for t in terms if len(t) > 1}
    return bool(base) and base < words


def _positional_settings(judge: ClaimJudge, num: NumberMention) -> list[Fact]:
    """The settings in code that hold the number by position: a number named with a base and an
    index ("β1=0.9", "beta_2 = 0.999") is element 1 or 2 of a tuple or list named with that
    base, plural or not (`betas=(0.9, 0.999)`, `adam_betas: [0.9, 0.95]`)."""
    near = _name_terms(num.context_words[-1:])
    if len(near) < 2 or not near[-1].isdigit() or len(near[-2]) < 3:
        return []
    base, k = near[-2], int(near[-1])
    if not 1 <= k <= 4:
        return []
    return [
        f
        for f in judge.ctx.tuple_settings.get(base, ())
        if len(f.numbers) >= k and judge.ctx.fid_of.get(f.file) in judge.ctx.code_fids
    ]


def _name_sim(claim_terms: list[str], fact: Fact) -> float:
    if not claim_terms:
        return 0.0
    f_terms = [t for t in fact.terms if len(t) > 1 or fact.terms == (t,)]
    if not f_terms:
        return 0.0
    hit = sum(1 for ft in f_terms if any(_terms_match(ft, ct) for ct in claim_terms))
    return hit / len(f_terms)


def _named_conflict(
    judge: ClaimJudge,
    num: NumberMention,
    claim: Claim,
    evidence_fids: set[int],
    sections: set[tuple[str, tuple[str, ...]]],
    refining: Fact | None = None,
) -> Fact | None:
    """A setting named as the claim names the number, set to another value, in a file holding the
    claim's best evidence or in a section that sets the claim's other values with their names (a
    repository sets many things so named: another model's, a baseline's), when no setting so
    named holds the claim's value. In such a section, a setting that holds another of the
    claim's values is that value's (num_frames=121 for "121 frames for 5 s, 241 for 10 s").
    Named as the claim names it:
    every word of its name is among the four words before the number and the three after
    (``DISCOUNT_FACTOR`` for "discount factor γ=0.99", ``IMAGINATION_ENVS`` for "4096 parallel
    imagination environments"); a name of one word must be the word right before or after the
    number and specific (not ``size``, ``rate``). The most specific names decide. When a setting
    named wholly by the claim's words holds the value (``refining``), only names that refine
    its name count (``ema_momentum = 0.09999`` against a ``momentum=0.9999`` default, for
    "ema_momentum=0.9999"), and one holding another of the claim's values is that value's."""
    around = _name_terms(num.context_words[-4:]) + _name_terms(num.after_words[:3])
    nearest = _nearest_terms(num.context_words) + _name_terms(num.after_words[:1])
    named: dict[int, list[Fact]] = {}
    candidates = {f for t in around for f in judge.ctx.settings_by_prefix.get(t[:3], ())}
    for fact in sorted(candidates, key=judge.ctx.settings_order.__getitem__):
        terms = [t for t in fact.terms if not t.isdigit()]
        if not terms:
            continue
        if len(terms) == 1 and (
            terms[0] in _VAGUE_NAMES
            or len(terms[0]) < 4
            or not any(_abbrev_match(terms[0], t) for t in nearest)
        ):
            continue
        if not all(any(_abbrev_match(ft, ct) for ct in around) for ft in terms):
            continue
        if refining is None or _refines(terms, refining):
            named.setdefault(len(terms), []).append(fact)
    for _, facts in sorted(named.items(), reverse=True):
        if any(values_match(num, v) for f in facts for v in f.numbers):
            return None
        for fact in facts:
            another = any(values_match(o, v) for o in claim.numbers for v in fact.numbers)
            if (
                judge.ctx.fid_of.get(fact.file) in evidence_fids and not (refining and another)
            ) or ((fact.file, fact.context) in sections and not another):
                return fact
    return None


def _conflict(
    judge: ClaimJudge, num: NumberMention, near: list[str], claim_terms: list[str]
) -> Fact | None:
    """A configured value named like the claim's number but set to another value
    (``lr = 0.005`` for the paper's 0.05). Conservative: the fact is a setting (assignment,
    config key, CLI/argparse option, default, or a keyword with a compound name), every term
    of its name is in the claim's words, it covers the number's nearest name (the word or
    identifier right before it, or its unit right after), and no fact of that name holds the
    paper's value."""
    if not near:
        return None
    best: Fact | None = None
    for fact in judge.ctx.settings:
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
