"""SAU import: our curated YAML, SA-Bench's sau.json, PaperBench's rubric.json, grounding, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from sabench import SCHEMA_VERSION
from sabench.errors import UserError
from sabench.grounding import PaperText, ground
from sabench.io import read_parquet_metadata
from sabench.saus import (
    build_saus,
    import_paper_saus,
    import_rubric,
    import_sabench,
    sau_set_hash,
)

PAPER_TEXT = (
    "# Ridge\n\n## 3 Experimental setup\nWe train with a learning rate of 0.05 for 200 epochs. "
    "The baseline is the mean predictor and the metric is RMSE.\n"
)
CURATED = """
paper: ridge
saus:
  - id: r-D1-001
    dimension: D1
    claim: "Gradient descent uses a learning rate of 0.05."
    source: "We train with a learning rate of 0.05 for 200 epochs."
  - id: r-D3-001
    dimension: D3
    claim: "The `mean_predictor` baseline is compared."
    source: "3 Experimental setup"
    weight: 2
    expected: {metric: rmse, value: 0.5, tolerance: "5%"}
"""


def _paper(tmp_path: Path, name: str = "ridge", **files: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    for fname, content in files.items():
        (folder / fname.replace("_", ".", 1) if "_" in fname else folder / fname).write_text(
            content
        )
    return folder


def test_curated_yaml_roundtrip(tmp_path: Path) -> None:
    folder = tmp_path / "ridge"
    folder.mkdir()
    (folder / "saus.yaml").write_text(CURATED)
    (tmp_path / "paper.md").write_text(PAPER_TEXT)
    rows = build_saus(folder, tmp_path / "paper.md", tmp_path / "saus.parquet")
    frame = pd.read_parquet(tmp_path / "saus.parquet")
    assert list(frame["sau_id"]) == ["r-D1-001", "r-D3-001"]
    assert list(frame["weight"]) == [1.0, 2.0]
    assert set(frame["origin"]) == {"curated"}
    assert bool(frame["grounded"].iloc[0]) is True
    assert json.loads(frame["expected"].iloc[1])["tolerance"] == "5%"
    meta = read_parquet_metadata(tmp_path / "saus.parquet")
    assert meta["sau_set_hash"] == sau_set_hash(rows) and meta["schema_version"] == SCHEMA_VERSION


@pytest.mark.parametrize(
    ("mutation", "field", "message"),
    [
        (
            lambda s: s.replace("dimension: D1", "dimension: D7"),
            "saus[0].dimension",
            "is not one of",
        ),
        (
            lambda s: s.replace(
                '    claim: "Gradient descent uses a learning rate of 0.05."\n', ""
            ),
            "saus[0]",
            "'claim' is a required property",
        ),
        (lambda s: s.replace("r-D3-001", "r-D1-001"), "id", "duplicate SAU id 'r-D1-001'"),
        (lambda s: s.replace("paper: ridge", "paper: other"), "paper", "the folder is 'ridge'"),
        (
            lambda s: s.replace("value: 0.5", 'value: "half"'),
            "saus[1].expected.value (SAU r-D3-001)",
            "'half' is not a number",
        ),
        (
            lambda s: s.replace("value: 0.5", "value: 1e-4"),
            "saus[1].expected.value (SAU r-D3-001)",
            "(YAML reads 1e-4 as text: write 1.0e-4)",
        ),
        (
            lambda s: s.replace('tolerance: "5%"', 'tolerance: "five"'),
            "saus[1].expected.tolerance (SAU r-D3-001)",
            "'five' is not a tolerance",
        ),
        (
            lambda s: s.replace('tolerance: "5%"', "tolerance: -1"),
            "saus[1].expected.tolerance (SAU r-D3-001)",
            "must be a number >= 0",
        ),
        (
            lambda s: s.replace(
                'expected: {metric: rmse, value: 0.5, tolerance: "5%"}',
                "expected: [{metric: rmse, value: 0.5}, {metric: r2, value: .nan}]",
            ),
            "saus[1].expected[1].value (SAU r-D3-001)",
            "is not a finite number",
        ),
        (
            lambda s: s.replace("metric: rmse,", "metric: rmse, tol: 1,"),
            "saus[1].expected.tol (SAU r-D3-001)",
            "unknown key",
        ),
        (
            lambda s: s.replace("    weight: 2\n", "    weight: 2\n    check_file: ../x.py\n"),
            "check_file (SAU r-D3-001)",
            "is outside",
        ),
        (
            lambda s: s.replace("    weight: 2\n", "    weight: 2\n    check_file: none.py\n"),
            "check_file (SAU r-D3-001)",
            "not found",
        ),
        (
            lambda s: s.replace(
                "    weight: 2\n", "    weight: 2\n    check: pass\n    check_file: c.py\n"
            ),
            "check_file (SAU r-D3-001)",
            "either check or check_file",
        ),
        (lambda s: s + "  - [not, a, mapping\n", None, "cannot parse"),
    ],
)
def test_curated_errors_name_file_and_field(
    tmp_path: Path, mutation, field: str | None, message: str
) -> None:
    folder = tmp_path / "ridge"
    folder.mkdir()
    (folder / "saus.yaml").write_text(mutation(CURATED))
    with pytest.raises(UserError) as info:
        import_paper_saus(folder)
    text = str(info.value)
    assert str(folder / "saus.yaml") in text or str(folder) in text
    if field:
        assert field in text
    assert message in text
    assert "\n" not in text


def test_sau_id_error_names_the_sau(tmp_path: Path) -> None:
    folder = tmp_path / "ridge"
    folder.mkdir()
    (folder / "saus.yaml").write_text(CURATED.replace("dimension: D1", "dimension: D9"))
    with pytest.raises(UserError, match=r"SAU r-D1-001"):
        import_paper_saus(folder)


def test_check_file_and_inline_check_are_imported(tmp_path: Path) -> None:
    folder = tmp_path / "ridge"
    (folder / "checks").mkdir(parents=True)
    (folder / "checks" / "lr.py").write_text("import model\nassert model.LR == 0.05\n")
    text = CURATED.replace(
        '    source: "We train with a learning rate of 0.05 for 200 epochs."\n',
        '    source: "We train with a learning rate of 0.05 for 200 epochs."\n'
        "    check_file: checks/lr.py\n",
    ).replace("    weight: 2\n", "    weight: 2\n    check: |\n      assert True\n")
    (folder / "saus.yaml").write_text(text)
    rows = {r["sau_id"]: r for r in import_paper_saus(folder)}
    assert rows["r-D1-001"]["check"] == "import model\nassert model.LR == 0.05\n"
    assert rows["r-D3-001"]["check"] == "assert True\n"
    before = sau_set_hash(list(rows.values()))
    (folder / "checks" / "lr.py").write_text("assert False\n")
    assert sau_set_hash(import_paper_saus(folder)) != before, "a check edit changes the SAU set"


def test_missing_sau_file(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    with pytest.raises(UserError, match="no SAU file"):
        import_paper_saus(tmp_path / "p")


def test_sabench_shape_and_unknown_dimension(tmp_path: Path) -> None:
    path = tmp_path / "sau.json"
    path.write_text(
        json.dumps(
            {"paper_id": "x", "D1": [{"id": "a", "claim": "lr 0.1", "source": "S3"}], "D5": []}
        )
    )
    with pytest.raises(UserError, match="D5: unknown dimension"):
        import_sabench(path, "x")
    path.write_text(json.dumps({"D2": [{"id": "a", "claim": ""}]}))
    with pytest.raises(UserError, match=r"D2\[0\]\.claim: missing or empty"):
        import_sabench(path, "x")


def is_grounded(claim: str, source: str, text: str) -> bool:
    return ground(claim, source, PaperText(text)).grounded


def test_grounding() -> None:
    assert is_grounded("anything", "learning rate of 0.05 for 200 epochs", PAPER_TEXT)
    assert is_grounded(
        "The learning rate is 0.05 and training lasts 200 epochs", "Sec 3", PAPER_TEXT
    )
    assert not is_grounded("The learning rate is 0.5", "Sec 3", PAPER_TEXT)
    assert not is_grounded("Transformers with rotary embeddings", "Appendix", PAPER_TEXT)


@pytest.mark.parametrize(
    ("paper", "claim", "source", "grounded"),
    [
        # a near-verbatim quote with another number is a wrong quote
        ("We use a learning rate of 0.1.", "lr 0.1", "We use a learning rate of 0.2.", False),
        # 0.2 is not read inside 0.25 or 10.2, neither in a quote nor in a claim
        ("We use a learning rate of 0.25.", "lr 0.25", "We use a learning rate of 0.2", False),
        ("Weight decay is 10.2 here.", "The weight decay is 0.2 here", "Sec 2", False),
        # the quote is right, the claim's number is not in the paper
        ("We use a learning rate of 0.1.", "lr 0.2", "We use a learning rate of 0.1.", False),
        # one value, other spellings
        ("We use a learning rate of 1e-3 here.", "The learning rate is 0.001", "Sec 2", True),
        ("We use a learning rate of 10^-3.", "lr 1e-3", "We use a learning rate of 10^-3.", True),
        ("Dropout of 10% is used.", "Dropout is 0.1", "Dropout of 10% is used.", True),
    ],
)
def test_grounding_checks_numbers_as_values(
    paper: str, claim: str, source: str, grounded: bool
) -> None:
    assert is_grounded(claim, source, paper) is grounded


LONG_PAPER = (
    "# Method\n\n## 4.2 Training details\n"
    "We optimise the network with **stochastic gradient descent** and a learning rate of 0.07,\n"
    "decayed by a cosine schedule, for 90 epochs on 8 GPUs. Weight decay is 5e-4.\n"
    "The learning rate and the optimiser are shared by every baseline we compare with, using Adam "
    "and cosine decay where a baseline's authors did.\n"
)
#: the claim's words are all in the paper: only the quote decides
LONG_CLAIM = "The learning rate of 0.07 is used with Adam and cosine decay."


@pytest.mark.parametrize(
    ("source", "grounded"),
    [
        # absent: words of the paper, an order and a sentence it never has
        ("We train with a learning rate of 0.07 using Adam and cosine decay", False),
        ("...learning rate of 0.07 using Adam and cosine decay", False),
        (
            "The optimiser is Adam with a learning rate of 0.07 and cosine decay for 90 epochs",
            False,
        ),
        # present, verbatim
        ("a learning rate of 0.07,\ndecayed by a cosine schedule, for 90 epochs", True),
        # present, with other whitespace and markdown
        (
            "optimise the network with stochastic   gradient descent and a learning rate of 0.07",
            True,
        ),
        ("We optimise the network with *stochastic gradient descent*", True),
        ("`Weight decay is 5e-4.`", True),
        # a place in the paper, not a quote: the claim's words ground it
        ("Section 4.2, Table 1", True),
        ("4.2 Training details", True),
        ("Appendix B.1 (Vision Transformer)", True),
        ("Section 4.2 pseudocode block", True),
        ("Section 2.6 step 3; Section 2.5", True),
        ("Section 4.1, Table 6 / VAE from StableDiffusion (SD VAE: 8x downsample, C=4)", True),
        # a place's name followed by a sentence quotes what is there: absent, it grounds nothing
        ("Table 2 shows that we train with Adam and cosine decay at 0.07", False),
        ("Algorithm 1 trains the network with a learning rate of 0.07 and Adam", False),
        ("Section 4.2: we use a learning rate of 0.07 with Adam", False),
        ("Section 4.2: We use a learning rate of 0.07 with Adam", False),
        ("Section 4.2: We optimise the network with stochastic gradient descent", True),
    ],
)
def test_a_quote_the_paper_does_not_hold_grounds_nothing(source: str, grounded: bool) -> None:
    assert is_grounded(LONG_CLAIM, source, LONG_PAPER) is grounded


def test_generated_long_quotes_are_grounded_only_when_present() -> None:
    """Every 12-word window of the paper is grounded as a quote; the same window with one word
    replaced by a word the paper has elsewhere is not, although the claim's words all match."""
    import random

    words = " ".join(LONG_PAPER.split("\n")[3:]).replace("**", "").split()
    rng = random.Random(7)
    paper = PaperText(LONG_PAPER)
    for start in range(0, len(words) - 12, 3):
        window = words[start : start + 12]
        quote = " ".join(window)
        assert ground(LONG_CLAIM, quote, paper).grounded, quote
        i = rng.randrange(1, 11)
        swapped = [*window[:i], "transformer", "pretraining", "distillation", *window[i + 1 :]]
        assert not ground(LONG_CLAIM, " ".join(swapped), paper).grounded, swapped
        assert ground(LONG_CLAIM, "  ".join(f"_{w}_" for w in window), paper).grounded, window


