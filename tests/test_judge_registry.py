"""The judge registry: names, needs and fingerprints come from one table that every layer reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sabench.errors import UserError
from sabench.grid import judge_fingerprint, load_settings
from sabench.judges import registry
from sabench.judges.registry import JUDGES, JudgeInputs, judge_available, judge_kind

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("name", "kind"),
    [("static", "static"), ("exec", "exec"), ("reference", "reference"), ("llm:x/y", "llm")],
)
def test_names_resolve_to_their_kind(name: str, kind: str) -> None:
    assert judge_kind(name) is JUDGES[kind]


@pytest.mark.parametrize("name", ["statc", "llm", "llm:", "static:x", "exec:m", ""])
def test_unknown_or_misspelled_names_are_refused(name: str) -> None:
    assert not judge_available(name)
    with pytest.raises(ValueError, match="not implemented"):
        registry.implementation(name)


def test_every_kind_has_an_entry_point_and_existing_sources() -> None:
    for kind in JUDGES.values():
        name = f"{kind.name}:m" if kind.model else kind.name
        assert callable(registry.implementation(name)), kind.name
        matched = [p for rel in kind.sources for p in registry.PACKAGE_DIR.glob(rel)]
        assert matched, f"{kind.name}: no source file matches {kind.sources}"
        own = kind.module.replace("sabench.", "").replace(".", "/")
        assert any(own in str(p) for p in matched), f"{kind.name}: its own module is not hashed"


def test_dispatch_reaches_the_named_judge(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("learning_rate = 0.05\n")
    sau = {
        "sau_id": "D1-1",
        "dimension": "D1",
        "claim": "The learning rate is 0.05.",
        "paper": "p",
    }
    rows = registry.run_judge(JudgeInputs("static", {}, tmp_path, [sau]))
    assert [j.sau_id for j in rows] == ["D1-1"]
    verdicts = tmp_path / "verdicts.json"
    verdicts.write_text(json.dumps({"claims": [{"id": "D1-1", "score": 0.5}]}))
    inputs = JudgeInputs(
        "reference",
        {"path": str(verdicts), "format": "auto"},
        tmp_path,
        [sau],
        run={"agent": "a", "paper": "p", "seed": "0"},
    )
    assert registry.verdict_file("reference", inputs.settings, inputs.run) == verdicts
    with pytest.raises(ValueError, match="reads no verdict files"):
        registry.verdict_file("static", {}, {})


def test_a_judge_change_reruns_that_judge_only(monkeypatch: pytest.MonkeyPatch) -> None:
    before = {n: judge_fingerprint(n, {}) for n in ("static", "exec", "reference")}
    registry.source_hash.cache_clear()
    monkeypatch.setitem(
        JUDGES, "exec", registry.JudgeKind("exec", JUDGES["exec"].module, ("checks.py",), "x")
    )
    after = {n: judge_fingerprint(n, {}) for n in ("static", "exec", "reference")}
    registry.source_hash.cache_clear()
    assert after["exec"] != before["exec"]
    assert after["static"] == before["static"] and after["reference"] == before["reference"]


def test_the_grid_names_what_a_verdict_judge_needs(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"judge_settings\.reference\.path"):
        load_settings({"judges": ["reference"]}, REPO, config_path="c.yaml")
    with pytest.raises(UserError, match=r"available: static, exec, reference, llm:<model>"):
        load_settings({"judges": ["statc"]}, REPO, config_path="c.yaml")
