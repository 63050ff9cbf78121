"""Config and shell facts: YAML / JSON keys, INI / TOML lines, shell commands and their flags."""

from __future__ import annotations

import re
from typing import Any

import yaml

from sabench.index.model import CodeIndex, Fact, SourceFile
from sabench.index.terms import leaf_terms
from sabench.values import parse_number


def yaml_facts(index: CodeIndex, sf: SourceFile, text: str) -> bool:
    try:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        node = yaml.compose(text, Loader=loader)
    except Exception:
        return False
    if node is None:
        return True
    stack: list[tuple[Any, tuple[str, ...]]] = [(node, ())]
    count = 0
    while stack and count < 20_000:
        cur, path = stack.pop()
        count += 1
        if isinstance(cur, yaml.MappingNode):
            for k, v in cur.value:
                if not isinstance(k, yaml.ScalarNode):
                    continue
                key = str(k.value)
                items = [v] if isinstance(v, yaml.ScalarNode) else v.value[:16]
                scalars = isinstance(v, yaml.ScalarNode | yaml.SequenceNode) and all(
                    isinstance(e, yaml.ScalarNode) for e in items
                )
                terms = leaf_terms(key)
                if scalars and terms:  # a value, or a list of values
                    index.facts.append(
                        Fact(
                            "config",
                            ".".join((*path, key)),
                            ", ".join(str(e.value) for e in items)[:120],
                            tuple(n for e in items for n in _yaml_number(e)),
                            sf.path,
                            k.start_mark.line + 1,
                            terms,
                            path,
                        )
                    )
                if not isinstance(v, yaml.ScalarNode):
                    stack.append((v, (*path, key)))
        elif isinstance(cur, yaml.SequenceNode):
            for e in cur.value[:200]:
                stack.append((e, path))
    return True


def _yaml_number(node: Any) -> tuple[float, ...]:
    if not isinstance(node, yaml.ScalarNode):
        return ()
    if node.tag.endswith((":bool", ":null")):
        return ()
    n = parse_number(str(node.value))
    return (n,) if n is not None else ()


_KV_RE = re.compile(r"^\s*([A-Za-z_][\w.\-]*)\s*[=:]\s*(.+?)\s*$")


#: a comment after a value (``max_iter = 100  # per restart``), where no quote follows it
_INLINE_COMMENT_RE = re.compile(r"\s+[#;][^\"']*$")


def ini_facts(index: CodeIndex, sf: SourceFile) -> None:
    """``key = value`` lines of INI and TOML files, with their section; a list of numbers
    (``center_box = [-10.0, 10.0]``) gives each."""
    section: tuple[str, ...] = ()
    for i, line in enumerate(sf.lines, 1):
        s = line.strip()
        if not s or s.startswith(("#", ";")):
            continue
        if s.startswith("[") and s.endswith("]"):
            section = (s.strip("[]"),)
            continue
        m = _KV_RE.match(_INLINE_COMMENT_RE.sub("", line))
        if m:
            value = m.group(2).strip().strip("\"'")
            items = (
                value[1:-1].split(",") if value.startswith("[") and value.endswith("]") else [value]
            )
            numbers = tuple(n for n in (parse_number(v.strip()) for v in items) if n is not None)
            terms = leaf_terms(m.group(1))
            if terms:
                index.facts.append(
                    Fact(
                        "config",
                        m.group(1),
                        value[:120],
                        numbers,
                        sf.path,
                        i,
                        terms,
                        section,
                    )
                )


_CLI_RE = re.compile(r"(--?[A-Za-z][\w\-.]*)(?:=|\s+)([^\s\\-][^\s\\]*|-[0-9.][^\s\\]*)")


def shell_facts(index: CodeIndex, sf: SourceFile) -> None:
    cmds: list[tuple[str, int]] = []
    buf, start = "", 0
    for i, line in enumerate(sf.lines, 1):
        s = line.strip()
        if not buf and (not s or s.startswith("#")):
            if s.startswith("#") and 0 < i <= len(sf.comment):
                sf.comment[i - 1] = 1
            continue
        if not buf:
            start = i
        if s.endswith("\\"):
            buf += s[:-1].rstrip() + " "
            continue
        buf += s
        for part in re.split(r"\s*(?:&&|\|\||;)\s*", buf):
            if part.strip():
                cmds.append((part.strip(), start))
        for m in _CLI_RE.finditer(buf):
            value = m.group(2).strip("\"'")
            n = parse_number(value)
            terms = leaf_terms(m.group(1))
            if terms:
                index.facts.append(
                    Fact(
                        "cli",
                        m.group(1),
                        value[:120],
                        (n,) if n is not None else (),
                        sf.path,
                        start,
                        terms,
                    )
                )
        buf = ""
    index.commands[sf.path] = cmds