def test_curated_sau_quoting_a_wrong_number_is_not_grounded(tmp_path: Path) -> None:
    """The curated import grounds as extraction does: the quote's numbers must be the paper's."""
    folder = tmp_path / "ridge"
    folder.mkdir()
    (folder / "saus.yaml").write_text(
        "paper: ridge\nsaus:\n"
        "  - {id: r-D1-001, dimension: D1, claim: Gradient descent uses a learning rate of 0.2.,"
        " source: We train with a learning rate of 0.2 for 200 epochs.}\n"
        "  - {id: r-D1-002, dimension: D1, claim: Gradient descent uses a learning rate of 0.1.,"
        " source: We train with a learning rate of 0.1 for 200 epochs.}\n"
    )
    paper = tmp_path / "paper.md"
    paper.write_text(PAPER_TEXT.replace("0.05", "0.1"))
    rows = build_saus(folder, paper, tmp_path / "saus.parquet")
    assert {r["sau_id"]: r["grounded"] for r in rows} == {"r-D1-001": False, "r-D1-002": True}


@pytest.mark.shared
def test_all_sabench_saus_import(sabench_data: Path) -> None:
    total = 0
    for path in sorted((sabench_data / "saus").glob("*.json")):
        rows = import_sabench(path, path.stem)
        assert {r["dimension"] for r in rows} <= {"D1", "D2", "D3", "D4"}
        assert len({r["sau_id"] for r in rows}) == len(rows)
        total += len(rows)
    assert total >= 1000


