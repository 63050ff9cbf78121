"""The rules' core: term coverage, the verdict bands, the omission/docs-only/stub checks, and the
dispatch of each claim to its dimension's rule (one module each)."""

from __future__ import annotations

import bisect
import re
from functools import cached_property
from typing import Any

from sabench.index import DOCS, TESTS, Fact, Function, squash
from sabench.judges.fabrication import Finding, literal_writes
from sabench.judges.static.claims import Claim, entity_keys
from sabench.judges.static.evidence import SubmissionContext, Window
from sabench.judges.static.formulas import inverted_factor, inverted_operation, judge_formulas
from sabench.judges.static.numbers import judge_numbers
from sabench.judges.static.order import judge_order
from sabench.judges.static.outcome import Outcome
from sabench.judges.static.params import BANDS, RULES
from sabench.judges.static.protocol import judge_protocol
from sabench.judges.static.results import judge_results


def _names_function(name: str, fname: str) -> bool:
    """``k-means++`` names ``kmeans_plusplus_init``: the name is most of the function's name."""
    f = squash(fname)
    return any(len(k) >= 4 and k in f and len(k) >= 0.6 * len(f) for k in entity_keys(name))


class ClaimJudge:
    """Judges one submission's claims. The dimension rules are functions of their own modules that
    read and set its per-claim state (coverage, anchors, features) and verdict via :meth:`by_support`."""

    def __init__(self, ctx: SubmissionContext, execution: dict[str, Any] | None) -> None:
        self.ctx = ctx
        self.index = ctx.index
        self.execution = execution
        self.anchored = self.fn_anchor = False
        self.dim = ""
        self.cov = 0.0
        self.wins: list[Window] = []
        #: the arithmetic operations of each function, by (file, first line): see formulas.py
        self.operations_of: dict[tuple[str, int], list[Any]] = {}
        self.features: dict[str, float] = {}
        #: for a value claim, the stub that computes the claim, as (why, evidence)
        self.value_stub: tuple[str, list[tuple[int, int, int]]] | None = None
        #: the best window is a stub, a real one nearly as good (_stub_window): a level less
        self.stub_best: tuple[str, list[tuple[int, int, int]]] | None = None
        #: for a value claim, the settings that hold its values with their names
        self.value_facts: list[Fact] = []

    @cached_property
    def literal_writes(self) -> list[Finding]:
        """The metrics the submission writes as literals: scanned once, not once per claim."""
        return literal_writes(self.index.root)

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
        self.value_stub = self.stub_best = None
        self.value_facts = []
        o = self._by_rules(claim)
        if self.value_facts and all(map(self._unread, self.value_facts)):
            # values set where nothing reads them: a stub about the claim is where they would go
            self._near_stub(claim, RULES["near_stub_share"])
        found = self.value_stub or self.stub_best
        if found is not None and o.verdict in ("aligned", "partial"):
            # the values are set, or a window nearly as good is real, but the code that computes
            # the claim is a stub
            why, evidence = found
            o = self.demote(o, int(RULES["value_stub_levels"]) if self.value_stub else 1)
            o.reasoning = f"{why} {o.reasoning}"
            o.evidence = [*evidence, *o.evidence][:4]
            if o.verdict == "drifted":  # nothing left: the failure is the stub's
                o = Outcome("placeholder", 0.0, "placeholder", o.reasoning, o.evidence)
        if claim.equations and o.verdict in ("aligned", "partial"):
            inverted = inverted_operation(self, claim, self.wins) or inverted_factor(
                self, claim, self.wins
            )
            if inverted is not None:
                why, loc = inverted
                o = self.demote(o, 1)
                o.reasoning = f"{why} {o.reasoning}"
                o.evidence = [loc, *o.evidence][:4]
        return o

    def _by_rules(self, claim: Claim) -> Outcome:
        self.dim = claim.dimension
        self.anchored = self.fn_anchor = False
        cov, docs_cov, wins = self.coverage(claim.terms)
        self.cov, self.wins = cov, wins
        ev = [self.loc(w.fid, w.start, w.end) for w in wins[:2]]

        if claim.expected:
            out = judge_results(self, claim, ev)
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
            return judge_numbers(self, claim, cov, ev)
        if claim.formulas:
            out = judge_formulas(self, claim, cov, ev)
            if out is not None:
                return out
        if claim.steps:
            out = judge_order(self, claim, cov, ev)
            if out is not None:
                return out
        if claim.dimension == "D3" or claim.entities:
            return judge_protocol(self, claim, cov, ev)
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

    def demote(self, o: Outcome, levels: int) -> Outcome:
        """The outcome ``levels`` steps lower on SA-Bench's scale (a contradiction found beside
        the support): aligned -> .75 -> ... -> drifted at 0."""
        score = o.score if o.verdict == "partial" else (1.0 if o.verdict == "aligned" else 0.0)
        score = max(0.0, score - 0.25 * levels)
        self.features["demoted"] = self.features.get("demoted", 0.0) + levels
        if score <= 0.0:
            return Outcome("drifted", 0.0, "implementation_mismatch", o.reasoning, o.evidence)
        out = Outcome("partial", score, None, o.reasoning, o.evidence)
        out.support = o.support
        return out

    def doc_evidence(self, claim: Claim) -> tuple[int, int, int] | None:
        for t in sorted(claim.terms, key=lambda x: -claim.terms[x]):
            for fid, ln in self.ctx.term(t).sites:
                if self.index.files[fid].kind in (DOCS, TESTS):
                    return self.loc(fid, ln)
        return None

    # --- stubs --------------------------------------------------------------------------
    def _share(self, terms: frozenset[str], claim: Claim) -> float:
        """Share of the claim's weighted terms in ``terms``; 0 unless one of them is specific
        (not a word of every claim)."""
        hit = [t for t in claim.terms if t in terms]
        if not any(claim.terms[t] > RULES["generic_weight"] for t in hit):
            return 0.0
        return sum(claim.terms[t] for t in hit) / (sum(claim.terms.values()) or 1.0)

    def _about_claim(self, fn: Function, claim: Claim) -> bool:
        """Whether a function's name and docstring carry the claim (``stub_callee_share``)."""
        return self._share(self.ctx.described_terms(fn), claim) >= RULES["stub_callee_share"]

    def described_by(self, claim: Claim, share: float | None = None) -> Function | None:
        """The code function whose name and docstring hold most of the claim's terms (at least
        ``share``, default ``own_stub_share``; a real function wins a tie): where the code says
        the claim is done."""
        best: tuple[float, bool] = (RULES["own_stub_share"] if share is None else share, False)
        found = None
        for fn, terms in self.ctx.described:
            key = (self._share(terms, claim), not fn.stub)
            if key > best:
                best, found = key, fn
        return found

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
        if claim.dimension == "D1" and claim.numbers:
            # a value's stub is judge_numbers' to find; a stub that computes the claim costs the
            # values found elsewhere a level (_judge)
            self.value_stub = self._claim_stub(claim, wins, RULES["value_stub_share"])
            out = self._stub_window(claim, wins)
            if out is None and self.value_stub is None:
                self._near_stub(claim, RULES["value_stub_share"])
            return out
        found = self._claim_stub(claim, wins)
        if found is not None:
            why, evidence = found
            return Outcome("placeholder", 0.0, "placeholder", why, evidence)
        out = self._stub_window(claim, wins)
        if out is None:
            self._near_stub(claim, RULES["near_stub_share"])
        return out

    def _unread(self, fact: Fact) -> bool:
        """Whether no running code reads the setting (a config key by its name)."""
        if fact.kind == "config":
            return fact.setting not in self.index.reads
        fid = self.ctx.fid_of.get(fact.file)
        return (fid, fact.line) in self.index.unread

    def _near_stub(self, claim: Claim, floor: float) -> None:
        """When no stub is the claim's code, a stub that describes the claim nearly as well as the
        function describing it best (``near_stub_ratio`` of its share, and at least ``floor``)
        costs it a level (``stub_best``): a claim of several parts, one of them not written (a
        spatial and a temporal encoding, the temporal one a stub). Not when the function the claim
        names is written: the stub is then another part of the method."""
        if self.stub_best is not None:
            return
        for name in [*claim.names, *claim.entities]:
            fns = self.ctx.functions_for(name)
            if any(not f.stub and _names_function(name, f.name) for f in fns):
                return
        scored = sorted(
            ((self._share(terms, claim), fn) for fn, terms in self.ctx.described),
            key=lambda x: -x[0],
        )
        if not scored:
            return
        need = max(floor, scored[0][0] * RULES["near_stub_ratio"])
        fn = next((fn for share, fn in scored if share >= need and fn.stub), None)
        if fn is not None:
            how = "best" if fn is scored[0][1] else "nearly as well as the best function's"
            self.stub_best = (
                f"`{fn.qualname}` ({fn.file}:{fn.start}), whose name and docstring describe the "
                f"claim {how}, is a stub.",
                [self.loc(self.ctx.fid_of[fn.file], fn.start, fn.end)],
            )

    def _claim_stub(
        self, claim: Claim, wins: list[Window], share: float | None = None
    ) -> tuple[str, list[tuple[int, int, int]]] | None:
        """(why, evidence) when the code that should compute the claim is a stub: the function
        whose name and docstring describe the claim best, or one that a window as good as the
        best runs and that is about the claim (docs/calibration.md, "Following the code to
        stubs")."""
        own = self.described_by(claim, share)
        if own is not None and own.stub:
            return (
                f"`{own.qualname}` ({own.file}:{own.start}), the function whose name and docstring "
                "describe the claim best, is a stub.",
                [self.loc(self.ctx.fid_of[own.file], own.start, own.end)],
            )
        close = [w for w in wins if not w.stub and w.score >= wins[0].score * RULES["close_window"]]
        for w in close if wins and not wins[0].stub else ():
            for fn in self.ctx.stub_callees(w.fid, w.start, w.end):
                if self._about_claim(fn, claim):
                    fid = self.ctx.fid_of[fn.file]
                    return (
                        f"The evidence at {self.where(w.fid, w.start)} runs "
                        f"`{fn.qualname}` ({fn.file}:{fn.start}), a stub.",
                        [self.loc(fid, fn.start, fn.end), self.loc(w.fid, w.start, w.end)],
                    )
        return None

    def _stub_window(self, claim: Claim, wins: list[Window]) -> Outcome | None:
        """Placeholder when the best evidence window is a stub and no real window comes close; when
        one does, the stub still costs the claim a level (``stub_best``, applied in ``_judge``), and
        so does a stub window nearly as good as a real best one (``near_stub_window``)."""
        if not wins:
            return None
        best = wins[0]
        if not best.stub:
            # a stub nearly as much about the claim as the best window: part of it is not written
            share = RULES["near_stub_window"]
            near = next((w for w in wins[1:] if w.stub and w.score >= best.score * share), None)
            fn = self.ctx.function_at(near.fid, near.start) if near is not None else None
            if near is not None and fn is not None:
                self.stub_best = (
                    f"Evidence nearly as good as the best is `{fn.qualname}` "
                    f"({fn.file}:{fn.start}), a stub.",
                    [self.loc(near.fid, fn.start, fn.end)],
                )
            return None
        fn = self.ctx.function_at(best.fid, best.start)
        if fn is None:
            return None
        if any(not w.stub and w.score >= best.score * RULES["close_window"] for w in wins[1:]):
            # a real window nearly as good: the claim is done there too, or only named there
            self.stub_best = (
                f"The best evidence is `{fn.qualname}` ({fn.file}:{fn.start}), a stub.",
                [self.loc(best.fid, fn.start, fn.end)],
            )
            return None
        return Outcome(
            "placeholder",
            0.0,
            "placeholder",
            f"The best evidence is `{fn.name}` ({fn.file}:{fn.start}), a stub.",
            [self.loc(best.fid, fn.start, fn.end)],
        )
