"""Dollar cost of a call: the config's prices when given, else litellm's bundled price map."""

from __future__ import annotations

from typing import Any


def call_cost(
    model: str, prompt_tokens: int, completion_tokens: int, prices: dict[str, Any] | None = None
) -> tuple[float, bool]:
    """(cost in USD, whether the price is known). ``prices`` = {input_per_mtok, output_per_mtok}
    (USD per million tokens) overrides the map; a model the map lacks costs 0 and is not known."""
    if prices:
        cost = (
            prompt_tokens * float(prices.get("input_per_mtok", 0.0))
            + completion_tokens * float(prices.get("output_per_mtok", 0.0))
        ) / 1e6
        return cost, True
    from sabench.llm.litellm_setup import get_litellm

    litellm = get_litellm()
    try:
        p, c = litellm.cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )
    except Exception:  # ModelNotMappedError and friends: an unmapped model
        return 0.0, False
    return float(p) + float(c), True


def price_per_mtok(model: str, prices: dict[str, Any] | None = None) -> tuple[float, float] | None:
    """(input, output) USD per million tokens, or None when unknown."""
    if prices:
        return float(prices.get("input_per_mtok", 0.0)), float(prices.get("output_per_mtok", 0.0))
    cost, known = call_cost(model, 1_000_000, 0)
    if not known:
        return None
    out, _ = call_cost(model, 0, 1_000_000)
    return cost, out