@pytest.mark.shared
def test_all_paperbench_rubrics_import(paperbench_data: Path) -> None:
    split = [
        p for p in sorted((paperbench_data / "rubrics").iterdir()) if (p / "rubric.json").is_file()
    ]
    counts = {p.name: len(import_rubric(p / "rubric.json", p.name)) for p in split}
    assert len(counts) == 23
    assert sum(counts.values()) == 8921  # all 23 rubrics; the official 20-paper split holds 8,316
    rows = import_rubric(paperbench_data / "rubrics" / "pinn" / "rubric.json", "pinn")
    leaf = rows[0]
    assert leaf["parent"].count("/") == len(leaf["parent_weights"]) - 1
    assert leaf["category"].startswith(("Code Development", "Code Execution", "Result Analysis"))
    assert all(r["weight"] > 0 for r in rows)


NESTED = """
paper: ridge
saus:
  - {id: fit, dimension: D4, claim: "`fit` runs the steps.", source: "2 Method", weight: 3,
     origin: researchcodebench, category: model.py}
  - {id: step, dimension: D2, claim: "`step` moves w.", source: "2 Method", parent: fit}
  - {id: lr, dimension: D1, claim: "The rate is 0.05.", source: "2 Method", parent: step}
  - {id: other, dimension: D3, claim: "RMSE is reported.", source: "3 Experimental setup"}
"""


