"""Expected results: ``{metric, value, tolerance}`` entries, parsed and matched against metrics."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sabench.checks.outcome import Outcome


class ExpectedError(ValueError):
    """An ``expected`` entry that cannot be used; ``field`` is relative to ``expected``."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"expected{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Expectation:
    """One number the run must report: ``metric`` within ``tolerance`` of ``value``."""

    metric: str
    value: float
    #: absolute tolerance (a relative one is turned into an absolute one at parse time)
    tolerance: float
    #: how the tolerance was written, for the reasoning ("0.005", "1%", "default ±0.0005")
    written: str


_PERCENT = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*%\s*$")


def _default_tolerance(value: float) -> tuple[float, str]:
    """Half a unit in the last digit of the number as written (0.597 -> 0.0005, 12 -> 0.5)."""
    text = repr(float(value))
    if "e" in text or "E" in text:
        mantissa, _, exponent = text.lower().partition("e")
        decimals = len(mantissa.partition(".")[2].rstrip("0")) - int(exponent)
    else:
        decimals = len(text.partition(".")[2].rstrip("0"))
    tol = 0.5 * 10.0 ** (-decimals)
    return tol, f"±{tol:g} (half a unit of the last digit)"


def parse_expected(raw: Any) -> list[Expectation]:
    """Validate ``expected`` (a mapping or a list of them); raise :class:`ExpectedError`."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raise ExpectedError("", f"not a mapping or a list of mappings: {raw[:80]!r}") from None
    items = raw if isinstance(raw, list) else [raw]
    if not items:
        raise ExpectedError("", "an empty list: give at least one {metric, value}")
    out = []
    for i, item in enumerate(items):
        where = f"[{i}]" if isinstance(raw, list) else ""
        if not isinstance(item, Mapping):
            raise ExpectedError(where, "must be a mapping {metric, value, tolerance}")
        unknown = sorted(set(item) - {"metric", "value", "tolerance"})
        if unknown:
            raise ExpectedError(
                f"{where}.{unknown[0]}", "unknown key (allowed: metric, value, tolerance)"
            )
        metric = item.get("metric")
        if not isinstance(metric, str) or not metric.strip():
            raise ExpectedError(f"{where}.metric", f"a metric name is needed, got {metric!r}")
        value = item.get("value")
        if isinstance(value, bool) or not isinstance(value, int | float):
            hint = ""
            if isinstance(value, str) and re.fullmatch(r"\s*-?[0-9.]+[eE][-+]?[0-9]+\s*", value):
                hint = " (YAML reads 1e-4 as text: write 1.0e-4)"
            raise ExpectedError(f"{where}.value", f"{value!r} is not a number{hint}")
        if not math.isfinite(value):
            raise ExpectedError(f"{where}.value", f"{value!r} is not a finite number")
        tol_raw = item.get("tolerance")
        percent = _PERCENT.match(tol_raw) if isinstance(tol_raw, str) else None
        if tol_raw is None:
            tol, written = _default_tolerance(value)
        elif isinstance(tol_raw, int | float) and not isinstance(tol_raw, bool):
            if not math.isfinite(tol_raw) or tol_raw < 0:
                raise ExpectedError(f"{where}.tolerance", f"{tol_raw!r} must be a number >= 0")
            tol, written = float(tol_raw), f"±{tol_raw:g}"
        elif percent:
            pct = float(percent.group(1))
            tol, written = abs(value) * pct / 100.0, f"±{pct:g}%"
        else:
            raise ExpectedError(
                f"{where}.tolerance",
                f"{tol_raw!r} is not a tolerance "
                '(an absolute number such as 0.005, or a relative one such as "5%")',
            )
        out.append(Expectation(metric.strip(), float(value), tol, written))
    return out


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)  # non-finite floats are stored as text ("nan", "inf")
        except ValueError:
            return None
    return None


def match_expected(exp: Expectation, metrics: Mapping[str, Any]) -> Outcome:
    """One expectation against the captured metrics."""
    if exp.metric not in metrics:
        near = sorted(k for k in metrics if k.split(".")[-1] == exp.metric.split(".")[-1])[:3]
        hint = f"; reported: {', '.join(near)}" if near else ""
        return Outcome(
            "missing",
            f"{exp.metric} is not reported ({len(metrics)} metric(s) captured{hint})",
        )
    got = _number(metrics[exp.metric])
    paper = f"the paper's {exp.value:g} {exp.written}"
    if got is None or not math.isfinite(got):
        return Outcome("fail", f"{exp.metric} = {metrics[exp.metric]!r}, not a number; {paper}")
    diff = abs(got - exp.value)
    if diff <= exp.tolerance * (1 + 1e-9) + 1e-12:
        return Outcome("pass", f"{exp.metric} = {got:g}, within {paper}")
    return Outcome("fail", f"{exp.metric} = {got:g}, outside {paper} (off by {diff:.3g})")
