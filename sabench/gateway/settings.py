"""A command agent's model gateway settings (``network: gateway`` and its ``gateway:`` block).

The agent's ``model`` (with its ``api_base`` and ``api_key_env``) is the route every request goes
to; ``gateway.models`` sends a requested model name elsewhere. The budget (``calls``, ``tokens``,
``cost_usd``) caps the run; a measure left out is not capped. Checked once, where the agents file
is read (:func:`check_gateway`), so a mistake is one line before any job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sabench.errors import UserError

#: The budget's measures: what ``gateway:`` names them and what each counts.
BUDGET_KEYS = {
    "calls": "model calls",
    "tokens": "tokens (prompt + completion)",
    "cost_usd": "dollars",
}
#: Seconds an agent keeps running after its budget is spent, to write out what it has.
DEFAULT_GRACE_S = 30.0
#: Request parameters the agent's config sets for every call (they override the agent's own).
CONFIG_PARAMS = ("temperature", "max_tokens", "seed")


@dataclass(frozen=True)
class Route:
    """Where a requested model goes: a litellm model string and its endpoint settings."""

    model: str
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GatewaySettings:
    """The run's routes and budget; ``None`` in a budget measure: not capped."""

    route: Route
    models: dict[str, str] = field(default_factory=dict)
    calls: int | None = None
    tokens: int | None = None
    cost_usd: float | None = None
    grace_s: float = DEFAULT_GRACE_S

    @classmethod
    def from_agent(cls, agent: dict[str, Any]) -> GatewaySettings:
        block = agent.get("gateway") or {}
        endpoint = {
            k: agent[k]
            for k in ("api_base", "api_key_env", "prices", "timeout_s", "max_retries", "backoff_s")
            if agent.get(k) is not None
        }
        endpoint.update({k: agent[k] for k in CONFIG_PARAMS if agent.get(k) is not None})
        return cls(
            route=Route(str(agent["model"]), endpoint),
            models={str(k): str(v) for k, v in (block.get("models") or {}).items()},
            calls=block.get("calls"),
            tokens=block.get("tokens"),
            cost_usd=block.get("cost_usd"),
            grace_s=float(block.get("grace_s", DEFAULT_GRACE_S)),
        )

    def routed(self, requested: str | None) -> Route:
        """The route of a requested model name: its ``models`` entry, else the agent's model."""
        target = self.models.get(requested or "") or self.models.get("*")
        return Route(target, self.route.settings) if target else self.route

    def routed_models(self) -> list[str]:
        """Every model string a request can reach (whose keys must be there before a run)."""
        return sorted({self.route.model, *self.models.values()})

    def budget(self) -> dict[str, float | int | None]:
        return {"calls": self.calls, "tokens": self.tokens, "cost_usd": self.cost_usd}


def uses_gateway(agent: dict[str, Any]) -> bool:
    return agent.get("kind") == "command" and agent.get("network") == "gateway"


def check_gateway(name: str, agent: dict[str, Any], path: str | Path) -> None:
    """What the schema cannot say: a gateway needs a model, a budget of zero lets no call through,
    a ``gateway:`` block needs ``network: gateway``, and the route's key is never handed in."""
    block = agent.get("gateway")
    if agent.get("network") == "gateway" and agent.get("kind") != "command":
        raise UserError(
            path,
            f"{name}.network",
            "network: gateway is for command agents (basic and pipeline agents call their model "
            "from the host)",
            where=(name, "network"),
        )
    if not uses_gateway(agent):
        if block is not None:
            raise UserError(
                path,
                f"{name}.gateway",
                "a gateway block needs kind: command and network: gateway",
                where=(name, "gateway"),
            )
        return
    if not agent.get("model"):
        raise UserError(
            path,
            f"{name}.model",
            "network: gateway routes the agent's requests to its model: name one (a litellm "
            "model string, e.g. openai/gpt-4o-mini)",
            where=(name,),
        )
    for key, what in BUDGET_KEYS.items():
        value = (block or {}).get(key)
        if value is not None and value <= 0:
            raise UserError(
                path,
                f"{name}.gateway.{key}",
                f"a budget of {value} {what} lets no call through: give a number > 0, or leave "
                f"{key} out for no cap on {what}",
                where=(name, "gateway", key),
            )
    secret = agent.get("api_key_env")
    if secret and secret in (agent.get("env") or []):
        raise UserError(
            path,
            f"{name}.env",
            f"{secret} is the key the gateway uses on the host (api_key_env): the agent gets a "
            "per-run token instead; remove it from env",
            where=(name, "env"),
        )
