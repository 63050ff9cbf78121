"""A fast index of a submission's files, for the static judge.

The judge asks "where does the code say the learning rate is 0.05", "is ``train_step`` a stub", "which
step runs first"; answering that by grepping every file per claim is slow (SA-Bench's grep judge runs at
10 claims/s). So each submission is read once: files classified (code / config / docs / tests), lines
tokenised into normalised terms (``lr`` and ``learningRate`` both become ``learning rate``), Python
parsed for facts (assignments, keyword arguments, defaults, argparse options, dict keys, functions and
the order of their calls), configs flattened to keys, shell scripts split into commands.
"""

from __future__ import annotations

from sabench.index.build import build_index
from sabench.index.model import (
    BINARY_EXT,
    CODE,
    CONFIG,
    CONFIG_EXT,
    DOC_EXT,
    DOCS,
    MAX_BYTES,
    SHELL_EXT,
    SKIP_DIRS,
    TESTS,
    CodeIndex,
    Fact,
    Function,
    SourceFile,
    classify,
    value_key,
)
from sabench.index.terms import (
    GREEK,
    STOP,
    SYNONYMS,
    chunk_info,
    identifier_terms,
    line_keys,
    normalize_word,
    split_identifier,
    squash,
    stem,
    text_terms,
)

__all__ = [
    "BINARY_EXT",
    "CODE",
    "CONFIG",
    "CONFIG_EXT",
    "DOCS",
    "DOC_EXT",
    "GREEK",
    "MAX_BYTES",
    "SHELL_EXT",
    "SKIP_DIRS",
    "STOP",
    "SYNONYMS",
    "TESTS",
    "CodeIndex",
    "Fact",
    "Function",
    "SourceFile",
    "build_index",
    "chunk_info",
    "classify",
    "identifier_terms",
    "line_keys",
    "normalize_word",
    "split_identifier",
    "squash",
    "stem",
    "text_terms",
    "value_key",
]
