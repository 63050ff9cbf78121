"""Whether an SAU is grounded in its paper: one rule for curated and for extracted SAUs.

A quote is found in the paper exactly (after :func:`normalize`) or, from 12 characters on, fuzzily
(rapidfuzz); the passage found must hold every number of the quote. A claim without a usable quote
(a curated SAU whose source names a section, table or equation, or is shorter than 15 characters)
is grounded when most of its words are in the paper; a quote the paper does not hold grounds
nothing, whatever the claim's words match. Either way every number of the claim must be in the paper. Numbers are compared as values
(:mod:`sabench.values`), never as substrings: ``0.2`` does not match inside ``0.25`` or ``10.2``,
and ``1e-3``, ``0.001`` and ``10^-3`` are the same number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from sabench.values import extract_numbers

#: rapidfuzz score (0-100) from which a quote counts as found.
MIN_SCORE = 90.0
#: Shorter sources may be a section heading ("Sec 3"); they ground nothing on their own.
MIN_QUOTE_CHARS = 15
#: Share of a claim's longer words the paper must hold when its source is not a quote.
MIN_WORD_SHARE = 0.6

_TRANS = str.maketrans(
    {"“": '"', "”": '"', "‘": "'", "’": "'", "–": "-", "—": "-", "−": "-", "\u00a0": " "}
)


def normalize(text: str) -> str:
    """Lowercase, plain quotes and dashes, no markdown emphasis, single spaces."""
    text = text.translate(_TRANS).lower()
    text = re.sub(r"[*_`]+", "", text)
    return re.sub(r"\s+", " ", text).strip()


def _mentions(text: str) -> list[frozenset[float]]:
    """Per number of ``text`` the values it may stand for (``50%`` is 0.5 or 50), rounded so that
    spellings of one value give one key, and without sign: converted papers often part a minus from
    its digits ("[ − 1, 1]")."""
    return [
        frozenset(float(f"{abs(value):.10g}") for value in m.candidates())
        for m in extract_numbers(text)
    ]


def number_keys(text: str) -> frozenset[float]:
    """Every value the numbers of ``text`` may stand for."""
    return frozenset().union(*_mentions(text))


def numbers_held(text: str, keys: frozenset[float]) -> bool:
    """Whether every number of ``text`` is among ``keys`` (in one of its readings)."""
    return all(mention & keys for mention in _mentions(text))


#: A source that names a place in the paper rather than quoting it ("Section 4.2, Table 1",
#: "Appendix B.1 (Vision Transformer)", "3.2.1, D.1", "2 Method"): it grounds through the claim's
#: words. Any other source of 15+ characters is a quote, and a quote not found grounds nothing.
_REFERENCE = re.compile(
    r"^[(\[]?(?:(?:sections?|secs?|§|appendix|appendices|app|tables?|tab|figures?|figs?|eqs?"
    r"|equations?|algorithms?|alg|paragraphs?|para|abstract|introduction|conclusions?|chapters?"
    r"|pages?|pp?|lines?|listings?|theorems?|lemmas?|definitions?|remarks?|footnotes?)\b\.?"
    r"|\d+(?:\.\d+)*[)\]]?(?:\s+(?-i:[A-Z])|\s*[,;]|\s*$)|[a-z]\.\d)",
    re.IGNORECASE,
)


#: A place's name followed by a sentence ("Table 2 shows that we train with Adam ...", "Algorithm 1
#: trains the model with ...", "Section 4.2: We use ..."): four words in a row after the place, all
#: lowercase (the first may be capitalised after a colon). The sentence quotes what the place
#: says; "Section 4.2 pseudocode block", "Section 2.6 step 3" and "Section 2: Pretraining and
#: Adaptation" name the place.
_SENTENCE_AFTER_PLACE = re.compile(
    r"^[(\[]?[A-Za-z§]+\.?\s*(?:\(?[A-Za-z]?\d+(?:\.\d+)*[a-z]?\)?|[A-Z](?:\.\d+)*)?"
    r"(?:,?\s+(?=[a-z])|:\s+)(?P<quote>[A-Za-z][a-z'-]*(?:\s+[a-z][a-z'-]*){3}\b.*)$",
    re.DOTALL,
)


def quoted_after_place(source: str) -> str | None:
    """The sentence a place's name introduces in ``source`` (what follows "Table 2"), if any."""
    source = source.strip()
    m = _SENTENCE_AFTER_PLACE.match(source) if _REFERENCE.match(source) else None
    return m["quote"] if m else None


def is_reference(source: str) -> bool:
    """Whether ``source`` names a section, table, equation ... rather than quoting the paper."""
    source = source.strip()
    return bool(_REFERENCE.match(source)) and not _SENTENCE_AFTER_PLACE.match(source)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+(?:\.[0-9]+)?", text.lower())


class PaperText:
    """A paper's text with what grounding looks up in it, computed once per paper."""

    def __init__(self, text: str) -> None:
        self.text = text

    @cached_property
    def norm(self) -> str:
        return normalize(self.text)

    @cached_property
    def vocab(self) -> frozenset[str]:
        return frozenset(_words(self.text))

    @cached_property
    def numbers(self) -> frozenset[float]:
        return number_keys(self.text)


@dataclass(frozen=True)
class Grounding:
    grounded: bool
    #: Where the quote starts in the normalised paper text; -1 when it was not found.
    pos: int


def _passage_numbers(norm: str, start: int, end: int) -> frozenset[float]:
    """Numbers of ``norm[start:end]`` widened to whole words, so a cut never makes 0.25 read 0.2."""
    while start > 0 and not norm[start - 1].isspace():
        start -= 1
    while end < len(norm) and not norm[end].isspace():
        end += 1
    return number_keys(norm[start:end])


