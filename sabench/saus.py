"""Import Semantic Alignment Units (SAUs) from curated files and check them against the paper text.

Sources, all found in the paper folder and imported together (ids must stay unique):
- ``saus.yaml`` / ``saus.yml`` / ``saus.json``: our curated format (``schemas/saus.schema.yaml``);
  a ``saus.json`` shaped like SA-Bench's release is read as SA-Bench. An SAU may name another of
  the file as its ``parent``: the row's ``parent`` is then the path of its ancestors from the top
  (``a/b``, as for rubric leaves, with the ancestors' weights in ``parent_weights``);
- ``sau.json``: SA-Bench's release format ``{paper_id, paper_title, D1: [{id, claim, source}], ...}``;
- ``rubric.json``: a PaperBench rubric tree; every leaf becomes an SAU that keeps its weight, task
  category and the path of its parents (``parent`` ids and ``parent_weights``) so the weighted tree
  score can be computed.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from sabench.contracts import DIMENSIONS, SAU_COLUMNS
from sabench.errors import UserError, UserErrors, parse_error
from sabench.steps import ArgumentParser, command, step

CURATED_FILES = ("saus.yaml", "saus.yml", "saus.json")
SABENCH_FILES = ("sau.json",)
RUBRIC_FILES = ("rubric.json",)
SAU_FILES = CURATED_FILES + SABENCH_FILES + RUBRIC_FILES
#: Extra columns beyond the contract that rubric imports fill.
EXTRA_COLUMNS = ("parent_weights",)

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


def sau_row(paper: str, **fields: Any) -> dict[str, Any]:
    """One SAU row with every column, for importers and extraction alike."""
    row: dict[str, Any] = {col: None for col in SAU_COLUMNS + EXTRA_COLUMNS}
    row.update(paper=paper, weight=1.0, grounded=None)
    row.update(fields)
    return row


def _load_structured(path: Path) -> Any:
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise UserError(path, None, "SAU file not found") from None
    except UnicodeDecodeError:
        raise UserError(path, None, "not UTF-8 text") from None
    try:
        if path.suffix == ".json":
            return json.loads(text)
        return yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise parse_error(path, exc) from None


def _field_path(error: Any) -> str:
    parts = [str(p) for p in error.absolute_path]
    out = ""
    for part in parts:
        out += f"[{part}]" if part.isdigit() else (f".{part}" if out else part)
    return out or "(top level)"


#: One problem of an SAU file: (field, message).
Problem = tuple[str, str]


def _schema_problems(data: Any) -> list[Problem]:
    """Every schema error, each named by its field and, inside an SAU, the SAU's id; of a oneOf's
    alternatives the most specific error (as config validation reports it)."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(_schema())
    problems = []
    for err in sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path]):
        while err.context:
            err = min(
                err.context, key=lambda e: (-len(e.absolute_path), e.validator in ("type", "enum"))
            )
        field = _field_path(err)
        where = list(err.absolute_path)
        if len(where) > 1 and where[0] == "saus" and isinstance(where[1], int):
            item = data["saus"][where[1]]
            if isinstance(item, dict) and item.get("id"):
                field = f"{field} (SAU {item['id']})"
        problems.append((field, err.message))
    return problems


def import_curated(path: Path, paper: str) -> list[dict[str, Any]]:
    """Our own saus.yaml format, validated against the described JSON schema; every problem of
    the file is reported at once."""
    data = _load_structured(path)
    if isinstance(data, dict) and any(d in data for d in DIMENSIONS) and "saus" not in data:
        return import_sabench(path, paper, data)
    problems = _expected_problems(data) + _parent_problems(data)
    # an unusable ``expected`` is said once, in its own words, not again by the schema
    said = {field.split(" (SAU")[0].split(".expected")[0] for field, _ in problems}
    problems += [
        (field, message)
        for field, message in _schema_problems(data)
        if not (".expected" in field and field.split(".expected")[0] in said)
    ]
    if isinstance(data, dict) and data.get("paper") not in (None, paper):
        problems.append(("paper", f"says {data['paper']!r} but the folder is {paper!r}"))
    problems.sort(key=_sau_index)
    rows = []
    items = data["saus"] if not problems else []
    by_id = {item["id"]: item for item in items}
    for item in items:
        expected = item.get("expected")
        check = item.get("check")
        if item.get("check_file"):
            check, problem = _read_check_file(path, item)
            if problem:
                problems.append(problem)
                continue
        ancestors = _ancestors(item, by_id)
        rows.append(
            sau_row(
                paper,
                sau_id=item["id"],
                dimension=item["dimension"],
                claim=item["claim"].strip(),
                source=item["source"].strip(),
                weight=float(item.get("weight", 1)),
                origin=item.get("origin", "curated"),
                category=item.get("category"),
                parent="/".join(a["id"] for a in ancestors) or None,
                parent_weights=[float(a.get("weight", 1)) for a in ancestors] or None,
                check=check,
                expected=json.dumps(expected, sort_keys=True) if expected is not None else None,
            )
        )
    if problems:
        raise UserErrors(path, problems)
    return rows


