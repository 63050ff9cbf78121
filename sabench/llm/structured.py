"""Structured output: find the JSON object in a model's reply and validate it with pydantic."""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

T = TypeVar("T", bound=BaseModel)
_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)


def extract_json(text: str | None) -> Any:
    """The JSON value of a reply: the whole text, a fenced ```json block, or the outermost
    ``{...}``. Raises ValueError with a short reason."""
    if text is None or not text.strip():
        raise ValueError("the reply is empty")
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    error = "no JSON object in the reply"
    for cand in candidates:
        try:
            return json.loads(cand)
        except ValueError as exc:
            error = f"invalid JSON: {exc}"
    raise ValueError(error)


def parse_reply(text: str | None, model: type[T]) -> tuple[T | None, str | None]:
    """(validated value, None) or (None, what is wrong, in a line or a few)."""
    try:
        data = extract_json(text)
    except ValueError as exc:
        return None, str(exc)
    try:
        return model.model_validate(data), None
    except ValidationError as exc:
        problems = []
        for err in exc.errors()[:5]:
            where = ".".join(str(p) for p in err["loc"]) or "(top level)"
            problems.append(f"{where}: {err['msg']}")
        return None, "; ".join(problems)


def response_format(model: type[BaseModel], kind: str) -> dict[str, Any] | None:
    """The ``response_format`` request parameter for ``kind`` (json_schema | json_object | none)."""
    if kind == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": model.__name__, "schema": model.model_json_schema()},
        }
    if kind == "json_object":
        return {"type": "json_object"}
    return None
