"""The pages' most repeated pieces as HTML built in Python: a cited span and a judgment. A run
page shows every SAU's judgments with their cited code, and a paper page and its disagreements
page show them again; in the template language these loops were most of the report's time.
The macros of ``templates/report/macros.html.j2`` insert them (as safe HTML); the bytes are the
ones those macros wrote."""

from __future__ import annotations

from typing import Any

from sabench.report_site.formatting import slug

#: Stands for the page's way back to the site root in HTML built once for several pages (a run
#: page is three folders down, a paper page one); each page replaces it with its own.
ROOT = "\ue000root\ue000"


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
    where = f"<code>{escape(excerpt['where'])}</code>"
    if excerpt.get("href"):
        where = (
            f'<a class="file-link" href="{ROOT}{escape(excerpt["href"])}" '
            f'title="the whole file, these lines marked">{where}</a>'
        )
    parts = [
        f'<div class="excerpt"><div class="where">{where}',
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
    if key not in cache:
        cited = _cited_html(cell, open_first, limit)
        cache[key] = (
            '<div class="judgment">\n'
            + _verdict_head(name, cell)
            + (cited or '<p class="none">no evidence cited</p>')
            + "</div>\n"
        )
    return cache[key]  # type: ignore[no-any-return]


def judges_html(judges: list[tuple[str, dict[str, Any]]], limit: int = 99) -> str:
    """The judgments of one SAU by the judges that judged it: their verdicts and reasoning side
    by side (``--n`` columns), then each judge's cited code across the whole width, so that three
    judges do not squeeze their code into a third of the page each."""
    parts = [f'<div class="judges" style="--n: {len(judges)}">\n']
    cited = []
    for name, cell in judges:
        code = _cited_html(cell, True, limit)
        none = "" if code else '<p class="none">no evidence cited</p>'
        parts.append(f'<div class="judgment">\n{_verdict_head(name, cell)}{none}</div>\n')
        if code:
            cited.append(
                f'<div class="cited"><div class="cited-by"><span class="jname">{escape(name)}'
                f"</span> cites</div>\n{code}</div>\n"
            )
    parts += cited
    parts.append("</div>\n")
    return "".join(parts)


def _verdict_head(name: str, cell: dict[str, Any]) -> str:
    """A judgment's verdict, score, failure mode and reasoning (kept in the cell)."""
    cache = cell.setdefault("_html", {})
    key = ("head", name)
    if key not in cache:
        fm = cell["failure_mode"]
        reasoning = cell["reasoning"]
        cache[key] = "".join(
            [
                '<div class="jhead"><span class="jname">',
                escape(name),
                "</span> ",
                verdict_html(cell["verdict"]),
                f' <span class="score">score {escape(cell["score"])}</span>',
                f' <span class="fm">{escape(fm)}</span>' if fm else "",
                "</div>\n",
                f'<p class="reasoning">{escape(reasoning)}</p>' if reasoning else "",
            ]
        )
    return cache[key]  # type: ignore[no-any-return]


def _cited_html(cell: dict[str, Any], open_first: bool, limit: int) -> str:
    """A judgment's first ``limit`` cited spans, the others as references; "" when none."""
    cache = cell.setdefault("_html", {})
    key = ("cited", open_first, limit)
    if key in cache:
        return cache[key]  # type: ignore[no-any-return]
    refs = cell["refs"]
    parts = []
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
    cache[key] = html = "".join(parts)
    return html


def _refs(refs: list[str]) -> str:
    return '<p class="refs">' + "".join(f"<code>{escape(r)}</code> " for r in refs) + "</p>"


def sau_data(attrs: dict[str, str]) -> str:
    """The attributes the SAU filters read (:func:`sabench.report_site.pages.sau_attrs`)."""
    return "".join(f' data-{k}="{escape(attrs[k])}"' for k in ("dim", "j", "v", "fm"))


def sau_html(sau: dict[str, Any], text_href: str) -> str:
    """One SAU of a run page (:func:`sabench.report_site.pages.run_context`): the claim and the
    paper's sentence (linked into the paper's text page at ``text_href``), then the judges that
    judged it (:func:`judges_html`), and the judges that did not."""
    anchor = escape(sau["anchor"])
    cls = "sau f" + (" ok" if sau["ok"] else "") + (" disagree" if sau["disagree"] else "")
    parts = [
        f'<section class="{cls}" id="{anchor}" data-ok="{1 if sau["ok"] else 0}"',
        sau_data(sau["attrs"]),
        f'>\n<h3><a href="#{anchor}">{escape(sau["id"])}</a> ',
        f'<span class="dim">{escape(sau["dimension"])}</span>',
    ]
    for name, cell in sau["judges"]:
        parts.append(f' <span class="dim">{escape(name)}</span> {verdict_html(cell["verdict"])}')
    if sau["disagree"]:
        parts.append(' <span class="flag">judges disagree</span>')
    if sau["grounded"]:
        parts.append(
            f' <span class="grounded g-{escape(slug(sau["grounded"]))}" title="whether the '
            f'SAU&#39;s quote was found in the paper">{escape(sau["grounded"])}</span>'
        )
    parts.append('</h3>\n<div class="paper-side">\n')
    if sau["claim"]:
        parts.append(f'<p class="claim">{escape(sau["claim"])}</p>\n')
    if sau["context"]:
        parts.append(
            f'<blockquote class="quote">{sau["context"]} <a class="in-paper" '
            f'href="{ROOT}{escape(text_href)}#{anchor}">in the paper</a></blockquote>\n'
        )
    elif sau["quote"]:
        parts.append(
            f'<blockquote class="quote"><mark>{escape(sau["quote"])}</mark></blockquote>\n'
        )
    parts.append("</div>\n")
    if sau["judges"]:
        parts.append(judges_html(sau["judges"]))
    if sau["not_judged"]:
        names = ", ".join(escape(n) for n in sau["not_judged"])
        parts.append(f'<p class="not-judged">Not judged by {names}.</p>\n')
    parts.append("</section>\n")
    return "".join(parts)


def paper_row_html(row: dict[str, Any]) -> str:
    """One SAU of a paper page (:func:`sabench.report_site.pages.paper_context`): the claim, then
    a cell per run with the first cited span of each judge that judged it."""
    grounded = row["grounded"]
    parts = [
        f'<tr class="f sau-row" id="{escape(row["anchor"])}" data-differ="'
        f'{1 if row["differ"] else 0}"{sau_data(row["attrs"])}>\n<td class="paper-side"><b>'
        f'{escape(row["id"])}</b> <span class="dim">{escape(row["dimension"])}</span>',
        f' <span class="grounded g-{escape(slug(grounded))}">{escape(grounded)}</span>'
        if grounded
        else "",
        f'<p class="claim">{escape(row["claim"])}</p>' if row["claim"] else "",
        f'<blockquote class="quote"><mark>{escape(row["quote"])}</mark></blockquote>'
        if row["quote"]
        else "",
        "</td>\n",
    ]
    for i, (cell, missing) in enumerate(zip(row["cells"], row["not_judged"], strict=True)):
        parts.append(f'<td class="col" data-col="{i}">')
        parts += [judgment_html(name, c, True, 1) for name, c in cell]
        if missing:
            names = ", ".join(escape(n) for n in missing)
            parts.append(f'<p class="not-judged">not judged by {names}</p>')
        parts.append("</td>")
    parts.append("\n</tr>\n")
    return "".join(parts)