def _find(quote: str, norm: str, min_score: float) -> tuple[float, int, bool]:
    """(score, position, misquoted): misquoted when the paper holds the quote's words but the
    passage does not hold its numbers."""
    q = normalize(quote).strip("\"' .")
    if not q:
        return 0.0, -1, False
    misquoted = False
    pos = norm.find(q)
    while pos >= 0:
        if numbers_held(q, _passage_numbers(norm, pos, pos + len(q))):
            return 100.0, pos, False
        misquoted = True
        pos = norm.find(q, pos + 1)
    if len(q) < 12:
        return 0.0, -1, misquoted
    from rapidfuzz import fuzz

    al = fuzz.partial_ratio_alignment(q, norm, score_cutoff=min_score)
    if al is None:
        return 0.0, -1, misquoted
    # the alignment may stop a few characters short of the quote's last number
    if not numbers_held(q, _passage_numbers(norm, max(0, al.dest_start - 5), al.dest_end + 5)):
        return 0.0, -1, True
    return float(al.score), int(al.dest_start), False


def locate(quote: str, norm: str, min_score: float = MIN_SCORE) -> tuple[float, int]:
    """(match score 0-100, position in ``norm``, a text passed through :func:`normalize`) of a
    quote; (0, -1) when not found.

    Exact after normalisation, else rapidfuzz's best partial alignment (quotes of 12+ chars); the
    passage found must hold the quote's numbers (0.5 is not 0.05, and 0.2 is not 0.25)."""
    score, pos, _ = _find(quote, norm, min_score)
    return score, pos


def ground(
    claim: str,
    source: str,
    paper: PaperText,
    *,
    require_quote: bool = False,
    min_score: float = MIN_SCORE,
) -> Grounding:
    """Whether an SAU is grounded in ``paper`` and where its quote is.

    ``require_quote`` (extracted SAUs, whose source is by contract a verbatim quote) grounds
    only through the quote, of any length; otherwise a source of 15+ characters that names no
    place in the paper (:func:`is_reference`) is a quote and grounds only if found, whatever the
    claim's words match, and a short source or a reference grounds through the claim's words. A
    quote the paper holds with other numbers is a wrong quote: never grounded. A place's name
    followed by a sentence quotes that sentence (:func:`quoted_after_place`)."""
    source = quoted_after_place(source) or source
    _score, pos, misquoted = _find(source, paper.norm, min_score)
    is_quote = require_quote or (
        len(normalize(source)) >= MIN_QUOTE_CHARS and not is_reference(source)
    )
    if (misquoted and is_quote) or not numbers_held(claim, paper.numbers):
        return Grounding(False, pos)
    if is_quote:  # a quote the paper does not hold grounds nothing
        return Grounding(pos >= 0, pos)
    if pos >= 0 and len(normalize(source)) >= MIN_QUOTE_CHARS:  # a heading the paper holds
        return Grounding(True, pos)
    words = [w for w in _words(claim) if len(w) > 3 or any(c.isdigit() for c in w)]
    share = sum(w in paper.vocab for w in words) / len(words) if words else 0.0
    return Grounding(share >= MIN_WORD_SHARE, pos)


#: Where a sentence of a paragraph ends: after . ! or ? before a capital, a quote or a backtick.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(\"'*])")
#: Share of a claim's words the sentence shown for it must hold (:func:`claim_sentence`).
MIN_SENTENCE_SHARE = 0.25
#: Words that say nothing of what a sentence is about.
_FUNCTION_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "with",
    ]
)
#: A markdown heading line: its level and title.
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
#: A place's kind before its name ("Section 2", "§ 3.1"): dropped to match a heading's title.
_PLACE_KIND = re.compile(r"^(?:sections?|secs?\.?|§)\s*", re.IGNORECASE)


def _section(text: str, place: str) -> str | None:
    """The part of ``text`` under the heading ``place`` names ("2 Method" -> "## 2 Method" up
    to the next heading of its level or above), or None when no heading starts with it."""
    wanted = normalize(_PLACE_KIND.sub("", place.strip()))
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = _HEADING.match(line.strip())
        if not m or not wanted:
            continue
        title = normalize(m.group(2))
        if title != wanted and not title.startswith(wanted + " "):
            continue
        level, body = len(m.group(1)), []
        for other in lines[i + 1 :]:
            heading = _HEADING.match(other.strip())
            if heading and len(heading.group(1)) <= level:
                break
            body.append(other)
        return "\n".join(body)
    return None


def claim_sentence(claim: str, place: str, text: str) -> str | None:
    """The paper's sentence that says what ``claim`` says, for an SAU whose source names a place
    (``2 Method``) instead of quoting: the sentence under that heading (else anywhere) holding
    the largest share of the claim's words, as the paper writes it (a paragraph's whitespace made
    single spaces), or None when none holds a quarter of them. Headings and table rows are no
    sentences; a formula's names count as words (``grad_w`` is ``grad`` and ``w``)."""
    words = set(_words(claim)) - _FUNCTION_WORDS
    if not words:
        return None
    best, best_share = None, 0.0
    for para in re.split(r"\n\s*\n", _section(text, place) or text):
        lines = [ln for ln in para.strip().split("\n") if not _HEADING.match(ln.strip())]
        if not lines or lines[0].lstrip().startswith("|"):
            continue
        for sentence in _SENTENCE_END.split(" ".join(" ".join(lines).split())):
            share = len(words & set(_words(sentence))) / len(words)
            if share > best_share:
                best, best_share = sentence, share
    return best if best_share >= MIN_SENTENCE_SHARE else None
