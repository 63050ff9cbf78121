"""Build the index: read each file once, extract its facts, post its chunks and numbers."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

from sabench.index.config_facts import ini_facts, shell_facts, yaml_facts
from sabench.index.directed import directed_lines
from sabench.index.model import (
    BINARY_EXT,
    CODE,
    CONFIG,
    CodeIndex,
    SourceFile,
    classify,
    iter_files,
    read_text,
    value_key,
)
from sabench.index.python_facts import parse_python, python_facts
from sabench.index.terms import CHUNK_RE, chunk_info
from sabench.values import extract_numbers


def build_index(root: Path | str) -> CodeIndex:
    """Index every text file under ``root``: terms, facts, functions, calls, commands."""
    root = Path(root)
    index = CodeIndex(root=root)
    if not root.is_dir():
        return index
    chunk_sites: dict[str, list[tuple[int, int]]] = defaultdict(list)
    literals: dict[float, list[tuple[int, int]]] = defaultdict(list)
    texts: list[str] = []
    for full, rel in iter_files(root):
        ext = os.path.splitext(rel)[1].lower()
        if ext in BINARY_EXT:
            index.skipped += 1
            continue
        text = read_text(full)
        if text is None:
            index.skipped += 1
            continue
        kind, lang = classify(rel)
        lines = text.splitlines()
        if lang == "other" and kind == CODE and lines and lines[0].startswith("#!"):
            if "sh" in lines[0]:
                lang = "shell"
            elif "python" in lines[0]:
                lang = "python"
        index.files.append(SourceFile(rel, kind, lang, lines, bytearray(len(lines))))
        texts.append(text)
    parsed = parse_python(index)
    for fid, (sf, text) in enumerate(zip(index.files, texts, strict=True)):
        kind, lang, lines = sf.kind, sf.language, sf.lines
        index.directed.update((fid, ln) for ln in directed_lines(text, sf.path))
        n_facts = len(index.facts)
        if lang == "python":
            for v, ln in python_facts(index, sf, parsed.get(fid)):
                if kind in (CODE, CONFIG):
                    literals[value_key(v)].append((fid, ln))
        elif lang == "yaml" or lang == "json":
            if len(text) < 300_000 and not yaml_facts(index, sf, text):
                ini_facts(index, sf)
        elif lang in ("toml", "ini"):
            ini_facts(index, sf)
        elif lang == "shell":
            shell_facts(index, sf)
        if kind in (CODE, CONFIG):
            for fact in index.facts[n_facts:]:
                for v in fact.numbers:
                    literals[value_key(v)].append((fid, fact.line))
        comment = sf.comment
        is_py = lang == "python"
        scan_numbers = kind in (CODE, CONFIG) and not is_py and lang not in ("yaml", "json")
        findall = CHUNK_RE.findall
        for i, line in enumerate(lines):
            if is_py and not comment[i] and line.lstrip().startswith("#"):
                comment[i] = 1
            if len(line) > 1000:
                line = line[:1000]
            site = (fid, i + 1)
            for c in dict.fromkeys(findall(line)):
                chunk_sites[c].append(site)
            if scan_numbers:
                for m in extract_numbers(line):
                    literals[value_key(m.value)].append(site)
    term_chunks: dict[str, list[str]] = defaultdict(list)
    key_chunks: dict[str, list[str]] = defaultdict(list)
    for c in chunk_sites:
        terms, ks = chunk_info(c)
        for t in terms:
            term_chunks[t].append(c)
        for k in ks:
            key_chunks[k].append(c)
    index.chunk_sites = dict(chunk_sites)
    index.term_chunks = dict(term_chunks)
    index.key_chunks = dict(key_chunks)
    index.literals = dict(literals)
    index.mark_unconstructible()
    index.mark_unread()
    return index
