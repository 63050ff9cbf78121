"""What the ``llm:<model>`` judge is shown of a repository per SAU: the static judge's retrieval
(its verdict's evidence, term windows, the settings holding the claim's numbers), the run's core
definitions and further windows where the claim's words meet, rendered as numbered excerpts within
a line budget (:class:`Retriever`)."""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from sabench.index import CONFIG, CodeIndex
from sabench.judges.static import (
    GENERIC,
    Claim,
    ClaimJudge,
    SubmissionContext,
    analyze_claims,
    rounded_value,
)
from sabench.values import extract_numbers

#: How much a filling window's odds of being a claim's evidence rise (in units of the log of its
#: rank among the claim's windows) where it sits in a config file, in a file's opening lines (its
#: docstring), on a ``def``/``class`` line, at one of the claim's numbers, in a comment or docstring,
#: outside any function; ``file_rank`` lowers them by the log of its file's rank (the file of the
#: claim's best window first). Fitted on the 10 even SA-Bench papers, checked on the 10 odd ones.
FILL_PRIORS: dict[str, float] = {
    "file_rank": 0.5,
    "config": 0.5,
    "file_top": 0.7,
    "definition": 0.8,
    "number": 0.9,
    "comment": 0.3,
    "outside": 0.6,
}
#: The retrieval's settings (part of the llm judge's settings, ``JUDGE_DEFAULTS``).
RETRIEVAL_DEFAULTS: dict[str, Any] = {
    "max_evidence_lines": 420,  # excerpt lines per SAU (the prompt's main cost)
    "context_lines": 3,  # lines around each retrieved hit
    "function_lines": 20,  # a hit inside a function this short shows the whole function
    "max_settings": 12,  # named settings listed per SAU
    "static_windows": 3,  # the static judge's best term windows shown before the core
    "fill_window": 6,  # lines per extra window that fills the rest of the budget
    "fill_offset": 1,  # a filling window starts this many lines below fill_window/2 above its centre
    "fill_max": 400,  # extra windows considered per SAU
    "fill_term_cap": 0.05,  # terms on more than this share of the code's lines say little
    "fill_name_weight": 3.0,  # weight of an identifier the claim spells out (``hat_alpha``)
    "fill_repeat": 0.1,  # weight of a term's repeats in a window (distinct terms count 1)
    "fill_number_weight": 2.0,  # weight of a number of the claim where the code has it (``512``)
    "fill_number_text": True,  # the number also where a comment, string or config says it
    "fill_ref_weight": 3.0,  # weight of a paper part the claim cites, where the code cites it
    "fill_def_weight": 2.0,  # factor for claim words on a ``def``/``class`` line
    "fill_priors": dict(FILL_PRIORS),  # what moves a filling window up (Retriever._rerank)
    "core_n": 30,  # definition headers of the run's core every SAU is shown (Retriever._core)
    "core_top": 20,  # each claim's best windows that vote for the core
    "header_lines": 4,  # lines of a core definition shown (its ``def``/``class`` line on)
}
#: Identifiers spelled out in a claim's prose: snake_case or camelCase words.
_IDENT_RE = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b|\b[a-z]+[A-Z][A-Za-z0-9]*\b")
#: A line that defines a function or class (Python, JS/TS, Julia, R-ish, shell functions).
_DEF_RE = re.compile(r"\s*(?:async\s+)?(?:def|class|function)\s+\w")
#: A citation of a part of the paper: ``Section 3.2``, ``Eq. (4)``, ``Table 2``, ``Appendix B.1``.
_REF_RE = re.compile(
    r"\b(sec(?:tion)?s?|eq(?:uation|n)?s?|tab(?:le)?s?|fig(?:ure)?s?|appendix|app|alg(?:orithm)?s?)"
    r"\.?\s*\(?\s*([A-Z](?:\.\d+)*|[A-Z]?\d+(?:\.\d+)*)\b|§\s*(\d+(?:\.\d+)*)",
    re.I,
)
#: What an excerpt shows instead of a line whose text addresses the judge (sabench.index.directed).
WITHHELD = "[line withheld: text addressed to the judge is not evidence]"


@dataclass
class Excerpt:
    path: str
    start: int
    end: int
    lines: list[str]
    #: its lines that nothing in the repository runs (``sabench.index.CodeIndex.dead``), as
    #: ranges ("12-30, 41") or "all"; empty when every line may run
    never_run: str = ""