def test_origin_category_and_parent_are_imported(tmp_path: Path) -> None:
    from sabench.scoring import RubricTree

    folder = tmp_path / "ridge"
    folder.mkdir()
    (folder / "saus.yaml").write_text(NESTED)
    rows = build_saus(folder, None, tmp_path / "saus.parquet")
    by_id = {r["sau_id"]: r for r in rows}
    assert by_id["fit"]["origin"] == "researchcodebench" and by_id["fit"]["category"] == "model.py"
    assert by_id["step"]["origin"] == "curated" and by_id["step"]["category"] is None  # defaults
    # parent: the path of ancestors from the top, as a rubric leaf's, with their weights
    assert [by_id[k]["parent"] for k in ("fit", "step", "lr", "other")] == [
        None,
        "fit",
        "fit/step",
        None,
    ]
    assert by_id["lr"]["parent_weights"] == [3.0, 1.0]
    frame = pd.read_parquet(tmp_path / "saus.parquet")
    assert list(frame["parent"].fillna("")) == ["", "fit", "fit/step", ""]
    assert list(frame["origin"]) == ["researchcodebench", "curated", "curated", "curated"]
    # the group under an SAU weighs as that SAU: fit (3) aligned, its group (3) not, other (1) not
    tree = RubricTree.from_saus(frame)
    assert tree.score({"fit": 1.0, "step": 0.0, "lr": 0.0, "other": 0.0}) == pytest.approx(3 / 7)
    before = sau_set_hash(rows)
    (folder / "saus.yaml").write_text(NESTED.replace("parent: step", "parent: fit"))
    assert sau_set_hash(import_paper_saus(folder)) != before, "a parent edit changes the SAU set"


@pytest.mark.parametrize(
    ("old", "new", "field", "message"),
    [
        ("parent: fit}", "parent: fitt}", "saus[1].parent (SAU step)", "'fitt' is no SAU of this"),
        (
            "category: model.py}",
            "category: model.py, parent: lr}",
            "saus[0].parent (SAU fit)",
            "parents form a cycle: fit -> lr -> step -> fit",
        ),
        ("parent: step}", "parent: lr}", "saus[2].parent (SAU lr)", "cycle: lr -> lr"),
        ("origin: researchcodebench", "origin: ''", "saus[0].origin (SAU fit)", "non-empty"),
        ("parent: fit}", "parent: [fit]}", "saus[1].parent (SAU step)", "is not of type 'string'"),
    ],
    ids=["unknown", "cycle", "itself", "empty-origin", "not-a-string"],
)
def test_a_bad_parent_or_origin_is_one_line_naming_the_sau(
    tmp_path: Path, old: str, new: str, field: str, message: str
) -> None:
    folder = tmp_path / "ridge"
    folder.mkdir()
    assert old in NESTED
    (folder / "saus.yaml").write_text(NESTED.replace(old, new, 1))
    with pytest.raises(UserError) as info:
        import_paper_saus(folder)
    text = str(info.value)
    assert text.startswith(f"{folder / 'saus.yaml'}: {field}: ") and message in text
    assert "\n" not in text  # one problem, one line; a cycle is said once, not once per SAU
