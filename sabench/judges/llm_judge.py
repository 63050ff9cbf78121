"""The ``llm:<model>`` judge: a model reads the evidence the static judge's index retrieves for each
SAU (ranked code excerpts with line numbers, the named settings) and says whether the code
implements the claim.

Per SAU: the claim, its dimension's instructions (``templates/judge_D1.j2`` .. ``judge_D4.j2``), the
paper's quote, a list of the repository's files, the settings whose names fit the claim, the
retrieved excerpts and, for claims about results, the execution record's metrics and the tail of
its log. The model answers with a :class:`JudgeReply` (validated; one repair request, then an
``error`` verdict that is reported apart, never counted as drift). Evidence references must point
at lines that exist and were shown; others are dropped and the reasoning says so. All SAUs of a
run are judged in one job, concurrently (``concurrency`` per model). ``samples: k`` asks k times
per SAU (:func:`combine_samples`): every answer is kept, the verdict is their majority.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import statistics
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sabench.contracts import DIMENSION_NAMES, Evidence, Judgment
from sabench.index import CONFIG, CodeIndex, build_index
from sabench.index.directed import directed_lines
from sabench.judges.fabrication import fabricated_by_sau, fabricated_judgment
from sabench.judges.registry import JudgeInputs
from sabench.judges.retrieval import (
    RETRIEVAL_DEFAULTS,
    WITHHELD,
    EvidenceBundle,
    Retriever,
)
from sabench.stats import nearest_level

log = logging.getLogger("sabench.llm")

FIXED_SCORES = {"aligned": 1.0, "drifted": 0.0, "missing": 0.0, "placeholder": 0.0}
DEFAULT_FAILURE = {
    "drifted": "implementation_mismatch",
    "missing": "omission",
    "placeholder": "placeholder",
}
#: Settings the judge reads itself (the rest configure the model endpoint, see LLMSettings).
JUDGE_DEFAULTS: dict[str, Any] = {
    "code_only": False,  # no execution log or metrics in the prompt
    **RETRIEVAL_DEFAULTS,  # what the excerpts show (sabench.judges.retrieval)
    "max_files": 40,  # files listed in the repository overview
    "log_tail_lines": 40,  # execution log lines for claims about results
    "samples": 1,  # answers asked per SAU (k > 1: see combine_samples)
}
#: The sampling temperature of ``samples: k > 1`` when the model's is 0 (k equal answers say nothing).
SAMPLE_TEMPERATURE = 0.7
_RESULT_RE = re.compile(
    r"\b(achiev\w*|report\w*|results?|accuracy|outperform\w*|error rate|rmse|mae|mse|f1|auc|"
    r"bleu|rouge|perplexity|score[sd]?|converg\w*|table \d|figure \d|fig\. \d)\b",
    re.I,
)


# --------------------------------------------------------------------------------------------
# The model's answer
# --------------------------------------------------------------------------------------------


class EvidenceRef(BaseModel):
    model_config = ConfigDict(extra="ignore")

    file: str = Field(description="path exactly as shown in an excerpt heading")
    start: int = Field(ge=1, description="first line (as numbered in the excerpt)")
    end: int = Field(ge=1, description="last line, inclusive")

    @model_validator(mode="after")
    def _order(self) -> EvidenceRef:
        if self.end < self.start:
            self.start, self.end = self.end, self.start
        return self


class JudgeReply(BaseModel):
    """What the judge model must answer for one SAU."""

    model_config = ConfigDict(extra="ignore")

    reasoning: str = Field(description="at most three sentences, citing files and lines")
    evidence: list[EvidenceRef] = Field(default_factory=list, max_length=8)
    verdict: Literal["aligned", "partial", "drifted", "missing", "placeholder"]
    score: float = Field(description="0, 0.25, 0.5, 0.75 or 1")
    failure_mode: (
        Literal[
            "implementation_mismatch",
            "placeholder",
            "omission",
            "cited_work_confusion",
            "external_knowledge_gap",
        ]
        | None
    ) = None

    @field_validator("verdict", "failure_mode", mode="before")
    @classmethod
    def _lower(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = v.strip().lower().replace(" ", "_")
            return None if v in ("", "null", "none") else v
        return v

    @field_validator("score", mode="before")
    @classmethod
    def _level(cls, v: Any) -> float:
        x = float(v)
        best = nearest_level(x)
        if not abs(best - x) <= 0.02:  # NaN fails too
            raise ValueError(f"score {x} is not on the scale 0, 0.25, 0.5, 0.75, 1")
        return best

    @model_validator(mode="after")
    def _consistent(self) -> JudgeReply:
        fixed = FIXED_SCORES.get(self.verdict)
        if fixed is not None and self.score != fixed:
            raise ValueError(f"verdict {self.verdict} needs score {fixed:g}, not {self.score:g}")
        if self.verdict == "partial" and self.score in (0.0, 1.0):
            raise ValueError("a partial verdict needs score 0.25, 0.5 or 0.75")
        if self.verdict == "aligned":
            self.failure_mode = None
        elif self.failure_mode is None and self.verdict in DEFAULT_FAILURE:
            self.failure_mode = DEFAULT_FAILURE[self.verdict]  # type: ignore[assignment]
        self.reasoning = " ".join(self.reasoning.split())[:1500]
        return self


def repo_overview(index: CodeIndex, limit: int = 40) -> list[str]:
    """One line per file: path, kind and length (code and config first)."""
    files = sorted(
        (f for f in index.files if f.lines), key=lambda f: (f.kind not in ("code", CONFIG), f.path)
    )
    out = [f"{f.path} ({f.kind}, {len(f.lines)} lines)" for f in files[:limit]]
    if len(files) > limit:
        out.append(f"... and {len(files) - limit} more files")
    return out


def about_results(sau: dict[str, Any]) -> bool:
    """A claim about reported numbers: it carries ``expected`` results or talks about them."""
    expected = sau.get("expected")
    if expected not in (None, "", "null", "[]"):
        return True
    return sau.get("dimension") == "D3" and bool(_RESULT_RE.search(str(sau.get("claim") or "")))


def execution_context(
    execution: dict[str, Any] | None, log_path: Path | None, tail: int
) -> dict[str, Any] | None:
    if not execution:
        return None
    metrics = json.dumps(execution.get("metrics") or {}, sort_keys=True)
    if len(metrics) > 2000:
        metrics = metrics[:2000] + " ...(truncated)"
    lines: list[str] = []
    if log_path is not None and log_path.is_file():
        lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-tail:]
    return {
        "status": execution.get("status"),
        "exit_code": execution.get("exit_code"),
        "metrics": metrics,
        "log_tail": [WITHHELD if directed_lines(line) else line[:300] for line in lines],
    }


def build_messages(
    sau: dict[str, Any],
    bundle: EvidenceBundle,
    overview: list[str],
    execution: dict[str, Any] | None = None,
    fabricated: list[str] | None = None,
) -> list[dict[str, str]]:
    """The system and user messages for one SAU (``templates/judge_system.j2``, ``judge_<D>.j2``);
    ``fabricated``: its results the code writes as literals (:mod:`sabench.judges.fabrication`)."""
    from sabench.llm.templates import render

    dim = str(sau.get("dimension") or "D3")
    if dim not in DIMENSION_NAMES:
        dim = "D3"
    user = render(
        f"judge_{dim}.j2",
        sau_id=str(sau.get("sau_id") or ""),
        dimension=dim,
        dimension_name=DIMENSION_NAMES[dim],
        claim=str(sau.get("claim") or "").strip(),
        source=str(sau.get("source") or "").strip(),
        overview=overview,
        settings=bundle.settings,
        excerpts=bundle.excerpts,
        execution=execution,
        fabricated=fabricated or [],
    )
    return [
        {"role": "system", "content": render("judge_system.j2")},
        {"role": "user", "content": user},
    ]


# --------------------------------------------------------------------------------------------
# The judge
# --------------------------------------------------------------------------------------------


def _split_settings(settings: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    judge = {k: settings.get(k, v) for k, v in JUDGE_DEFAULTS.items()}
    return judge, {k: v for k, v in settings.items() if k not in JUDGE_DEFAULTS}


def _error(sau: dict[str, Any], reasoning: str, **usage: Any) -> Judgment:
    return Judgment(
        sau_id=str(sau.get("sau_id") or ""),
        dimension=str(sau.get("dimension") or ""),
        verdict="error",
        score=None,
        reasoning=reasoning,
        **usage,
    )


def to_judgment(
    sau: dict[str, Any], reply: JudgeReply, bundle: EvidenceBundle, index: CodeIndex
) -> Judgment:
    """The model's reply as a Judgment, keeping only evidence on real, shown lines."""
    lengths = {f.path: len(f.lines) for f in index.files}
    evidence: list[Evidence] = []
    dropped = 0
    for ref in reply.evidence:
        path = ref.file.strip().lstrip("./")
        n = lengths.get(path)
        if n is None or ref.start > n or not bundle.contains(path, ref.start, min(ref.end, n)):
            dropped += 1
            continue
        ev = Evidence(path, ref.start, min(ref.end, n))
        if ev not in evidence:
            evidence.append(ev)
    reasoning = reply.reasoning
    if dropped:
        reasoning += f" [{dropped} evidence reference(s) dropped: not on lines shown to the judge]"
    return Judgment(
        sau_id=str(sau.get("sau_id") or ""),
        dimension=str(sau.get("dimension") or ""),
        verdict=reply.verdict,
        score=reply.score if reply.verdict == "partial" else None,
        failure_mode=reply.failure_mode,
        evidence=evidence,
        reasoning=reasoning,
    )


