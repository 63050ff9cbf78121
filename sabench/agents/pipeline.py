"""The ``pipeline`` scaffold (PaperCoder-style): plan -> analyze -> code, file by file, no execution.

The paper text goes into the prompts (no tools); the plan is structured output checked by pydantic;
each file is analysed, then written from its analysis. Paths are confined to the submission.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from sabench.agents.basic import AgentOutcome, Transcript, end_with_llm_error, llm_client
from sabench.agents.tools import ToolError, Workspace
from sabench.io import atomic_path

MAX_FILES = 30
_FENCE = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)


class PlannedFile(BaseModel):
    path: str = Field(min_length=1, max_length=200)
    purpose: str = ""


class Plan(BaseModel):
    files: list[PlannedFile] = Field(min_length=1, max_length=MAX_FILES)


def code_of(reply: str | None) -> str:
    """The content of the first fenced block, else the whole reply."""
    text = reply or ""
    match = _FENCE.search(text)
    return (match.group(1) if match else text).rstrip() + "\n"


class _Budget:
    def __init__(self, outcome: AgentOutcome, cost_limit: float | None, max_steps: int) -> None:
        self.outcome, self.cost_limit, self.max_steps = outcome, cost_limit, max_steps

    def add(self, call: Any) -> None:
        self.outcome.steps += 1
        self.outcome.prompt_tokens += call.prompt_tokens
        self.outcome.completion_tokens += call.completion_tokens
        self.outcome.cost_usd += call.cost_usd
        self.outcome.cached_calls += int(call.cached)

    def exceeded(self) -> str | None:
        if self.outcome.steps >= self.max_steps:
            return f"step limit ({self.max_steps})"
        if self.cost_limit is not None and self.outcome.cost_usd >= self.cost_limit:
            return f"cost limit (${self.cost_limit:g})"
        return None


async def pipeline(
    client: Any,
    workspace: Workspace,
    paper_text: str,
    addendum: str,
    transcript: Transcript,
    budget: _Budget,
) -> AgentOutcome:
    from sabench.llm.templates import render

    out = budget.outcome
    plan_messages = [
        {
            "role": "user",
            "content": render("pipeline_plan.j2", paper_text=paper_text, addendum=addendum),
        }
    ]
    planned = await client.structured(plan_messages, Plan)
    for call in planned.calls:
        budget.add(call)
    transcript.write(stage="plan", plan=planned.value.model_dump() if planned.value else None)
    if planned.value is None:
        out.status, out.error = "error", f"plan: {planned.error}"
        return out
    files = [f.model_dump() for f in planned.value.files]
    if not any(f["path"].strip("./") == "reproduce.sh" for f in files):
        files.append({"path": "reproduce.sh", "purpose": "run the whole experiment"})
    written: list[str] = []
    context = [*plan_messages, {"role": "assistant", "content": planned.value.model_dump_json()}]
    for f in files:
        reason = budget.exceeded()
        if reason:
            out.status, out.limit = "limit", reason
            return out
        analysis = await client.chat(
            [*context, {"role": "user", "content": render("pipeline_analyze.j2", files=files, **f)}]
        )
        budget.add(analysis)
        code = await client.chat(
            [
                *context,
                {
                    "role": "user",
                    "content": render(
                        "pipeline_code.j2",
                        path=f["path"],
                        analysis=analysis.content,
                        written=written,
                    ),
                },
            ]
        )
        budget.add(code)
        try:
            note = workspace.write_file(f["path"], code_of(code.content))
        except ToolError as exc:
            note = f"skipped: {exc}"
        else:
            written.append(f["path"])
        transcript.write(stage="code", path=f["path"], analysis=analysis.content, result=note)
    return out


def run_pipeline(
    agent: dict[str, Any],
    paper: str,
    seed: str,
    view: Path,
    submission: Path,
    transcript_path: Path,
    runtime: dict[str, Any],
    gpu_ids: list[str] | None = None,
) -> AgentOutcome:
    client = llm_client(agent, seed)
    paper_text = (view / "paper.md").read_text(encoding="utf-8")
    addendum = (
        (view / "addendum.md").read_text(encoding="utf-8")
        if (view / "addendum.md").is_file()
        else ""
    )
    outcome = AgentOutcome(model=client.settings.model)
    budget = _Budget(outcome, agent.get("cost_limit_usd"), int(agent.get("max_steps", 200)))
    time_limit = float(agent.get("time_limit_s", 3600))
    with atomic_path(submission, directory=True) as tmp:
        workspace = Workspace(tmp, view, runtime, gpus=gpu_ids or [])
        transcript = Transcript(transcript_path, client.redact)
        try:
            outcome = client.run(
                asyncio.wait_for(
                    pipeline(client, workspace, paper_text, addendum, transcript, budget),
                    time_limit,
                )
            )
        except TimeoutError:
            outcome.status, outcome.limit = "limit", f"time limit ({time_limit:.0f}s)"
        except Exception as exc:  # the provider failing for good: a recorded status
            from sabench.llm.client import stop_for_budget  # an exception only: import late

            stop_for_budget(exc)
            end_with_llm_error(outcome, exc, client.redact)
        finally:
            transcript.close()
        if (tmp / "reproduce.sh").is_file():
            (tmp / "reproduce.sh").chmod(0o755)
    return outcome
