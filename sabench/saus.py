"""Import Semantic Alignment Units (SAUs) from curated files and check them against the paper text.

Sources, all found in the paper folder and imported together (ids must stay unique):
- ``saus.yaml`` / ``saus.yml`` / ``saus.json``: our curated format (``schemas/saus.schema.yaml``);
  a ``saus.json`` shaped like SA-Bench's release is read as SA-Bench;
- ``sau.json``: SA-Bench's release format ``{paper_id, paper_title, D1: [{id, claim, source}], ...}``;
- ``rubric.json``: a PaperBench rubric tree; every leaf becomes an SAU that keeps its weight, task
  category and the path of its parents (``parent`` ids and ``parent_weights``) so the weighted tree
  score can be computed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from sabench.contracts import DIMENSIONS, SAU_COLUMNS
from sabench.errors import UserError

CURATED_FILES = ("saus.yaml", "saus.yml", "saus.json")
SABENCH_FILES = ("sau.json",)
RUBRIC_FILES = ("rubric.json",)
SAU_FILES = CURATED_FILES + SABENCH_FILES + RUBRIC_FILES
#: Extra columns beyond the contract that rubric imports fill.
EXTRA_COLUMNS = ("parent_weights",)
GROUNDING_THRESHOLD = 90.0

#: PaperBench's fine-grained task categories mapped onto our dimensions.
RUBRIC_DIMENSIONS = {
    "Method Implementation": "D2",
    "Experimental Setup": "D3",
    "Evaluation, Metrics & Benchmarking": "D3",
    "Dataset and Model Acquisition": "D3",
    "Logging, Analysis & Presentation": "D3",
    "Environment & Infrastructure Setup": "D3",
    "Data Processing & Preparation": "D4",
}
_NUMBER_WITH_NAME = re.compile(
    r"[A-Za-z_][\w \-]{2,40}?(?:=|of|to|is|:)\s*-?\d+(?:\.\d+)?(?:e-?\d+)?", re.IGNORECASE
)


@cache
def _schema() -> dict[str, Any]:
    path = Path(__file__).with_name("schemas") / "saus.schema.yaml"
    return yaml.safe_load(path.read_text())


def sau_files(paper_dir: Path) -> list[Path]:
    """The SAU sources present in a paper folder, in import order."""
    return [paper_dir / name for name in SAU_FILES if (paper_dir / name).is_file()]


def _row(paper: str, **fields: Any) -> dict[str, Any]:
    row: dict[str, Any] = {col: None for col in SAU_COLUMNS + EXTRA_COLUMNS}
    row.update(paper=paper, weight=1.0, grounded=None)
    row.update(fields)
    return row


def _load_structured(path: Path) -> Any:
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(path, None, "not UTF-8 text") from None
    try:
        if path.suffix == ".json":
            return json.loads(text)
        return yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0]
        raise UserError(path, None, f"cannot parse: {first}") from None


def _field_path(error: Any) -> str:
    parts = [str(p) for p in error.absolute_path]
    out = ""
    for part in parts:
        out += f"[{part}]" if part.isdigit() else (f".{part}" if out else part)
    return out or "(top level)"


def import_curated(path: Path, paper: str) -> list[dict[str, Any]]:
    """Our own saus.yaml format, validated against the described JSON schema."""
    import jsonschema

    data = _load_structured(path)
    if isinstance(data, dict) and any(d in data for d in DIMENSIONS) and "saus" not in data:
        return import_sabench(path, paper, data)
    _check_expected(data, path)
    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        field = _field_path(err)
        if isinstance(data, dict) and err.absolute_path and err.absolute_path[0] == "saus":
            idx = err.absolute_path[1] if len(err.absolute_path) > 1 else None
            if isinstance(idx, int) and isinstance(data["saus"][idx], dict):
                sau_id = data["saus"][idx].get("id")
                if sau_id:
                    field = f"{field} (SAU {sau_id})"
        raise UserError(path, field, err.message)
    if data.get("paper") not in (None, paper):
        raise UserError(path, "paper", f"says {data['paper']!r} but the folder is {paper!r}")
    rows = []
    for item in data["saus"]:
        expected = item.get("expected")
        check = item.get("check")
        if item.get("check_file"):
            check = _read_check_file(path, item)
        rows.append(
            _row(
                paper,
                sau_id=item["id"],
                dimension=item["dimension"],
                claim=item["claim"].strip(),
                source=item["source"].strip(),
                weight=float(item.get("weight", 1)),
                origin="curated",
                check=check,
                expected=json.dumps(expected, sort_keys=True) if expected is not None else None,
            )
        )
    return rows


def _check_expected(data: Any, path: Path) -> None:
    """``expected`` entries must be usable numbers and tolerances: one line naming the SAU."""
    from sabench.checks import ExpectedError, parse_expected

    if not isinstance(data, dict) or not isinstance(data.get("saus"), list):
        return
    for i, item in enumerate(data["saus"]):
        if not isinstance(item, dict) or item.get("expected") is None:
            continue
        try:
            parse_expected(item["expected"])
        except ExpectedError as exc:
            field = f"saus[{i}].expected{exc.field} (SAU {item.get('id', '?')})"
            raise UserError(path, field, exc.message) from None


def _read_check_file(path: Path, item: dict[str, Any]) -> str:
    """A check file inside the SAU file's folder (never outside it), as UTF-8 text."""
    where = f"saus.check_file (SAU {item['id']})"
    if item.get("check"):
        raise UserError(path, where, "give either check or check_file, not both")
    folder = path.parent.resolve()
    check_path = (path.parent / item["check_file"]).resolve()
    if folder not in check_path.parents:
        raise UserError(path, where, f"{item['check_file']!r} is outside {folder}")
    if not check_path.is_file():
        raise UserError(path, where, f"{check_path} not found")
    try:
        return check_path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UserError(path, where, f"{check_path} is not UTF-8 text") from None


