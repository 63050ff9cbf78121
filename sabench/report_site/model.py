"""The tables indexed once for the pages, and the links between the pages."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import pandas as pd

from sabench.report_site.formatting import as_text, evidence_spans, num, records, slug
from sabench.report_site.sources import Run, Sources
from sabench.scoring import DIMENSION_ORDER


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
        for rec in records(self.judgments):
            run = (str(rec["agent"]), str(rec["paper"]), str(rec["seed"]))
            rec["evidence"] = evidence_spans(rec.get("evidence"))
            self.verdicts[run][str(rec["sau_id"])][str(rec["judge"])] = rec
        for run in self.verdicts:
            self.runs.setdefault(run, {"agent": run[0], "paper": run[1], "seed": run[2]})
        self.run_scores: dict[Run, dict[str, dict[str, float]]] = defaultdict(
            lambda: defaultdict(dict)
        )
        # SAUs judged (not error) per run, judge and dimension: the n behind each score
        self.run_n: dict[Run, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(dict))
        self.agent_n: dict[tuple[str, str, str], int] = defaultdict(int)
        for rec in records(self.by_run):
            run = (str(rec["agent"]), str(rec["paper"]), str(rec["seed"]))
            score = rec["score"]
            judge, dim = str(rec["judge"]), str(rec["dimension"])
            self.run_scores[run][judge][dim] = math.nan if score is None else float(score)
            n = int(rec.get("n_saus") or 0)
            self.run_n[run][judge][dim] = n
            if score is not None and not math.isnan(float(score)):
                self.agent_n[(run[0], judge, dim)] += n
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
            row["quote"] = as_text(row.get("source"))
            row["context"] = self.sources.context(paper, row["quote"]) if row["quote"] else None
        return rows

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