@dataclass
class EvidenceBundle:
    """What one SAU's prompt shows of the repository."""

    excerpts: list[Excerpt] = field(default_factory=list)
    settings: list[tuple[str, int, str]] = field(default_factory=list)  # path, line, text
    #: path -> shown line numbers (evidence references must land on them)
    shown: dict[str, set[int]] = field(default_factory=dict)

    @property
    def n_lines(self) -> int:
        return sum(len(e.lines) for e in self.excerpts)

    def contains(self, path: str, start: int, end: int) -> bool:
        lines = self.shown.get(path)
        return bool(lines) and any(ln in lines for ln in range(start, end + 1))


class Retriever:
    """Per SAU, the ranked spans the static judge's search finds (its verdict's evidence, the best
    term windows, the settings that hold the claim's numbers, the lines naming its identifiers),
    padded and widened to small functions, then the run's core definitions (:meth:`_core`), then
    further windows where the claim's words meet (:meth:`_windows`), merged, and cut at
    ``max_evidence_lines``."""

    def __init__(
        self,
        index: CodeIndex,
        saus: list[dict[str, Any]],
        execution: dict[str, Any] | None = None,
        **options: Any,
    ) -> None:
        self.index = index
        self.opt = {**RETRIEVAL_DEFAULTS, **options}
        self.ctx = SubmissionContext(index)
        self.judge = ClaimJudge(self.ctx, execution)
        self._n_lines = sum(len(index.files[f].lines) for f in self.ctx.code_fids) or 1
        self._claims = {c.sau_id: c for c in analyze_claims(saus)}
        self._window_cache: dict[str, list[tuple[float, int, int]]] = {}
        self._core_cache: list[tuple[int, int, int]] | None = None
        self._said: dict[float, list[tuple[int, int]]] | None = None
        self._cites: dict[str, list[tuple[int, int]]] | None = None

    def claim(self, sau: dict[str, Any]) -> Claim:
        """The SAU's parsed claim (one of the retriever's SAUs)."""
        return self._claims[str(sau.get("sau_id") or sau.get("id") or "")]

    def _claim_windows(self, claim: Any) -> list[tuple[float, int, int]]:
        """:meth:`_windows`, once per claim text (the core and the claim's own filling use them)."""
        key = claim.text
        got = self._window_cache.get(key)
        if got is None:
            got = self._window_cache[key] = self._windows(claim)
        return got

    def _core(self) -> list[tuple[int, int, int]]:
        """The run's core, shown to every SAU: the headers (``header_lines`` from the ``def`` line,
        and the ``class`` line of a method) of the ``core_n`` definitions that hold the most claims'
        ``core_top`` best windows. The code a paper's claims share (its model class, loss, training
        loop, config class) is the evidence also for a claim whose words it lacks: where the
        claim's value or step would be, and is not."""
        if self._core_cache is not None:
            return self._core_cache
        ctx = self.ctx
        top = int(self.opt["core_top"])
        votes: Counter[tuple[int, int]] = Counter()
        ends: dict[tuple[int, int], int] = {}
        for claim in self._claims.values():
            hit: set[tuple[int, int]] = set()
            for _, fid, ln in self._claim_windows(claim)[:top]:
                fn = ctx.function_at(fid, ln) or ctx.function_at(fid, ln + 1)
                if fn is None:
                    continue
                for start in (fn.start, ctx.class_line(fn)):
                    if start is not None:
                        hit.add((fid, start))
                        ends[(fid, start)] = max(ends.get((fid, start), 0), fn.end)
            votes.update(hit)
        n = int(self.opt["header_lines"])
        ranked = sorted(votes.items(), key=lambda kv: (-kv[1], kv[0]))[: int(self.opt["core_n"])]
        self._core_cache = [(fid, st, min(st + n - 1, ends[(fid, st)])) for (fid, st), _ in ranked]
        return self._core_cache

    def _spans(self, sau: dict[str, Any]) -> tuple[list[tuple[int, int, int, bool]], list[Any]]:
        """Ranked spans (file id, start, end, widen to the enclosing small function) and the named
        settings, most specific first."""
        ctx = self.ctx
        claim = self.claim(sau)
        spans: list[tuple[int, int, int, bool]] = []
        try:
            outcome = self.judge.judge(claim)
            spans.extend((f, a, b, True) for f, a, b in outcome.evidence)
        except Exception:  # retrieval must not fail a judgment; the windows still work
            pass
        windows = ctx.windows(claim.terms)
        spans.extend((w.fid, w.start, w.end, True) for w in windows[:3])
        # settings holding the claim's numbers, whatever their names
        facts = []
        for num in claim.numbers:
            for cand in num.candidates():
                for fact in ctx.facts_by_value.get(rounded_value(cand), [])[:4]:
                    fid = ctx.fid_of.get(fact.file)
                    if fid in ctx.code_fids:
                        spans.append((fid, fact.line, fact.line, True))
                        facts.append(fact)
        # the lines that name the claim's identifiers and entities (first code sites)
        for name in [*claim.names, *claim.entities][:6]:
            for fid, ln in sorted(s for s in ctx.key(name).sites if s[0] in ctx.code_fids)[:2]:
                spans.append((fid, ln, ln, True))
        spans.extend(
            (w.fid, w.start, w.end, True) for w in windows[3 : int(self.opt["static_windows"])]
        )
        # named settings whose words fit the claim (config keys, argparse options, constants)
        words = {t for t in claim.terms if t not in GENERIC}
        ranked = []
        for fact in ctx.settings:
            overlap = len(words.intersection(fact.terms))
            if overlap:
                ranked.append((-overlap, fact.file, fact.line, fact))
        ranked.sort(key=lambda r: r[:3])
        settings = list(dict.fromkeys([*facts, *(r[3] for r in ranked)]))
        core = [(fid, a, b, False) for fid, a, b in self._core()]
        fill = [(fid, a, b, False) for fid, a, b in self._fill(claim)]
        return spans + core + fill, settings

    def _windows(self, claim: Any) -> list[tuple[float, int, int]]:
        """(score, file id, centre line) of every window where the claim's words meet, best first:
        each code, config, comment or docstring line scores the idf-weighted claim terms it holds
        (identifiers written in the claim, ``hat_alpha``, count as names; its numbers count where
        the code has them as literals; terms on a ``def``/``class`` line weigh ``fill_def_weight``);
        a window (``fill_window`` lines) scores its distinct terms, repeats only by ``fill_repeat``."""
        ctx = self.ctx
        n_lines = self._n_lines
        cap = float(self.opt["fill_term_cap"]) * n_lines + 50
        postings: list[tuple[float, list[tuple[int, int, float]]]] = []
        for t, w in claim.terms.items():
            postings.append((w, ctx.term(t).hits))
        for ident in dict.fromkeys(_IDENT_RE.findall(claim.text)):
            hits = [(f, ln, 1.0) for f, ln in ctx.key(ident).sites if f in ctx.code_fids]
            postings.append((float(self.opt["fill_name_weight"]), hits))
        # the claim's numbers: literals in code and config, integers also where a comment says them
        nw = float(self.opt["fill_number_weight"])
        if nw > 0:
            for sites in self._number_sites(claim):
                postings.append((nw, [(f, ln, 1.0) for f, ln in sites]))
        rw = float(self.opt["fill_ref_weight"])
        if rw > 0:
            cited = self._cited()
            for key in dict.fromkeys(_ref_keys(claim.text)):
                postings.append((rw, [(f, ln, 1.0) for f, ln in cited.get(key, ())]))
        line_terms: dict[tuple[int, int], dict[int, float]] = defaultdict(dict)
        for i, (w, hits) in enumerate(postings):
            if not hits or len(hits) > cap:
                continue
            idf = math.log((n_lines + 1) / (len(hits) + 1))
            for fid, ln, credit in hits:
                value = w * idf * max(credit, 0.5)
                terms_here = line_terms[(fid, ln)]
                terms_here[i] = max(terms_here.get(i, 0.0), value)
        # a line that defines a function or class with the claim's words names what follows
        dw = float(self.opt["fill_def_weight"])
        if dw != 1.0:
            files = self.index.files
            for (fid, ln), terms_here in line_terms.items():
                if _DEF_RE.match(files[fid].lines[ln - 1]):
                    for i in terms_here:
                        terms_here[i] *= dw
        half = int(self.opt["fill_window"]) // 2
        rep = float(self.opt["fill_repeat"])
        scored = []
        for fid, ln in line_terms:
            # distinct terms count fully, repeats of a term only by ``fill_repeat``
            best: dict[int, float] = {}
            total = 0.0
            for k in range(ln - half + 1, ln + half + 1):
                for i, value in line_terms.get((fid, k), {}).items():
                    if i in best:
                        total += rep * value
                    else:
                        best[i] = value
            total += sum(best.values())
            scored.append((total, fid, ln))
        scored.sort(key=lambda x: (-x[0], x[1], x[2]))
        return scored

    def _number_sites(self, claim: Any) -> list[dict[tuple[int, int], None]]:
        """Per number of the claim, the code and config lines that hold it: literals, integers a
        comment writes and, with ``fill_number_text``, any mention of the value."""
        ctx = self.ctx
        out = []
        for num in claim.numbers:
            sites: dict[tuple[int, int], None] = {}
            for cand in num.candidates():
                for site in self.index.literals.get(rounded_value(cand), ()):
                    sites[site] = None
                if math.isfinite(cand) and cand == int(cand) and abs(cand) >= 10:
                    for site in self.index.chunk_sites.get(str(int(cand)), ()):
                        if site[0] in ctx.code_fids:
                            sites[site] = None
                if self.opt["fill_number_text"]:
                    for site in self._said_numbers().get(rounded_value(cand), ()):
                        sites[site] = None
            out.append(sites)
        return out

    def _cited(self) -> dict[str, list[tuple[int, int]]]:
        """The paper's sections, equations, tables, figures and algorithms that the code's lines
        cite (``# Eq. (4)``, ``Implements Section 3.3``), by :func:`_ref_keys`."""
        if self._cites is None:
            found: dict[str, list[tuple[int, int]]] = defaultdict(list)
            directed = self.index.directed
            for fid in sorted(self.ctx.code_fids):
                for ln, text in enumerate(self.index.files[fid].lines, start=1):
                    if (fid, ln) in directed or not any(c.isdigit() for c in text):
                        continue
                    for key in dict.fromkeys(_ref_keys(text)):
                        found[key].append((fid, ln))
            self._cites = dict(found)
        return self._cites

    def _said_numbers(self) -> dict[float, list[tuple[int, int]]]:
        """Every number written on a code or config line (comments, docstrings and strings too), by
        value: where the code says a claim's value in words, ``# beta1 0.9 as in the paper``."""
        if self._said is None:
            said: dict[float, list[tuple[int, int]]] = defaultdict(list)
            directed = self.index.directed
            for fid in sorted(self.ctx.code_fids):
                for ln, text in enumerate(self.index.files[fid].lines, start=1):
                    if not any(c.isdigit() for c in text) or (fid, ln) in directed:
                        continue
                    for v in {
                        rounded_value(c) for m in extract_numbers(text) for c in m.candidates()
                    }:
                        said[v].append((fid, ln))
            self._said = dict(said)
        return self._said

    def _fill(self, claim: Any) -> list[tuple[int, int, int]]:
        """More windows for what is left of the budget, in :meth:`_rerank`'s order, not
        overlapping: each from ``fill_window // 2 - 1 - fill_offset`` lines above its centre
        (SA-Bench's evidence runs from two lines above its hit to five below)."""
        before = int(self.opt["fill_window"]) // 2 - 1 - int(self.opt["fill_offset"])
        size = int(self.opt["fill_window"])
        windows = [
            (fid, ln) for _, fid, ln in self._claim_windows(claim)[: int(self.opt["fill_max"])]
        ]
        if self.opt["fill_priors"]:
            windows = self._rerank(claim, windows)
        out: list[tuple[int, int, int]] = []
        taken: set[tuple[int, int]] = set()
        for fid, ln in windows:
            if (fid, ln) in taken:
                continue
            out.append((fid, max(1, ln - before), ln - before + size - 1))
            taken.update((fid, k) for k in range(ln - before, ln - before + size))
        return out

    def _rerank(self, claim: Any, windows: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """The claim's windows (file id, centre line), best first, in the order of their odds of
        being the claim's evidence: by the log of their rank, less ``fill_priors`` where they sit
        in a config file, in a file's first 12 lines, on a ``def``/``class`` line, at a number of
        the claim, in a comment or docstring, outside any function, plus ``file_rank`` times the
        log of their file's rank. What SA-Bench's judge cites is there more often than the words
        alone say: settings blocks, module docstrings that restate the paper, definitions."""
        pri = {**FILL_PRIORS, **self.opt["fill_priors"]}
        files = self.index.files
        numbers: set[tuple[int, int]] = set()
        for sites in self._number_sites(claim):
            numbers.update(sites)
        before = int(self.opt["fill_window"]) // 2 - 1 - int(self.opt["fill_offset"])
        size = int(self.opt["fill_window"])
        file_rank: dict[int, int] = {}
        keyed = []
        for rank, (fid, ln) in enumerate(windows):
            file_rank.setdefault(fid, len(file_rank))
            lines = files[fid].lines
            span = range(max(1, ln - before), min(ln - before + size - 1, len(lines)) + 1)
            key = math.log1p(rank) + pri["file_rank"] * math.log1p(file_rank[fid])
            if files[fid].kind == CONFIG:
                key -= pri["config"]
            if ln - before <= 12:
                key -= pri["file_top"]
            if any(_DEF_RE.match(lines[k - 1]) for k in span):
                key -= pri["definition"]
            if any((fid, k) in numbers for k in span):
                key -= pri["number"]
            if self.index.is_comment(fid, ln):
                key -= pri["comment"]
            if self.ctx.function_at(fid, ln) is None:
                key -= pri["outside"]
            keyed.append((key, rank, fid, ln))
        keyed.sort()
        return [(fid, ln) for _, _, fid, ln in keyed]

    def retrieve(self, sau: dict[str, Any]) -> EvidenceBundle:
        index, opt = self.index, self.opt
        spans, facts = self._spans(sau)
        pad, fn_max = int(opt["context_lines"]), int(opt["function_lines"])
        budget = int(opt["max_evidence_lines"])
        chosen: dict[int, list[tuple[int, int]]] = {}
        order: list[int] = []
        used = 0
        for fid, start, end, widen in spans:
            n = len(index.files[fid].lines)
            if n == 0:
                continue
            fn = self.ctx.function_at(fid, start) if widen else None
            if fn is not None and fn.end - fn.start + 1 <= fn_max and fn.end >= end:
                lo, hi = fn.start, fn.end
            elif widen:
                lo, hi = start - pad, end + pad
            else:
                lo, hi = start, end
            lo, hi = max(1, lo), min(n, hi, max(lo, start - pad) + 60)
            ranges = chosen.setdefault(fid, [])
            new = set(range(lo, hi + 1)) - {ln for a, b in ranges for ln in range(a, b + 1)}
            if not new:
                continue
            if used + len(new) > budget:
                if used >= budget or len(new) > (budget - used) * 2:
                    continue
                # a partial fit: keep the hit and what context the budget allows
                room = budget - used
                lo = max(lo, start - room // 3)
                hi = min(hi, lo + room - 1)
                new = set(range(lo, hi + 1)) - {ln for a, b in ranges for ln in range(a, b + 1)}
            ranges.append((lo, hi))
            used += len(new)
            if fid not in order:
                order.append(fid)
        bundle = EvidenceBundle()
        for fid in order:
            f = index.files[fid]
            merged: list[list[int]] = []
            for a, b in sorted(chosen[fid]):
                if merged and a <= merged[-1][1] + 2:
                    merged[-1][1] = max(merged[-1][1], b)
                else:
                    merged.append([a, b])
            for a, b in merged:
                # text addressed to the judge is withheld: visibly, and never citable
                lines = [
                    WITHHELD if (fid, ln) in index.directed else text
                    for ln, text in enumerate(f.lines[a - 1 : b], start=a)
                ]
                dead = [ln for ln in range(a, b + 1) if (fid, ln) in index.dead]
                never_run = "all" if len(dead) == b - a + 1 else _ranges(dead)
                bundle.excerpts.append(Excerpt(f.path, a, b, lines, never_run))
                bundle.shown.setdefault(f.path, set()).update(
                    ln for ln in range(a, b + 1) if (fid, ln) not in index.directed
                )
        seen: set[tuple[str, int]] = set()
        for fact in facts:
            fid = self.ctx.fid_of.get(fact.file)
            if fid is None or (fact.file, fact.line) in seen or (fid, fact.line) in index.directed:
                continue
            if len(seen) >= int(opt["max_settings"]):
                break
            seen.add((fact.file, fact.line))
            text = index.files[fid].lines[fact.line - 1].strip()[:160]
            bundle.settings.append((fact.file, fact.line, text))
            bundle.shown.setdefault(fact.file, set()).add(fact.line)
        return bundle


def _ranges(lines: list[int]) -> str:
    """Sorted line numbers as ranges: ``[3, 4, 5, 9]`` -> ``"3-5, 9"``."""
    out: list[list[int]] = []
    for ln in lines:
        if out and ln == out[-1][1] + 1:
            out[-1][1] = ln
        else:
            out.append([ln, ln])
    return ", ".join(f"{a}-{b}" if b > a else str(a) for a, b in out)


def _ref_keys(text: str) -> list[str]:
    """The paper parts ``text`` cites, as ``kind number`` keys: ``Eq. (4)`` -> ``eq 4``,
    ``Section 3.2`` and ``§3.2`` -> ``sec 3.2``, ``Appendix B.1`` -> ``app b.1``."""
    out = []
    for m in _REF_RE.finditer(text):
        if m.group(3):
            out.append(f"sec {m.group(3)}")
        else:
            kind = m.group(1).lower()
            kind = "eq" if kind.startswith("eq") else kind[:3]
            out.append(f"{kind} {m.group(2).lower()}")
    return out