def import_sabench(path: Path, paper: str, data: Any = None) -> list[dict[str, Any]]:
    """SA-Bench's released sau.json: claims grouped by dimension."""
    data = _load_structured(path) if data is None else data
    if not isinstance(data, dict):
        raise UserError(path, None, "expected an object with keys D1..D4")
    rows = []
    for dim in DIMENSIONS:
        items = data.get(dim, [])
        if not isinstance(items, list):
            raise UserError(path, dim, "must be a list of {id, claim, source}")
        for i, item in enumerate(items):
            for key in ("id", "claim"):
                if not isinstance(item, dict) or not str(item.get(key, "")).strip():
                    raise UserError(path, f"{dim}[{i}].{key}", "missing or empty")
            rows.append(
                _row(
                    paper,
                    sau_id=str(item["id"]),
                    dimension=dim,
                    claim=str(item["claim"]).strip(),
                    source=str(item.get("source") or "").strip(),
                    origin="sabench",
                )
            )
    unknown = [k for k in data if re.fullmatch(r"D\d+", k) and k not in DIMENSIONS]
    if unknown:
        raise UserError(path, unknown[0], "unknown dimension (expected D1, D2, D3 or D4)")
    return rows


def rubric_dimension(requirement: str, finegrained: str | None) -> str:
    """Map a rubric leaf onto a dimension; setup leaves that state a named value are D1."""
    dim = RUBRIC_DIMENSIONS.get(finegrained or "", "D3")
    if finegrained == "Experimental Setup" and _NUMBER_WITH_NAME.search(requirement):
        return "D1"
    return dim


def import_rubric(path: Path, paper: str) -> list[dict[str, Any]]:
    """PaperBench rubric.json: every leaf becomes an SAU carrying the path of its parents."""
    data = _load_structured(path)
    rows: list[dict[str, Any]] = []

    def walk(node: Any, ids: list[str], weights: list[float], where: str) -> None:
        if not isinstance(node, dict) or "id" not in node:
            raise UserError(path, where, "rubric node without an id")
        children = node.get("sub_tasks") or []
        if not children:
            category = node.get("task_category")
            fine = node.get("finegrained_task_category")
            requirement = str(node.get("requirements", "")).strip()
            rows.append(
                _row(
                    paper,
                    sau_id=str(node["id"]),
                    dimension=rubric_dimension(requirement, fine),
                    claim=requirement,
                    source="",
                    weight=float(node.get("weight", 1)),
                    origin="paperbench",
                    category=" / ".join(c for c in (category, fine) if c) or None,
                    parent="/".join(ids),
                    parent_weights=list(weights),
                )
            )
            return
        for i, child in enumerate(children):
            walk(
                child,
                [*ids, str(node["id"])],
                [*weights, float(node.get("weight", 1))],
                f"{where}.sub_tasks[{i}]",
            )

    walk(data, [], [], "(root)")
    return rows