def _sau_index(problem: Problem) -> int:
    """Problems in the order of the SAUs they are in (those of the whole file first)."""
    match = re.match(r"saus\[(\d+)\]", problem[0])
    return int(match.group(1)) if match else -1


def _expected_problems(data: Any) -> list[Problem]:
    """``expected`` entries must be usable numbers and tolerances: each problem names the SAU."""
    from sabench.checks import ExpectedError, parse_expected

    if not isinstance(data, dict) or not isinstance(data.get("saus"), list):
        return []
    problems = []
    for i, item in enumerate(data["saus"]):
        if not isinstance(item, dict) or item.get("expected") is None:
            continue
        try:
            parse_expected(item["expected"])
        except ExpectedError as exc:
            problems.append(
                (f"saus[{i}].expected{exc.field} (SAU {item.get('id', '?')})", exc.message)
            )
    return problems


def _parent_problems(data: Any) -> list[Problem]:
    """``parent`` must name another SAU of the file, and following parents must end: each problem
    names the SAU (a cycle once, at the first of its SAUs in the file)."""
    if not isinstance(data, dict) or not isinstance(data.get("saus"), list):
        return []
    items = [item if isinstance(item, dict) else {} for item in data["saus"]]
    parent = {
        item["id"]: item["parent"]
        for item in items
        if isinstance(item.get("id"), str) and isinstance(item.get("parent"), str)
    }
    ids = {item.get("id") for item in items}
    problems, in_cycles = [], set()
    for i, item in enumerate(items):
        sau, named = item.get("id"), item.get("parent")
        if not isinstance(named, str):
            continue  # none, or the schema's to say
        field = f"saus[{i}].parent (SAU {sau or '?'})"
        if named not in ids:
            problems.append((field, f"{named!r} is no SAU of this file"))
            continue
        chain = [sau]
        while chain[-1] in parent and parent[chain[-1]] not in chain:
            chain.append(parent[chain[-1]])
        if parent.get(chain[-1]) == sau and sau not in in_cycles:
            in_cycles.update(chain)
            loop = " -> ".join(map(str, [*chain, sau]))
            problems.append((field, f"parents form a cycle: {loop}"))
    return problems