@dataclass
class SampledJudgment(Judgment):
    """The judgment of k answers, with every answer (a JSON list: the optional ``samples`` column
    of the judge's rows; a field here, not in the contract, so that no other judge reruns)."""

    samples: str | None = None


def sample_clients(client: Any, k: int) -> list[Any]:
    """The clients of k samples: k=1 the client itself (requests as they always were); else one per
    sample whose requests carry ``seed`` = the model's seed (0 if none) + the sample's index, and
    ``SAMPLE_TEMPERATURE`` where the model's temperature is 0, so that the cache keys the k requests
    apart and a rerun is answered from it. They share the cache, the usage and the spend ledger."""
    if k <= 1:
        return [client]
    from sabench.llm import LLMClient

    base = client.settings
    temperature = base.temperature or SAMPLE_TEMPERATURE
    out = []
    for i in range(k):
        settings = replace(base, seed=(base.seed or 0) + i, temperature=temperature)
        sample = LLMClient(settings, cache=client.cache)
        sample.usage, sample.ledger = client.usage, client.ledger
        out.append(sample)
    return out


def combine_samples(samples: list[Judgment], seeds: list[int | None]) -> SampledJudgment:
    """One judgment of k answers: the majority verdict (ties: the verdict of the median-scoring
    sample among those tied, the lower one of an even count), the median score on SA-Bench's scale
    where that verdict is ``partial`` (other verdicts fix it), the evidence and reasoning of that
    sample; ``error`` answers are left out unless all are. Every answer goes into ``samples``."""
    record = [
        {"sample": i, "seed": seeds[i], "verdict": j.verdict, "score": j.score}
        for i, j in enumerate(samples)
    ]
    valid = [(i, j) for i, j in enumerate(samples) if j.verdict != "error"]
    if not valid:
        return SampledJudgment(
            sau_id=samples[0].sau_id,
            dimension=samples[0].dimension,
            verdict="error",
            score=None,
            reasoning=f"all {len(samples)} samples failed: {samples[0].reasoning}",
            samples=json.dumps(record),
        )
    counts = Counter(j.verdict for _, j in valid)
    top = max(counts.values())
    pool = sorted((float(j.score or 0.0), i) for i, j in valid if counts[j.verdict] == top)
    chosen = samples[pool[(len(pool) - 1) // 2][1]]
    median = nearest_level(statistics.median(float(j.score or 0.0) for _, j in valid))
    tally = ", ".join(f"{v} {n}" for v, n in counts.most_common())
    errors = len(samples) - len(valid)
    return SampledJudgment(
        sau_id=chosen.sau_id,
        dimension=chosen.dimension,
        verdict=chosen.verdict,
        score=min(max(median, 0.25), 0.75) if chosen.verdict == "partial" else None,
        failure_mode=chosen.failure_mode,
        evidence=list(chosen.evidence),
        reasoning=f"{chosen.reasoning} [{len(samples)} samples: {tally}"
        + (f", {errors} invalid" if errors else "")
        + f"; median score {median:g}]",
        samples=json.dumps(record),
    )


def judge_llm(
    name: str,
    settings: dict[str, Any],
    submission: Path | str,
    saus: list[dict[str, Any]],
    execution: dict[str, Any] | None = None,
    *,
    log_path: Path | None = None,
    client: Any = None,
    only: Collection[str] | None = None,
) -> list[Judgment]:
    """Judge every SAU of one run with the model ``name`` = ``llm:<model>`` (or settings.model).

    ``log_path``: the run's execution.log (default: next to the submission folder). ``only``: the
    ids of the SAUs to judge (the cascade judge's uncertain ones); the others are still the run's
    claims the retrieval reads, so each prompt is the one the judge asks about every SAU."""
    from sabench.errors import UserError
    from sabench.faults import Fault, llm_fault_cause
    from sabench.llm import LLMClient, LLMError, LLMSettings

    submission = Path(submission)
    claims = saus  # the run's claims, for the retrieval
    if only is not None:
        saus = [s for s in saus if str(s.get("sau_id") or "") in only]
    opts, endpoint = _split_settings(settings)
    try:
        llm = LLMSettings.from_dict(endpoint, model=name.split(":", 1)[1] if ":" in name else None)
    except (TypeError, ValueError) as exc:
        raise UserError(None, f"judge_settings[{name}]", str(exc)) from None
    if not submission.is_dir():
        why = f"{submission} is not a folder" if submission.exists() else None
        if why:
            return [_error(sau, why) for sau in saus]
    index = build_index(submission) if submission.is_dir() else CodeIndex(root=submission)
    retriever = Retriever(index, claims, execution, **opts)
    if not retriever.ctx.has_code:
        why = "The submission is empty." if index.empty else "The submission has no code or config."
        return [
            Judgment(
                sau_id=str(sau.get("sau_id") or ""),
                dimension=str(sau.get("dimension") or ""),
                verdict="missing",
                score=None,
                failure_mode="omission",
                reasoning=f"{why} (no model call)",
            )
            for sau in saus
        ]
    if log_path is None:
        log_path = submission.parent / "execution.log"
    exec_ctx = (
        None
        if opts["code_only"]
        else execution_context(execution, log_path, int(opts["log_tail_lines"]))
    )
    overview = repo_overview(index, int(opts["max_files"]))
    fabricated = fabricated_by_sau(submission, saus)
    prompts = []
    for sau in saus:
        bundle = retriever.retrieve(sau)
        facts = [f.describe() for f in fabricated.get(str(sau.get("sau_id") or ""), [])]
        messages = build_messages(
            sau, bundle, overview, exec_ctx if about_results(sau) else None, facts
        )
        prompts.append((sau, bundle, messages))
    client = client or LLMClient(llm)
    clients = sample_clients(client, int(opts["samples"]))

    async def ask(
        asker: Any, sau: dict[str, Any], bundle: EvidenceBundle, messages: list[Any]
    ) -> tuple[Judgment, dict[str, Any]]:
        """One answer: the model's judgment (an ``error`` one if there is none) and its usage."""
        try:
            result = await asker.structured(messages, JudgeReply)
        except LLMError as exc:
            if exc.fatal:
                raise
            provider_faults.append(exc)
            return _error(sau, f"LLM call failed: {exc}"), {}
        usage = {
            "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens,
            "cost_usd": result.cost_usd,
            "cached": result.cached,
            "latency_s": result.latency_s,
        }
        if result.value is None:
            return _error(sau, str(result.error), **usage), usage
        return to_judgment(sau, result.value, bundle, index), usage  # type: ignore[arg-type]

    async def one(sau: dict[str, Any], bundle: EvidenceBundle, messages: list[Any]) -> Judgment:
        answers = await asyncio.gather(*(ask(c, sau, bundle, messages) for c in clients))
        if len(answers) == 1:
            judgment, usage = answers[0]
        else:
            judgment = combine_samples([j for j, _ in answers], [c.settings.seed for c in clients])
            usage = {
                "prompt_tokens": sum(u.get("prompt_tokens", 0) for _, u in answers),
                "completion_tokens": sum(u.get("completion_tokens", 0) for _, u in answers),
                "cost_usd": sum(u.get("cost_usd", 0.0) for _, u in answers),
                "cached": all(u.get("cached", False) for _, u in answers),
                "latency_s": sum(u.get("latency_s", 0.0) for _, u in answers),
            }
        # a typed-in result scores 0, whatever the model says
        if judgment.verdict != "error" and judgment.sau_id in fabricated:
            judgment = fabricated_judgment(judgment, fabricated[judgment.sau_id])
        for k, v in usage.items():
            setattr(judgment, k, v)
        return judgment

    async def all_saus() -> list[Judgment]:
        return list(await asyncio.gather(*(one(*p) for p in prompts)))

    provider_faults: list[LLMError] = []
    try:
        judgments = asyncio.run(all_saus())
    except LLMError as exc:
        if exc.kind == "budget":
            raise UserError(None, "llm_budget_usd", client.redact(str(exc))) from None
        raise Fault(llm_fault_cause(exc) or "provider_error", client.redact(str(exc))) from None
    log.info("%s: %d SAUs: %s", name, len(saus), client.usage.line())
    if provider_faults:
        # the answered SAUs are cached: the rerun that redoes this run asks only for the others
        first = provider_faults[0]
        raise Fault(
            llm_fault_cause(first) or "provider_error",
            f"{len(provider_faults)} of {len(saus)} SAUs not judged: {client.redact(str(first))}",
        )
    return judgments


def judge(inputs: JudgeInputs) -> list[Judgment]:
    """The registry's entry point: the run's execution log goes into the prompt."""
    return judge_llm(
        inputs.name,
        inputs.settings,
        inputs.submission,
        inputs.saus,
        inputs.execution,
        log_path=inputs.folder / "execution.log",
    )
