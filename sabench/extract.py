"""LLM extraction of SAUs for papers without curated ones (config ``saus_extraction``).

The paper is cut into chunks (at headings, then paragraphs); for every chunk and dimension the model
lists checkable claims, each with a verbatim quote and whether it is the paper's own or cited prior
work (``templates/extract_D1.j2`` .. ``extract_D4.j2``). Every SAU is grounded as curated ones are
(:mod:`sabench.grounding`, the quote required): its quote found in the paper text with the quote's
numbers, and the claim's numbers in the paper; SAUs not grounded are dropped (or kept with
``grounded = false``), claims about cited work are kept apart, near-duplicates (same numbers, nearly
the same words) are merged, and the rest become SAUs in the curated schema with origin
``llm:<model>`` and ids ``<paper>-<D>-<nnn>`` in the order of their quotes in the paper.

A failed model call fails the extraction (an incomplete SAU set must not be judged); the response
cache makes the retry cheap.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sabench.contracts import DIMENSION_NAMES, DIMENSIONS
from sabench.grounding import PaperText, ground, normalize, number_keys

log = logging.getLogger("sabench.extract")

OPTIONS_DEFAULTS: dict[str, Any] = {
    "dimensions": list(DIMENSIONS),
    "chunk_chars": 12000,
    "max_per_chunk": 12,
    "min_quote_score": 90.0,
    "keep_ungrounded": False,
    "keep_cited": False,
}
OWN, CITED = "own work", "cited work"


class ExtractedUnit(BaseModel):
    model_config = ConfigDict(extra="ignore")

    claim: str = Field(min_length=8, description="one checkable statement, self-contained")
    quote: str = Field(min_length=3, description="verbatim words of the paper that state it")
    attribution: Literal["own", "cited"] = Field(
        default="own", description="own: the paper's method/protocol; cited: prior work it cites"
    )

    @field_validator("attribution", mode="before")
    @classmethod
    def _attr(cls, v: Any) -> Any:
        return v.strip().lower() if isinstance(v, str) else v


class ExtractReply(BaseModel):
    """What the extraction model must answer for one chunk and dimension."""

    model_config = ConfigDict(extra="ignore")

    units: list[ExtractedUnit] = Field(default_factory=list)


@dataclass
class Chunk:
    index: int
    heading: str
    text: str


@dataclass
class Report:
    """What extraction kept and dropped, per dimension."""

    proposed: dict[str, int] = field(default_factory=dict)
    kept: dict[str, int] = field(default_factory=dict)
    ungrounded: list[str] = field(default_factory=list)
    cited: list[str] = field(default_factory=list)
    merged: int = 0
    usage: str = ""

    def lines(self) -> list[str]:
        out = [
            f"{d}: {self.proposed.get(d, 0)} proposed, {self.kept.get(d, 0)} kept"
            for d in sorted(self.proposed)
        ]
        out.append(
            f"{len(self.ungrounded)} ungrounded, {len(self.cited)} about cited work, "
            f"{self.merged} duplicates merged"
        )
        out += [f"ungrounded: {c}" for c in self.ungrounded[:20]]
        out += [f"cited work: {c}" for c in self.cited[:20]]
        if self.usage:
            out.append(self.usage)
        return out


# --------------------------------------------------------------------------------------------
# Chunks and duplicates
# --------------------------------------------------------------------------------------------

_HEADING = re.compile(r"^#{1,6}\s+\S")


def chunk_paper(text: str, chunk_chars: int = 12000) -> list[Chunk]:
    """Sections (markdown headings) packed into chunks of at most ``chunk_chars``; a longer
    section is cut at paragraphs, a longer paragraph at ``chunk_chars``."""
    sections: list[tuple[str, str]] = []
    heading, buf = "", []
    for line in text.splitlines():
        if _HEADING.match(line) and buf:
            sections.append((heading, "\n".join(buf).strip()))
            buf = []
        if _HEADING.match(line):
            heading = line.lstrip("#").strip()
        buf.append(line)
    if buf:
        sections.append((heading, "\n".join(buf).strip()))
    pieces: list[tuple[str, str]] = []
    for head, body in sections:
        if not body:
            continue
        if len(body) <= chunk_chars:
            pieces.append((head, body))
            continue
        part = ""
        for para in re.split(r"\n\s*\n", body):
            while len(para) > chunk_chars:
                pieces.append((head, para[:chunk_chars]))
                para = para[chunk_chars:]
            if part and len(part) + len(para) + 2 > chunk_chars:
                pieces.append((head, part))
                part = ""
            part = f"{part}\n\n{para}" if part else para
        if part:
            pieces.append((head, part))
    chunks: list[Chunk] = []
    cur_head, cur = "", ""
    for head, body in pieces:
        if cur and len(cur) + len(body) + 2 > chunk_chars:
            chunks.append(Chunk(len(chunks), cur_head, cur))
            cur_head, cur = "", ""
        cur_head = cur_head or head
        cur = f"{cur}\n\n{body}" if cur else body
    if cur:
        chunks.append(Chunk(len(chunks), cur_head, cur))
    return chunks


def merge_duplicates(units: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """Drop units that repeat an earlier one of the same dimension: the same numbers and nearly the
    same words (token sort ratio >= 85), or the same quote. The first (by position) stays."""
    from rapidfuzz import fuzz

    kept: list[dict[str, Any]] = []
    merged = 0
    for u in units:
        dup = False
        for k in kept:
            if k["dimension"] != u["dimension"]:
                continue
            same_quote = normalize(k["source"]) == normalize(u["source"])
            similar = number_keys(k["claim"]) == number_keys(u["claim"]) and (
                fuzz.token_sort_ratio(normalize(k["claim"]), normalize(u["claim"])) >= 85
            )
            if similar or (same_quote and fuzz.token_set_ratio(k["claim"], u["claim"]) >= 85):
                dup = True
                break
        if dup:
            merged += 1
        else:
            kept.append(u)
    return kept, merged


# --------------------------------------------------------------------------------------------
# Extraction
# --------------------------------------------------------------------------------------------


def build_messages(
    chunk: Chunk, dimension: str, title: str, n_chunks: int, max_units: int
) -> list[dict[str, str]]:
    from sabench.llm.templates import render

    user = render(
        f"extract_{dimension}.j2",
        title=title,
        dimension=dimension,
        dimension_name=DIMENSION_NAMES[dimension],
        chunk=chunk,
        n_chunks=n_chunks,
        max_units=max_units,
    )
    return [
        {"role": "system", "content": render("extract_system.j2")},
        {"role": "user", "content": user},
    ]


def extract_saus(
    paper: str,
    text: str,
    extractor: str,
    settings: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
    *,
    title: str = "",
    client: Any = None,
) -> tuple[list[dict[str, Any]], Report]:
    """SAU rows (the curated schema, origin ``llm:<model>``) extracted from a paper's text."""
    from sabench.llm import LLMClient, LLMSettings
    from sabench.saus import sau_row

    opt = {**OPTIONS_DEFAULTS, **(options or {})}
    model = extractor.split(":", 1)[1] if extractor.startswith("llm:") else extractor
    llm = LLMSettings.from_dict(settings or {}, model=model)
    client = client or LLMClient(llm)
    chunks = chunk_paper(text, int(opt["chunk_chars"]))
    dims = [d for d in opt["dimensions"] if d in DIMENSIONS]
    jobs = [(chunk, dim) for dim in dims for chunk in chunks]

    async def run_all() -> list[Any]:
        return list(
            await asyncio.gather(
                *(
                    client.structured(
                        build_messages(
                            c, d, title or paper, len(chunks), int(opt["max_per_chunk"])
                        ),
                        ExtractReply,
                    )
                    for c, d in jobs
                )
            )
        )

    results = asyncio.run(run_all())
    report = Report()
    paper_text = PaperText(text)
    candidates: list[dict[str, Any]] = []
    for (chunk, dim), result in zip(jobs, results, strict=True):
        if result.value is None:
            raise RuntimeError(f"chunk {chunk.index + 1} ({dim}): {result.error}")
        for unit in result.value.units[: int(opt["max_per_chunk"]) * 2]:
            report.proposed[dim] = report.proposed.get(dim, 0) + 1
            found = ground(
                unit.claim,
                unit.quote,
                paper_text,
                require_quote=True,
                min_score=float(opt["min_quote_score"]),
            )
            grounded, pos = found.grounded, found.pos
            label = f"{dim}: {unit.claim[:100]}"
            if not grounded:
                report.ungrounded.append(label)
                if not opt["keep_ungrounded"]:
                    continue
            if unit.attribution == "cited":
                report.cited.append(label)
                if not opt["keep_cited"]:
                    continue
            candidates.append(
                {
                    "dimension": dim,
                    "claim": " ".join(unit.claim.split()),
                    "source": " ".join(unit.quote.split()),
                    "grounded": grounded,
                    "category": CITED if unit.attribution == "cited" else OWN,
                    "pos": pos if pos >= 0 else len(paper_text.norm),
                }
            )
    candidates.sort(key=lambda u: (DIMENSIONS.index(u["dimension"]), u["pos"], u["claim"]))
    units, report.merged = merge_duplicates(candidates)
    rows = []
    counters: dict[str, int] = {}
    for u in units:
        counters[u["dimension"]] = counters.get(u["dimension"], 0) + 1
        report.kept[u["dimension"]] = counters[u["dimension"]]
        rows.append(
            sau_row(
                paper,
                sau_id=f"{paper}-{u['dimension']}-{counters[u['dimension']]:03d}",
                dimension=u["dimension"],
                claim=u["claim"],
                source=u["source"],
                weight=1.0,
                origin=f"llm:{model}",
                category=u["category"],
                grounded=u["grounded"],
            )
        )
    report.usage = client.usage.line()
    return rows, report


