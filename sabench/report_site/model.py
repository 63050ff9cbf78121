"""The tables indexed once for the pages, and the links between the pages."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import pandas as pd

from sabench.aggregate.read import NOT_REDONE_CAUSES
from sabench.grounding import is_reference
from sabench.report_site.formatting import as_text, evidence_spans, num, records, slug
from sabench.report_site.sources import Run, Sources
from sabench.scoring import DIMENSION_ORDER, OVERALL, claim_scores

#: What a run without a submission is (a replay source without the paper): said where it is shown
NO_SUBMISSION = (
    "The agent has no submission for this paper (missing_source). This is coverage, not a score"
)


#: What a run that did not complete is (a fault, a failed job: incomplete_runs), before its causes
NOT_COMPLETE = "Not complete, left out of every score: "


class Site:
    """The tables indexed for the pages (one pass over each table)."""

    def __init__(
        self,
        tables: dict[str, pd.DataFrame],
        sources: Sources,
        descriptions: dict[str, str] | None = None,
    ) -> None:
        self.tables = tables
        self.sources = sources
        get = lambda name: tables.get(name, pd.DataFrame())  # noqa: E731
        self.judgments = get("judgments")
        self.scores = get("scores_by_agent")
        self.by_run = get("scores_by_run")
        self.judges = sorted(
            {
                str(j)
                for f in (self.judgments, self.scores, self.by_run)
                if "judge" in f
                for j in f["judge"].dropna()
            }
        )
        self.runs: dict[Run, dict[str, Any]] = {}
        for rec in records(get("runs")):
            self.runs[(str(rec["agent"]), str(rec["paper"]), str(rec["seed"]))] = rec
        self.saus: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for rec in records(get("saus")):
            self.saus[str(rec["paper"])].append(rec)
        self.verdicts: dict[Run, dict[str, dict[str, dict[str, Any]]]] = defaultdict(
            lambda: defaultdict(dict)
        )
        # per run and judge: the SAUs it scored (verdict not error), with their dimension
        self.scored: dict[Run, dict[str, dict[str, str]]] = defaultdict(lambda: defaultdict(dict))
        counted = (
            claim_scores(self.judgments).notna().tolist()
            if {"verdict", "score"} <= set(self.judgments.columns)
            else [True] * len(self.judgments)
        )
        for i, rec in enumerate(records(self.judgments)):
            run = (str(rec["agent"]), str(rec["paper"]), str(rec["seed"]))
            rec["evidence"] = evidence_spans(rec.get("evidence"))
            self.verdicts[run][str(rec["sau_id"])][str(rec["judge"])] = rec
            if counted[i]:
                self.scored[run][str(rec["judge"])][str(rec["sau_id"])] = as_text(
                    rec.get("dimension")
                )
        #: runs of the grid that did not complete (``incomplete_runs``), each with what did not:
        #: a page of its own once it was tried (a fault, a failed job, stale judgments), so that
        #: a run left out of the scores is named where a reader looks for it
        self.not_complete: dict[Run, list[str]] = defaultdict(list)
        for rec in records(get("incomplete_runs")):
            run = (str(rec["agent"]), str(rec["paper"]), str(rec["seed"]))
            if as_text(rec.get("cause")) in NOT_REDONE_CAUSES:  # no run at all: no_submission
                continue
            message = as_text(rec.get("message"))
            self.not_complete[run].append(
                f"{as_text(rec.get('stage'))}: {as_text(rec.get('cause'))}"
                + (f" ({message})" if message else "")
            )
            if as_text(rec.get("cause")) != "not_run":
                self.runs.setdefault(run, {"agent": run[0], "paper": run[1], "seed": run[2]})
        for run in self.verdicts:
            self.runs.setdefault(run, {"agent": run[0], "paper": run[1], "seed": run[2]})
        self.run_scores: dict[Run, dict[str, dict[str, float]]] = defaultdict(
            lambda: defaultdict(dict)
        )
        # SAUs judged (not error) per run, judge and dimension: the n behind each score
        self.run_n: dict[Run, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(dict))
        for rec in records(self.by_run):
            run = (str(rec["agent"]), str(rec["paper"]), str(rec["seed"]))
            score = rec["score"]
            judge, dim = str(rec["judge"]), str(rec["dimension"])
            self.run_scores[run][judge][dim] = math.nan if score is None else float(score)
            n = int(rec.get("n_saus") or 0)
            self.run_n[run][judge][dim] = n
        # every SAU of each paper with its dimension (the table's, then any judged SAU it lacks):
        # what each n is "of"
        self.paper_saus: dict[str, dict[str, str]] = defaultdict(dict)
        for paper, rows in self.saus.items():
            for row in rows:
                self.paper_saus[paper][str(row["sau_id"])] = as_text(row.get("dimension"))
        for run, saus in self.verdicts.items():
            for sau_id, recs in saus.items():
                dims = [as_text(r.get("dimension")) for r in recs.values()]
                self.paper_saus[run[1]].setdefault(sau_id, dims[0] if dims else "")
        self._n_of: dict[tuple[tuple[Run, ...], str, str], tuple[int, int]] = {}
        all_runs = sorted(self.runs)
        self.agents = sorted({r[0] for r in all_runs})
        self.papers = sorted({r[1] for r in all_runs} | set(self.saus))
        self.runs_of_agent: dict[str, list[Run]] = defaultdict(list)
        self.runs_of_paper: dict[str, list[Run]] = defaultdict(list)
        for run in all_runs:
            self.runs_of_agent[run[0]].append(run)
            self.runs_of_paper[run[1]].append(run)
        self.titles = {str(r["paper"]): as_text(r.get("title")) for r in records(get("papers"))}
        self.directed: dict[Run, list[dict[str, Any]]] = defaultdict(list)
        for rec in records(get("judge_directed_text")):
            self.directed[(str(rec["agent"]), str(rec["paper"]), str(rec["seed"]))].append(rec)
        # each judgment is shown on its run's, its paper's and maybe a disagreements page
        self._cells: dict[tuple[Run, str, str, bool], dict[str, Any] | None] = {}
        self._both: dict[str, tuple[int, int]] | None = None
        self._file_hrefs: dict[tuple[Run, str], str] = {}
        #: each agent's ``description`` from the agents file (shown on its pages)
        self.descriptions: dict[str, str] = dict(descriptions or {})
        #: runs whose agent had no submission for the paper (``missing_source``): why
        self.no_submission: dict[Run, str] = {
            run: as_text(rec.get("agent_error"))
            for run, rec in self.runs.items()
            if as_text(rec.get("agent_status")) == "missing_source"
        }

    def no_submission_note(self, run: Run) -> str:
        """What a run without a submission is, for the pages' titles; "" for any other run."""
        if run not in self.no_submission:
            return ""
        why = self.no_submission[run]
        text = NO_SUBMISSION + (f" ({why})" if why else "")
        scored = any(
            not math.isnan(v)
            for dims in self.run_scores.get(run, {}).values()
            for v in dims.values()
        )
        if scored:  # SA-Bench's convention, asked for by the agent's ``missing_source: zero``
            return text + ": scored as an empty submission (missing_source: zero)."
        return text + ": the run counts in no score."

    def not_complete_note(self, run: Run) -> str:
        """What of a run did not complete, for its pages; "" for a complete run."""
        if run not in self.not_complete:
            return ""
        return (
            NOT_COMPLETE
            + "; ".join(self.not_complete[run])
            + ". Fix the cause and run the same command again to redo it."
        )

    # ----- how many SAUs a score rests on

    def sau_count(self, paper: str, dim: str) -> int:
        """The paper's SAUs (of ``dim``; every one for ``overall``)."""
        saus = self.paper_saus.get(paper, {})
        return len(saus) if dim == OVERALL else sum(d == dim for d in saus.values())

    def n_of(self, runs: Sequence[Run], judge: str, dim: str) -> tuple[int, int]:
        """(SAUs the judge scored, SAUs in all) of the papers whose runs have a score of ``dim``
        (the score averages them): a score's n and what it is of. Seeds of a paper judge the same
        SAUs, so an SAU counts once (distinct paper x SAU), however many seeds judged it."""
        key = (tuple(runs), judge, dim)
        if key not in self._n_of:
            judged: set[tuple[str, str]] = set()
            papers: set[str] = set()
            for run in runs:
                if math.isnan(self.run_scores.get(run, {}).get(judge, {}).get(dim, math.nan)):
                    continue
                papers.add(run[1])
                judged.update(
                    (run[1], sau)
                    for sau, d in self.scored.get(run, {}).get(judge, {}).items()
                    if dim in (OVERALL, d)
                )
            self._n_of[key] = (len(judged), sum(self.sau_count(p, dim) for p in papers))
        return self._n_of[key]

    # ----- links (relative to the site root)

    @staticmethod
    def run_href(run: Run) -> str:
        return f"runs/{slug(run[0])}/{slug(run[1])}/{slug(run[2])}.html"

    @staticmethod
    def agent_href(agent: str) -> str:
        return f"agents/{slug(agent)}.html"

    @staticmethod
    def paper_href(paper: str) -> str:
        return f"papers/{slug(paper)}.html"

    @staticmethod
    def disagreements_href(paper: str) -> str:
        return f"disagreements/{slug(paper)}.html"

    def file_href(self, run: Run, file: str) -> str:
        key = (run, file)
        if key not in self._file_hrefs:
            parts = "/".join(slug(p) for p in file.split("/") if p)
            self._file_hrefs[key] = (
                f"files/{slug(run[0])}/{slug(run[1])}/{slug(run[2])}/{parts}.html"
            )
        return self._file_hrefs[key]

    @staticmethod
    def paper_text_href(paper: str) -> str:
        return f"text/{slug(paper)}.html"

    @staticmethod
    def diff_href(paper: str) -> str:
        return f"diff/{slug(paper)}.html"

    def judged_by(self, run: Run, sau_id: str) -> list[str]:
        """The judges that gave this SAU of this run a verdict."""
        recs = self.verdicts.get(run, {}).get(sau_id, {})
        return [j for j in self.judges if j in recs]

    def both_judged(self) -> dict[str, tuple[int, int]]:
        """Per paper: (SAUs x runs that two or more judges gave a verdict, SAUs x runs judged)."""
        if self._both is not None:
            return self._both
        out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for run, saus in self.verdicts.items():
            for recs in saus.values():
                out[run[1]][1] += 1
                out[run[1]][0] += len(recs) > 1
        self._both = {p: (v[0], v[1]) for p, v in out.items()}
        return self._both

    # ----- SAUs

    def sau_rows(self, paper: str, runs: Sequence[Run]) -> list[dict[str, Any]]:
        """The paper's SAUs in table order, then any judged SAU the table lacks."""
        rows = list(self.saus.get(paper, []))
        known = {str(r["sau_id"]) for r in rows}
        extra = sorted({s for run in runs for s in self.verdicts.get(run, {}) if s not in known})
        for sau_id in extra:
            dims = [
                j["dimension"] for run in runs for j in self.verdicts[run].get(sau_id, {}).values()
            ]
            rows.append(
                {"sau_id": sau_id, "dimension": dims[0] if dims else "", "claim": "", "source": ""}
            )
        order = {d: i for i, d in enumerate(DIMENSION_ORDER)}
        rows.sort(key=lambda r: (order.get(str(r.get("dimension")), 99), str(r["sau_id"])))
        for row in rows:
            row["quote"] = self.quote(paper, row)
            row["context"] = self.sources.context(paper, row["quote"]) if row["quote"] else None
        return rows

    def quote(self, paper: str, row: dict[str, Any]) -> str:
        """What the pages show and mark of an SAU's source: the quote itself, or, when the
        source names a place (``2 Method``), the paper's sentence that says the claim
        (:func:`sabench.grounding.claim_sentence`), else the place's name."""
        source = as_text(row.get("source"))
        if not source or not is_reference(source):
            return source
        return self.sources.claim_sentence(paper, as_text(row.get("claim")), source) or source

    def cell(self, run: Run, sau_id: str, judge: str, code: bool = True) -> dict[str, Any] | None:
        """One judgment as the pages show it (the same dict for every page: they only read it)."""
        key = (run, sau_id, judge, code)
        if key not in self._cells:
            self._cells[key] = self._cell(run, sau_id, judge, code)
        return self._cells[key]

    def _cell(self, run: Run, sau_id: str, judge: str, code: bool) -> dict[str, Any] | None:
        rec = self.verdicts.get(run, {}).get(sau_id, {}).get(judge)
        if rec is None:
            return None
        evidence = rec["evidence"]
        return {
            "verdict": as_text(rec.get("verdict")) or "–",
            "score": num(rec.get("score"), 2),
            "failure_mode": as_text(rec.get("failure_mode")),
            "reasoning": as_text(rec.get("reasoning")),
            "evidence": [
                self.sources.excerpt(run, ev, self.file_href(run, ev["file"])) for ev in evidence
            ]
            if code
            else [],
            "refs": [
                f"{ev['file']}:{ev['start']}"
                + (f"-{ev['end']}" if ev["end"] != ev["start"] else "")
                for ev in evidence
            ],
        }

    def disagree(self, run: Run, sau_id: str) -> bool:
        """Whether the judges of this SAU of this run give different verdicts or scores."""
        recs = self.verdicts.get(run, {}).get(sau_id, {})
        if len(recs) < 2:
            return False
        keys = {(as_text(r.get("verdict")), num(r.get("score"), 2)) for r in recs.values()}
        return len(keys) > 1

    def disagreements(self) -> dict[str, list[tuple[Run, str]]]:
        out: dict[str, list[tuple[Run, str]]] = defaultdict(list)
        for run in sorted(self.verdicts):
            for sau_id in sorted(self.verdicts[run]):
                if self.disagree(run, sau_id):
                    out[run[1]].append((run, sau_id))
        return out
