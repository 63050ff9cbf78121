"""Numbers as papers and code write them, and whether two of them are the same value.

Papers write ``3e-4``, ``3×10⁻⁴``, ``0.03%`` or ``1K``; code writes ``3e-4``, ``0.0003`` or ``1_000``.
The static judge compares values, never spellings, so every form is parsed to a float here, and a
mention keeps the words around it (its name: "learning rate of 0.05", "T=1000", "batch size 128").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace


def words(text: str) -> frozenset[str]:
    """A set of words written as one string (vocabularies stay short to read)."""
    return frozenset(text.split())


_SUP = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
_MINUS = str.maketrans({"−": "-", "–": "-", "‒": "-", "﹣": "-"})
_MULT = {"k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9}
#: Units that may follow a number directly ("100ms", "8x"); other letters make it part of a name.
_UNITS = words("x ms s sec h hr hrs min mins gb mb kb tb px fps hz ep it iter iters gpu gpus")
#: Words after which a number is a reference, not a value ("Table 6", "Eq. (2)", "Section 4.1").
_REFERENCE_WORDS = words(
    "table tab fig figure figures section sec sect eq eqs equation equations appendix app "
    "algorithm alg line lines chapter step stage phase theorem lemma corollary definition def "
    "proposition assumption remark example"
)
_PREFIX_STOP = words(
    "a an the of to is are be was were set by at as with and or in on its their uses use "
    "using used value values equal equals approximately about around roughly ~ has have had "
    "each every all only most least which that this these those it"
)
#: Words that end a number's name: in "sampled from 0.7" the value is not called "sampled".
_BREAKERS = words(
    "from into over under across after before between during for than per up down via"
)

_NUMBER_RE = re.compile(
    r"""
    (?<![\w.])
    (?P<sign>[-+−–](?=[0-9.]))?
    (?P<mant>[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])(?:\.[0-9]+)?|[0-9]+(?:_[0-9]+)*(?:\.[0-9]+)?|\.[0-9]+)
    (?:
        [eE](?P<exp>[-+−]?[0-9]+)
      | [ \t]*(?:[x×*·⋅]|\\times|\\cdot)[ \t]*10[ \t]*(?:\^|\*\*)[ \t]*\{?(?P<exp2>[-+−]?[0-9]+)\}?
      | [ \t]*(?:[x×*·⋅]|\\times|\\cdot)[ \t]*10(?P<supexp>[⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)
      | [ \t]*(?:\^|\*\*)[ \t]*\{?(?P<pow>[-+−]?[0-9]+)\}?
      | (?P<suppow>[⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)
      | (?<![0-9][0-9])[ \t]*/[ \t]*(?P<den>[0-9]+(?:\.[0-9]+)?)(?![0-9/.])
    )?
    (?P<suffix>[ \t]?%|[kKMB](?![A-Za-z0-9_]))?
    """,
    re.VERBOSE,
)
_WORD_RE = re.compile(r"[^\W\d][\w'’-]*|\w*[^\W\d_]\w*")
_BOUNDARY = set(",;()[]{}.\n|")


@dataclass(frozen=True)
class NumberMention:
    """A number found in text: its value, where it is, and the words that name it."""

    value: float
    text: str
    start: int
    end: int
    context_words: tuple[str, ...] = ()
    after_words: tuple[str, ...] = field(default=())
    percent: bool = False

    def candidates(self) -> tuple[float, ...]:
        """Values this mention may stand for (``50%`` is 0.5 or 50)."""
        return (self.value, self.value * 100.0) if self.percent else (self.value,)


def _num(text: str) -> float:
    return float(text.translate(_MINUS).replace(",", "").replace("_", ""))


def _value(m: re.Match[str]) -> float | None:
    try:
        mant = m["mant"].replace(",", "").replace("_", "")
        exp = m["exp"] or m["exp2"] or (m["supexp"] and m["supexp"].translate(_SUP))
        if exp:
            # Through a decimal string, so that 3×10⁻⁴ is exactly the float 3e-4.
            value = float(f"{mant}e{int(exp.translate(_MINUS))}")
        elif m["pow"] is not None:
            value = float(mant) ** _num(m["pow"])
        elif m["suppow"] is not None:
            value = float(mant) ** int(m["suppow"].translate(_SUP))
        else:
            value = float(mant)
        if m["den"] is not None:
            den = _num(m["den"])
            if den == 0:
                return None
            value /= den
    except (OverflowError, ValueError, ZeroDivisionError):
        return None
    suffix = (m["suffix"] or "").strip()
    if suffix in _MULT:
        value *= _MULT[suffix]
    if m["sign"]:
        value = -value
    if suffix == "%":
        value /= 100.0
    return value if math.isfinite(value) else None


def _words_before(text: str, start: int, floor: int = 0, limit: int = 5) -> tuple[str, ...]:
    """The name of a number: the words just before it, back to a clause boundary or ``floor``
    (the end of the previous number's unit: in "450 points in 2 dimensions" 2 is not "points").
    A number inside brackets takes the words before them ("drawn in [-10, 10]")."""
    i = start
    lo = max(floor, start - 80)
    words: list[str] = []
    for _ in range(3):
        while i > lo and text[i - 1] not in _BOUNDARY:
            i -= 1
        segment = text[i:start]
        # In "β₁=1e-4, β_T=0.02" or "a 1e-3 rate" only the part after an earlier number counts.
        segment = re.split(r"[0-9]\S*\s", segment)[-1]
        words = [w.strip("-'’") for w in _WORD_RE.findall(segment)]
        cut = max((j + 1 for j, w in enumerate(words) if w.lower() in _BREAKERS), default=0)
        words = [w for w in words[cut:] if w and w.lower() not in _PREFIX_STOP]
        if cut:
            break
        if words or i <= lo or text[i - 1] not in "[(,":
            break
        if (
            text[i - 1] == ","
            and "[" not in text[max(lo, i - 30) : i]
            and "(" not in text[max(lo, i - 30) : i]
        ):
            break
        i -= 1
        start = i
    return tuple(words[-limit:])


def _words_after(text: str, end: int, limit: int = 3) -> tuple[tuple[str, ...], int]:
    """The unit right after a number ("5 epochs", "4096 parallel imagination environments": up to
    ``limit`` words) and where it ends; stops at the first linking word, so "0.5 and a separation"
    has no unit."""
    words: list[str] = []
    pos = end
    for m in _WORD_RE.finditer(text, end, min(len(text), end + 40)):
        gap = text[pos : m.start()]
        if any(ch in _BOUNDARY or ch.isdigit() or ch in "=:" for ch in gap):
            break
        w = m.group(0)
        if w.lower() in _PREFIX_STOP or w.lower() in _BREAKERS or len(words) >= limit:
            break
        words.append(w)
        pos = m.end()
    return tuple(words), pos


def named_by_its_subject(text: str, num: NumberMention, limit: int = 12) -> NumberMention:
    """The number with the words of ``text`` before it as its name, when it is the text's one
    value and stands after ``=`` or ``:``: in "Number of calibration samples per trial in the
    synthetic experiment = 200" every word before the 200 names it (``n_calibration``), not
    only those after the last "per" or "for" (``_words_before``)."""
    if not re.search(r"[=:]\s*$", text[: num.start]):
        return num
    lead = [w.strip("-'’") for w in _WORD_RE.findall(text[: num.start])]
    lead = [w for w in lead if w and w.lower() not in _PREFIX_STOP and w.lower() not in _BREAKERS]
    if len(lead) <= len(num.context_words):
        return num
    return replace(num, context_words=tuple(lead[-limit:]))


def extract_numbers(text: str) -> list[NumberMention]:
    """Every number mentioned in ``text`` with its value and naming words.

    Skips digits inside names (``I3D``, ``Qwen3``, ``β₁``, ``β1``: any letter, not only ASCII),
    references (``Table 6``, ``Eq. 2``), and dotted versions (``1.2.3``).
    """
    out: list[NumberMention] = []
    prev_end = prev_after = -1
    prev_ctx: tuple[str, ...] = ()
    for m in _NUMBER_RE.finditer(text):
        start, end = m.start(), m.end()
        rest = text[end : end + 6]
        # "3D", "2nd", "conv3x3": letters glued to the digits make a name, unless they are a unit.
        tail = re.match(r"[A-Za-z]+", rest)
        unit = tail.group(0).lower() if tail else ""
        if tail and m["suffix"] is None and (unit not in _UNITS or re.match(r"x[0-9]", rest)):
            continue
        if re.match(r"\.[0-9]", rest):  # a version such as 1.2.3
            continue
        if "," in m["mant"] and text[:start].rstrip()[-1:] in ("[", "(", "{", ","):
            # "[128,256,512]" is a list of three numbers, not 128 million.
            pos = m.start("mant")
            for part in m["mant"].split(","):
                p0 = text.index(part, pos)
                out.append(NumberMention(float(part), part, p0, p0 + len(part)))
                pos = p0 + len(part)
            continue
        value = _value(m)
        if value is None:
            continue
        before = text[max(0, start - 16) : start].lower()
        if re.search(r"(?:^|[^a-z])([a-z]+)\.?\s*\(?$", before):
            word = re.search(r"([a-z]+)\.?\s*\(?$", before)
            if word and word.group(1) in _REFERENCE_WORDS:
                continue
        if re.search(r"[A-Za-z]-$", text[max(0, start - 2) : start]):
            continue  # "blobs-3", "ResNet-50", "top-5": the digits belong to a name
        ctx = _words_before(text, start, floor=max(prev_after, 0))
        after, after_end = _words_after(text, end)
        # "256×256" or "16×256×256": a number glued to the previous one shares its name; so do
        # the items of a bracket, "[-10, 10]" or "(0.9, 0.999)".
        between = text[prev_end:start] if prev_end >= 0 else ""
        if prev_end >= 0 and re.fullmatch(r"\s*[x×*/]\s*", between):
            ctx = prev_ctx
        elif prev_end >= 0 and not ctx and re.fullmatch(r"\s*(?:,|;|to|and)\s*", between):
            opened = text[max(0, prev_end - 60) : prev_end]
            if opened.rfind("[") > opened.rfind("]") or opened.rfind("(") > opened.rfind(")"):
                ctx = prev_ctx
        out.append(
            NumberMention(
                value=value,
                text=m.group(0),
                start=start,
                end=end,
                context_words=ctx,
                after_words=after,
                percent=(m["suffix"] or "").strip() == "%",
            )
        )
        prev_end, prev_ctx, prev_after = end, ctx, after_end
    return out


def parse_number(text: str) -> float | None:
    """The value of a string that is one number (``"3e-4"``, ``"1K"``, ``"50%"``), else None."""
    text = text.strip()
    if not text:
        return None
    m = _NUMBER_RE.fullmatch(text)
    if m is None:
        return None
    return _value(m)


def _candidates(x: float | int | str | NumberMention) -> tuple[float, ...]:
    if isinstance(x, NumberMention):
        return x.candidates()
    if isinstance(x, bool):
        return (float(x),)
    if isinstance(x, int | float):
        return (float(x),)
    text = str(x).strip()
    value = parse_number(text)
    if value is None:
        return ()
    return (value, value * 100.0) if text.endswith("%") else (value,)


def values_match(
    a: float | int | str | NumberMention,
    b: float | int | str | NumberMention,
    rel_tol: float = 1e-9,
) -> bool:
    """True when ``a`` and ``b`` are the same value in any notation (``50%`` matches 0.5 and 50)."""
    for x in _candidates(a):
        for y in _candidates(b):
            if math.isclose(x, y, rel_tol=rel_tol, abs_tol=1e-12):
                return True
    return False
