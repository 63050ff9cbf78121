"""The pages' most repeated pieces as HTML built in Python: a cited span and a judgment. A run
page shows every SAU's judgments with their cited code, and a paper page and its disagreements
page show them again; in the template language these loops were most of the report's time.
The macros of ``templates/report/macros.html.j2`` insert them (as safe HTML); the bytes are the
ones those macros wrote."""

from __future__ import annotations

from typing import Any

from sabench.report_site.formatting import slug


def escape(value: object) -> str:
    """Text as the templates' autoescape wrote it (markupsafe's five entities)."""
    return (
        str(value)
        .replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&#34;")
        .replace("'", "&#39;")
    )


def excerpt_html(excerpt: dict[str, Any]) -> str:
    """A cited span (:meth:`sabench.report_site.sources.Sources.excerpt`): where, a note, the
    highlighted lines (already HTML) with the cited ones marked."""
    note = excerpt["note"]
    parts = [
        f'<div class="excerpt"><div class="where"><code>{escape(excerpt["where"])}</code>',
        f' <span class="note">{escape(note)}</span>' if note else "",
        "</div>\n",
    ]
    if excerpt["lines"]:
        parts.append('<pre class="code">')
        parts += [
            f'<span class="{"hit" if cited else "ctx"}"><span class="ln">{n}</span>{line}</span>\n'
            for n, line, cited in excerpt["lines"]
        ]
        parts.append("</pre>")
    parts.append("</div>\n")
    return "".join(parts)


def verdict_html(verdict: str) -> str:
    return f'<span class="v v-{escape(slug(verdict))}">{escape(verdict)}</span>'


def judgment_html(
    name: str, cell: dict[str, Any] | None, open_first: bool = True, limit: int = 99
) -> str:
    """One judge's judgment of one SAU (a :meth:`sabench.report_site.model.Site.cell`): verdict,
    score, failure mode, reasoning and the first ``limit`` cited spans (the first one open when
    ``open_first``), the others as references. Kept in the cell: its pages show it again."""
    if not cell:
        return (
            f'<div class="judgment nj"><span class="jname">{escape(name)}</span>'
            ' <span class="none">not judged</span></div>'
        )
    key = (name, open_first, limit)
    cache = cell.setdefault("_html", {})
    if key in cache:
        return cache[key]  # type: ignore[no-any-return]
    fm = cell["failure_mode"]
    parts = [
        '<div class="judgment">\n<div class="jhead"><span class="jname">',
        escape(name),
        "</span> ",
        verdict_html(cell["verdict"]),
        f' <span class="score">score {escape(cell["score"])}</span>',
        f' <span class="fm">{escape(fm)}</span>' if fm else "",
        "</div>\n",
    ]
    if cell["reasoning"]:
        parts.append(f'<p class="reasoning">{escape(cell["reasoning"])}</p>')
    refs = cell["refs"]
    if cell["evidence"]:
        for i, ev in enumerate(cell["evidence"][:limit]):
            if i == 0 and open_first:
                parts.append(ev["html"])
            else:
                parts.append(
                    f'<details class="more"><summary><code>{escape(ev["where"])}</code></summary>'
                    f"{ev['html']}</details>"
                )
        if len(refs) > limit:
            parts.append(_refs(refs[limit:]))
    elif refs:
        parts.append(_refs(refs) + "\n")
    else:
        parts.append('<p class="none">no evidence cited</p>')
    parts.append("</div>\n")
    cache[key] = html = "".join(parts)
    return html


def _refs(refs: list[str]) -> str:
    return '<p class="refs">' + "".join(f"<code>{escape(r)}</code> " for r in refs) + "</p>"
