"""Prompts are jinja2 templates in ``sabench/templates/`` (shipped as package data)."""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path
from typing import Any

TEMPLATE_DIR = Path(__file__).resolve().parents[1] / "templates"


@cache
def environment() -> Any:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        autoescape=False,
    )


def render(name: str, **context: Any) -> str:
    """Render one template; a missing variable is an error, not an empty string."""
    return environment().get_template(name).render(**context).strip() + "\n"


def templates_hash(pattern: str = "*.j2") -> str:
    """Hash of the templates matching ``pattern`` (part of judge fingerprints)."""
    digest = hashlib.sha256()
    for path in sorted(TEMPLATE_DIR.glob(pattern)):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]