def import_sau_file(path: Path, paper: str) -> list[dict[str, Any]]:
    """One SAU file, its format read from its name (``saus.yaml``, ``sau.json``, ``rubric.json``) or,
    for any other name (``saus_path``, e.g. SA-Bench's ``saus/<paper>.json``), from its content."""
    if path.name in CURATED_FILES:
        return import_curated(path, paper)
    if path.name in SABENCH_FILES:
        return import_sabench(path, paper)
    if path.name in RUBRIC_FILES:
        return import_rubric(path, paper)
    if not path.is_file():
        raise UserError(path, None, "SAU file not found")
    if path.suffix.lower() not in (".json", ".yaml", ".yml"):
        raise UserError(path, None, "unknown SAU file format (expected .yaml or .json)")
    data = _load_structured(path)
    if isinstance(data, dict) and ("sub_tasks" in data or "requirements" in data):
        return import_rubric(path, paper)
    return import_curated(path, paper)


def import_paper_saus(paper_dir: Path, sources: list[Path] | None = None) -> list[dict[str, Any]]:
    """Every SAU source of a paper folder (or the files ``sources``), with duplicate ids refused."""
    paper = paper_dir.name
    files = list(sources) if sources else sau_files(paper_dir)
    if not files:
        raise UserError(paper_dir, None, f"no SAU file (one of {', '.join(SAU_FILES)})")
    rows: list[dict[str, Any]] = []
    for path in files:
        rows.extend(import_sau_file(Path(path), paper))
    seen: dict[str, Path] = {}
    for row in rows:
        if row["sau_id"] in seen:
            raise UserError(
                files[0] if len(files) == 1 else paper_dir,
                "id",
                f"duplicate SAU id {row['sau_id']!r}",
            )
        seen[row["sau_id"]] = paper_dir
    return rows


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+(?:\.[0-9]+)?", text.lower())


def is_grounded(claim: str, source: str, text: str, lowered: str | None = None) -> bool:
    """A quote found (fuzzily) in the paper, or a claim whose words and numbers the paper holds."""
    from rapidfuzz import fuzz

    lowered = lowered if lowered is not None else text.lower()
    quote = source.strip().strip("\"'“”").lower()
    if len(quote) >= 15 and (
        quote in lowered or fuzz.partial_ratio(quote, lowered) >= GROUNDING_THRESHOLD
    ):
        return True
    vocab = set(_words(lowered))
    words = [w for w in _words(claim) if len(w) > 3 or any(c.isdigit() for c in w)]
    if not words:
        return False
    numbers = [w for w in words if any(c.isdigit() for c in w)]
    if numbers and not all(n in vocab or n in lowered for n in numbers):
        return False
    return sum(w in vocab for w in words) / len(words) >= 0.6


def ground(rows: list[dict[str, Any]], text: str | None) -> None:
    """Set ``grounded`` on every row; None when there is no paper text to check against."""
    lowered = text.lower() if text else None
    for row in rows:
        row["grounded"] = (
            None if not text else is_grounded(row["claim"], row["source"] or "", text, lowered)
        )


def sau_set_hash(rows: list[dict[str, Any]]) -> str:
    """Content hash of a paper's SAU set; judgments name it so versions never mix."""
    keys = ("sau_id", "dimension", "claim", "source", "weight", "parent", "check", "expected")
    canon = sorted(json.dumps([row.get(k) for k in keys], default=str) for row in rows)
    return hashlib.sha256("\n".join(canon).encode()).hexdigest()[:16]


def write_saus(rows: list[dict[str, Any]], out: Path) -> str:
    import pandas as pd

    from sabench.io import write_parquet

    digest = sau_set_hash(rows)
    frame = pd.DataFrame(rows, columns=list(SAU_COLUMNS + EXTRA_COLUMNS))
    frame["weight"] = frame["weight"].astype(float)
    frame["grounded"] = frame["grounded"].astype("boolean")
    write_parquet(out, frame, sau_set_hash=digest)
    return digest


def build_saus(
    paper_dir: Path,
    paper_text_path: Path | None,
    out: Path,
    sources: list[Path] | None = None,
) -> list[dict[str, Any]]:
    rows = import_paper_saus(paper_dir, sources)
    text = paper_text_path.read_text(encoding="utf-8") if paper_text_path else None
    ground(rows, text)
    write_saus(rows, out)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Import the SAUs of one paper folder.")
    parser.add_argument("paper_dir", type=Path)
    parser.add_argument("--text", type=Path, help="the ingested paper.md, for grounding")
    parser.add_argument(
        "--sources", type=Path, nargs="*", help="SAU files (default: those in the paper folder)"
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        rows = build_saus(args.paper_dir, args.text, args.out, args.sources)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    grounded = sum(bool(r["grounded"]) for r in rows)
    print(f"{args.paper_dir.name}: {len(rows)} SAUs, {grounded} grounded -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
