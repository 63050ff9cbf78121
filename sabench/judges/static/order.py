"""D4 order: a claim's steps are mapped to calls in the function that runs them (following calls
into the repo); steps out of order are a drift."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import TYPE_CHECKING

from sabench.index import Function, chunk_info, squash
from sabench.index.terms import CHUNK_RE
from sabench.judges.static.claims import Claim, Step, entity_keys
from sabench.judges.static.formulas import code_text
from sabench.judges.static.outcome import Outcome
from sabench.judges.static.params import RULES

if TYPE_CHECKING:
    from sabench.judges.static.rules import ClaimJudge


def judge_order(
    judge: ClaimJudge, claim: Claim, cov: float, ev: list[tuple[int, int, int]]
) -> Outcome | None:
    steps = claim.steps
    step_sites: list[set[tuple[int, int]]] = []
    for st in steps:
        step_sites.append(_step_sites(judge, st))
    scopes = _scopes(judge, step_sites)
    best = None
    for fn in scopes:
        lin = _linearize(judge, fn)
        pos: list[tuple[int, bool, int, int, bool] | None] = []
        after = 0  # a step named twice (``lloyd = Lloyd(...)``, then ``lloyd(X)``) is taken
        for st, sites in zip(steps, step_sites, strict=True):  # after the step before it
            later = _first(judge, lin, st, sites, after)
            pos.append(later if later is not None and later[1] else _first(judge, lin, st, sites))
            after = pos[-1][0] if pos[-1] is not None else after
        n_match = sum(1 for p in pos if p is not None)
        direct = sum(1 for p in pos if p is not None and p[4])
        reachable = fn.name in judge.ctx.reachable or fn.name == "__main__"
        key = (n_match, reachable, direct, -len(lin))
        if best is None or key > best[0]:
            best = (key, fn, pos)
    if best is None or best[0][0] == 0:
        found = sum(1 for s in step_sites if s) / len(steps)
        judge.features.update(step_frac=found, n_steps=len(steps))
        share = _step_share(steps)
        return judge.by_support(
            share * found + (1 - share) * cov,
            ev,
            f"{sum(1 for s in step_sites if s)}/{len(steps)} steps found",
        )
    _, fn, pos = best
    evidence = [judge.loc(p[2], p[3]) for p in pos if p is not None]
    evidence = list(dict.fromkeys(evidence + ev))[:5]
    strong = [(i, p) for i, p in enumerate(pos) if p is not None and p[1]]
    for a in range(len(strong)):
        for b in range(a + 1, len(strong)):
            ia, pa = strong[a]
            ib, pb = strong[b]
            if pa[0] > pb[0]:
                cited = [judge.loc(pb[2], pb[3]), judge.loc(pa[2], pa[3])]
                return Outcome(  # the two steps the reasoning names come first: shown, lit
                    "drifted",
                    0.0,
                    "implementation_mismatch",
                    f"Steps out of order in `{fn.qualname}`: '{steps[ib].text}' "
                    f"({judge.where(pb[2], pb[3])}) runs before '{steps[ia].text}' "
                    f"({judge.where(pa[2], pa[3])}).",
                    list(dict.fromkeys(cited + evidence))[:5],
                )
    n_match = sum(1 for p in pos if p is not None)
    keyed_missing = [st.text for st, p in zip(steps, pos, strict=True) if p is None and st.keys]
    weak_order = [p[0] for p in pos if p is not None]
    in_order = weak_order == sorted(weak_order)
    frac = n_match / len(steps)
    judge.features.update(step_frac=frac, n_steps=len(steps))
    msg = f"{n_match}/{len(steps)} steps found in order in `{fn.qualname}`"
    if not in_order:
        msg = f"{n_match}/{len(steps)} steps found in `{fn.qualname}`, loosely matched ones out of order"
    keyed = [st for st in steps if st.keys]
    strong_all = all(p is not None and p[1] for p in pos)
    verified = in_order and not keyed_missing and (strong_all or (bool(keyed) and frac >= 0.66))
    extra = f"Not found: {', '.join(keyed_missing[:3])}." if keyed_missing else ""
    if keyed_missing:  # a named step the pipeline lacks is not vouched for by its name elsewhere
        judge.anchored = judge.fn_anchor = False
    share = _step_share(steps)
    return judge.by_support(
        share * frac + (1 - share) * cov, evidence, msg, extra, verified=verified
    )


def _step_share(steps: list[Step]) -> float:
    """Weight of the found-steps fraction in the support: prose steps are matched loosely
    (on SA-Bench their fraction ranks claims worse than term coverage), named ones exactly."""
    return RULES["step_share"] if any(st.keys for st in steps) else 0.0


def _step_sites(judge: ClaimJudge, st: Step) -> set[tuple[int, int]]:
    sites: set[tuple[int, int]] = set()
    for k in st.keys:
        sites.update(
            s
            for s in judge.ctx.key(k).sites
            if s[0] in judge.ctx.code_fids and _in_code(judge, s, entity_keys(k))
        )
    if sites or not st.terms:
        return sites
    total = sum(st.terms.values()) or 1.0
    acc: dict[tuple[int, int], float] = defaultdict(float)
    for t, w in st.terms.items():
        p = judge.ctx.term(t)
        if len(p.sites) > 400:
            continue
        for s in p.sites:
            if s[0] in judge.ctx.code_fids and not judge.index.is_text(*s):
                acc[s] += w
    found = {s for s, v in acc.items() if v / total >= 0.5 or (v >= 2 and v / total >= 0.34)}
    if st.keys:  # a named step's words in a string ("generate" in a list of names) are no call
        found = {s for s in found if _code_terms(judge, s) & set(st.terms)}
    return found


def _code_terms(judge: ClaimJudge, site: tuple[int, int]) -> set[str]:
    text = code_text(judge.index.files[site[0]].lines[site[1] - 1])
    return {t for c in CHUNK_RE.findall(text) for t in chunk_info(c)[0]}


def _scopes(judge: ClaimJudge, step_sites: list[set[tuple[int, int]]]) -> list[Function]:
    """Where the steps may run in order: functions (and ``__main__`` blocks) that directly
    contain a step, and the functions that call those."""
    count: Counter[int] = Counter()
    mains: set[int] = set()
    main_scopes = judge.ctx.main_scopes
    for sites in step_sites:
        seen: set[int] = set()
        for fid, ln in sites:
            arr = judge.ctx.func_at.get(fid)
            fi = arr[ln] if arr is not None and ln < len(arr) else -1
            if fi >= 0:
                if fi not in seen:  # each step counts once per function
                    seen.add(fi)
                    count[fi] += 1
                continue
            path = judge.index.files[fid].path
            for mi, m in enumerate(main_scopes):
                if m.file == path and m.start <= ln <= m.end:
                    mains.add(mi)
    callers = judge.ctx.callers
    scored: Counter[int] = Counter(count)
    for fi in list(count):
        for caller in callers.get(judge.index.functions[fi].name, ()):
            scored[caller] += count[fi]
    called = {judge.index.functions[fi].name for fi in scored}
    for mi, m in enumerate(main_scopes):
        if any(c in called for c, _ in m.calls):
            mains.add(mi)
    ranked = [judge.index.functions[fi] for fi, _ in scored.most_common(12)]
    return ranked + [main_scopes[mi] for mi in sorted(mains)]


def _linearize(
    judge: ClaimJudge, fn: Function, depth: int = 0, seen: set[int] | None = None
) -> list[tuple[str, int, int, str, bool]]:
    """The function's body lines and calls in order, with calls into the repo expanded (depth 2).

    Items: (kind "line"/"call", file id, line, callee name, direct)."""
    seen = seen if seen is not None else {id(fn)}
    fid = judge.ctx.fid_of.get(fn.file)
    if fid is None:
        return []
    calls: dict[int, list[str]] = defaultdict(list)
    for name, ln in fn.calls:
        calls[ln].append(name)
    out: list[tuple[str, int, int, str, bool]] = []
    direct = depth == 0
    for ln in range(max(fn.body_start, fn.start + 1), fn.end + 1):
        if judge.index.is_text(fid, ln):
            continue
        out.append(("line", fid, ln, "", direct))
        for callee in calls.get(ln, ()):
            out.append(("call", fid, ln, callee, direct))
            if depth < 2:
                target = _resolve(judge, callee, fn.file)
                if target is not None and id(target) not in seen and not target.stub:
                    seen.add(id(target))
                    out.extend(_linearize(judge, target, depth + 1, seen))
    return out


def _resolve(judge: ClaimJudge, callee: str, file: str) -> Function | None:
    fns = judge.ctx.by_name.get(callee)
    if not fns:
        return None
    same = [f for f in fns if f.file == file]
    return (same or fns)[0]


def _first(
    judge: ClaimJudge,
    lin: list[tuple[str, int, int, str, bool]],
    st: Step,
    sites: set[tuple[int, int]],
    start: int = 0,
) -> tuple[int, bool, int, int, bool] | None:
    """Position of a step in a linearised scope, from ``start`` on: a call named like the step's
    key (strong), else the first line that matches it."""
    keys = [k for key in st.keys for k in entity_keys(key)]
    first_line = None
    for i, (kind, fid, ln, callee, direct) in enumerate(lin[start:], start):
        if kind == "call" and keys:
            ckeys = set(chunk_info(callee)[1]) | {squash(callee)}
            if any(k in ckeys for k in keys):
                return (i, True, fid, ln, direct)
        elif kind == "line" and first_line is None and (fid, ln) in sites:
            first_line = (i, bool(keys) and _is_call_line(judge, fid, ln, keys), fid, ln, direct)
    if first_line is not None and not keys:
        # a prose step: strong only when a call on that line is named by its terms
        i, _, fid, ln, direct = first_line
        return (i, False, fid, ln, direct)
    return first_line


def _in_code(judge: ClaimJudge, site: tuple[int, int], keys: list[str]) -> bool:
    """The step's name is on the line as code: not in a comment, a string or an unread list."""
    fid, ln = site
    if judge.index.is_text(fid, ln):
        return False
    text = code_text(judge.index.files[fid].lines[ln - 1])
    return any(
        k in chunk_info(c)[1] or squash(c) == k for c in CHUNK_RE.findall(text) for k in keys
    )


def _is_call_line(judge: ClaimJudge, fid: int, ln: int, keys: list[str]) -> bool:
    text = judge.index.files[fid].lines[ln - 1]
    for m in re.finditer(r"([A-Za-z_]\w*)\s*\(", text):
        ck = set(chunk_info(m.group(1))[1])
        if any(k in ck for k in keys):
            return True
    return False
