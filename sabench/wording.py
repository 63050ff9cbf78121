"""Counts in prose: one noun, singular for one, wherever text is written (summary.md, the
report's pages, the workflow's warnings), so that nothing says "1 SAUs" or "run(s)"."""

from __future__ import annotations


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 SAU``, ``2 SAUs``: a count with its noun; ``many``: an irregular plural."""
    return f"{n} {noun(n, word, many)}"


def noun(n: int, word: str, many: str | None = None) -> str:
    """The word of :func:`plural` alone, for a count shown apart (in bold, a link), or a verb or
    pronoun that agrees with it (``noun(n, "has", "have")``)."""
    return word if n == 1 else (many or word + "s")