def extract_paper(
    paper_dir: Path,
    text_path: Path,
    out: Path,
    extractor: str,
    settings: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
    meta_path: Path | None = None,
) -> tuple[list[dict[str, Any]], Report]:
    """Extract and write ``saus.parquet`` for one paper (what rule saus_extract runs)."""
    from sabench.saus import write_saus

    text = text_path.read_text(encoding="utf-8")
    title = ""
    if meta_path is not None and meta_path.is_file():
        title = str(json.loads(meta_path.read_text(encoding="utf-8")).get("title") or "")
    rows, report = extract_saus(paper_dir.name, text, extractor, settings, options, title=title)
    if not rows:
        raise RuntimeError("the model extracted no grounded SAU from the paper")
    write_saus(rows, out)
    return rows, report


def main(argv: list[str] | None = None) -> int:
    from sabench.errors import UserError
    from sabench.llm import LLMError
    from sabench.steps import ArgumentParser, json_object, step

    parser = ArgumentParser(description="Extract the SAUs of one paper with an LLM.")
    parser.add_argument("paper_dir", type=Path, help="the paper's folder (its name is the id)")
    parser.add_argument("--text", type=Path, required=True, help="the ingested paper.md")
    parser.add_argument("--meta", type=Path, help="the ingested paper.json (for the title)")
    parser.add_argument("--out", type=Path, required=True, help="saus.parquet to write")
    parser.add_argument("--extractor", required=True, help="llm:<model>")
    parser.add_argument("--settings", type=json_object, default={}, help="model settings (JSON)")
    parser.add_argument("--options", type=json_object, default={}, help="saus_extraction (JSON)")
    args = parser.parse_args(argv)
    with step(None, "saus_extract"):
        try:
            rows, report = extract_paper(
                args.paper_dir,
                args.text,
                args.out,
                args.extractor,
                args.settings,
                args.options,
                args.meta,
            )
        except (LLMError, RuntimeError) as exc:
            raise UserError(args.paper_dir, "saus_extraction", str(exc)) from None
        for line in report.lines():
            log.info("%s", line)
    grounded = sum(bool(r["grounded"]) for r in rows)
    print(f"{args.paper_dir.name}: {len(rows)} SAUs extracted, {grounded} grounded -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
