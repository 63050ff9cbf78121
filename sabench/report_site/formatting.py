"""Values as the pages show them: file names, numbers, text, colours, table rows, evidence spans."""

from __future__ import annotations

import functools
import hashlib
import html
import json
import math
import re
from collections.abc import Iterable
from typing import Any

import pandas as pd


def slug(name: object) -> str:
    """A file name for ``name``: itself when safe, else a cleaned form plus a short hash."""
    return _slug(str(name))


@functools.lru_cache(maxsize=65536)
def _slug(text: str) -> str:
    # the pages ask for the same few names (agents, papers, seeds, files) again and again
    clean = re.sub(r"[^A-Za-z0-9._-]+", "_", text).lstrip(".") or "_"
    if clean != text:
        clean += "-" + hashlib.sha256(text.encode()).hexdigest()[:8]
    return clean


def num(value: Any, digits: int = 3) -> str:
    """A number as text; missing values are an en dash."""
    if value is None or value is pd.NA:
        return "–"
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(number):
        return "–"
    if digits == 0:
        return f"{number:,.0f}"
    return f"{number:.{digits}f}"


def as_text(value: Any) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def score_color(score: float) -> str:
    """Background of a score cell: red (0) to green (1); grey without a score."""
    if score is None or math.isnan(score):
        return "#eeeeee"
    return f"hsl({round(120 * max(0.0, min(1.0, score)))}, 55%, 82%)"


def records(frame: pd.DataFrame | None) -> list[dict[str, Any]]:
    if frame is None or frame.empty:
        return []
    return frame.astype(object).where(frame.notna(), None).to_dict("records")


def evidence_spans(value: Any) -> list[dict[str, Any]]:
    """The evidence column as ``[{file, start, end}]`` (Parquet gives an array of dicts)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    out = []
    for item in list(value):
        if isinstance(item, dict) and item.get("file"):
            start = int(item.get("start") or 1)
            out.append(
                {"file": str(item["file"]), "start": start, "end": int(item.get("end") or start)}
            )
    return out


def mean(values: Iterable[float]) -> float:
    kept = [v for v in values if v is not None and not math.isnan(v)]
    return sum(kept) / len(kept) if kept else math.nan


def escape(text: str) -> str:
    """HTML-escaped text; the templates insert the code and quote HTML built here as is."""
    return html.escape(text, quote=False)