def _ancestors(item: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The SAUs above ``item`` from the top down (parents checked: they end)."""
    chain: list[dict[str, Any]] = []
    while item.get("parent"):
        item = by_id[item["parent"]]
        chain.insert(0, item)
    return chain


def _read_check_file(path: Path, item: dict[str, Any]) -> tuple[str | None, Problem | None]:
    """A check file inside the SAU file's folder (never outside it), as UTF-8 text; or what is
    wrong with it."""
    where = f"saus.check_file (SAU {item['id']})"
    if item.get("check"):
        return None, (where, "give either check or check_file, not both")
    folder = path.parent.resolve()
    check_path = (path.parent / item["check_file"]).resolve()
    if folder not in check_path.parents:
        return None, (where, f"{item['check_file']!r} is outside {folder}")
    if not check_path.is_file():
        return None, (where, f"{check_path} not found")
    try:
        return check_path.read_text(encoding="utf-8"), None
    except UnicodeDecodeError:
        return None, (where, f"{check_path} is not UTF-8 text")


def import_sabench(path: Path, paper: str, data: Any = None) -> list[dict[str, Any]]:
    """SA-Bench's released sau.json: claims grouped by dimension; every problem reported at once."""
    data = _load_structured(path) if data is None else data
    if not isinstance(data, dict):
        raise UserError(path, None, f"expected an object with keys D1..D4, not {_shape(data)}")
    rows = []
    problems: list[Problem] = [
        (k, "unknown dimension (expected D1, D2, D3 or D4)")
        for k in data
        if re.fullmatch(r"D\d+", k) and k not in DIMENSIONS
    ]
    for dim in DIMENSIONS:
        items = data.get(dim, [])
        if not isinstance(items, list):
            problems.append((dim, f"must be a list of {{id, claim, source}}, not {_shape(items)}"))
            continue
        for i, item in enumerate(items):
            missing = [
                key
                for key in ("id", "claim")
                if not isinstance(item, dict) or not str(item.get(key, "")).strip()
            ]
            problems += [(f"{dim}[{i}].{key}", "missing or empty") for key in missing]
            if missing:
                continue
            rows.append(
                sau_row(
                    paper,
                    sau_id=str(item["id"]),
                    dimension=dim,
                    claim=str(item["claim"]).strip(),
                    source=str(item.get("source") or "").strip(),
                    origin="sabench",
                )
            )
    if problems:
        raise UserErrors(path, problems)
    return rows


def _shape(value: Any) -> str:
    """What a JSON/YAML value is, for messages ("a list of 3 items", "a string")."""
    if isinstance(value, list):
        return f"a list of {len(value)} item{'s' if len(value) != 1 else ''}"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "nothing" if value is None else f"a {type(value).__name__.replace('str', 'string')}"


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
    problems: list[Problem] = []
    node_shape = "an object {id, requirements, weight, sub_tasks: [...]}"

    def walk(node: Any, ids: list[str], weights: list[float], where: str) -> None:
        if not isinstance(node, dict):
            problems.append((where, f"expected {node_shape}, not {_shape(node)}"))
            return
        if "id" not in node:
            problems.append((where, "rubric node without an id"))
            return
        children = node.get("sub_tasks") or []
        if not isinstance(children, list):
            problems.append((f"{where}.sub_tasks", f"expected a list, not {_shape(children)}"))
            return
        weight = node.get("weight", 1)
        if isinstance(weight, bool) or not isinstance(weight, int | float) or weight < 0:
            problems.append((f"{where}.weight", f"expected a number >= 0, not {weight!r}"))
            return
        if not children:
            category = node.get("task_category")
            fine = node.get("finegrained_task_category")
            requirement = str(node.get("requirements", "")).strip()
            rows.append(
                sau_row(
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
    if problems:
        raise UserErrors(path, problems)
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
    seen: set[str] = set()
    duplicates: list[Problem] = []
    for row in rows:
        if row["sau_id"] in seen:
            duplicates.append(("id", f"duplicate SAU id {row['sau_id']!r}"))
        seen.add(row["sau_id"])
    if duplicates:
        raise UserErrors(files[0] if len(files) == 1 else paper_dir, duplicates)
    return rows


def ground(rows: list[dict[str, Any]], text: str | None) -> None:
    """Set ``grounded`` on every row (:func:`sabench.grounding.ground`); None when there is no
    paper text to check against."""
    from sabench.grounding import PaperText
    from sabench.grounding import ground as ground_one

    paper = PaperText(text) if text else None
    for row in rows:
        row["grounded"] = (
            None if paper is None else ground_one(row["claim"], row["source"] or "", paper).grounded
        )


def sau_set_hash(rows: list[dict[str, Any]]) -> str:
    """Content hash of a paper's SAU set; judgments name it so versions never mix."""
    keys = ("sau_id", "dimension", "claim", "source", "weight", "parent", "check", "expected")
    canon = sorted(json.dumps([row.get(k) for k in keys], default=str) for row in rows)
    return hashlib.sha256("\n".join(canon).encode()).hexdigest()[:16]


def write_saus(rows: list[dict[str, Any]], out: Path) -> str:
    """The SAU table, through pyarrow alone (pandas' import was most of the step's time)."""
    import pyarrow as pa

    from sabench.io import arrow_table, write_table

    digest = sau_set_hash(rows)
    types = {"weight": pa.float64(), "grounded": pa.bool_()}
    write_table(out, arrow_table(rows, SAU_COLUMNS + EXTRA_COLUMNS, types), sau_set_hash=digest)
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


@command
def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(description="Import the SAUs of one paper folder.")
    parser.add_argument("paper_dir", type=Path)
    parser.add_argument("--text", type=Path, help="the ingested paper.md, for grounding")
    parser.add_argument(
        "--sources", type=Path, nargs="*", help="SAU files (default: those in the paper folder)"
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    from sabench.io import spare_pandas

    spare_pandas()  # the table is written by pyarrow alone
    rows = build_saus(args.paper_dir, args.text, args.out, args.sources)
    ungrounded = [r["sau_id"] for r in rows if r["grounded"] is False]
    with step(None, "saus") as log:  # the rule's log lines; a user error above returns 2
        log.info("%d SAUs, %d not grounded in the paper text", len(rows), len(ungrounded))
        for sau_id in ungrounded:
            log.warning("SAU %s: claim or quote not found in the paper text", sau_id)
    return 0


if __name__ == "__main__":
    sys.exit(main())
