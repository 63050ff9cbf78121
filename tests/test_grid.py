"""Config validation and the grid: every user mistake is one line naming the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from sabench.errors import UserError
from sabench.grid import (
    JsonWord,
    execution_gpus,
    judge_fingerprint,
    judge_slug,
    load_settings,
)

AGENTS = """
ref:
  kind: replay
  path: subs/{paper}
seeded:
  kind: replay
  path: subs/{paper}/{seed}
"null":
  kind: "null"
"""


def _workdir(tmp_path: Path, agents: str = AGENTS, papers: tuple[str, ...] = ("p1", "p2")) -> Path:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "agents.yaml").write_text(agents)
    for paper in papers:
        folder = tmp_path / "resources" / "papers" / paper
        folder.mkdir(parents=True)
        (folder / "paper.md").write_text("# P\n")
        (folder / "saus.yaml").write_text("saus: []\n")
    return tmp_path


def test_grid_and_defaults(tmp_path: Path) -> None:
    settings = load_settings({"seeds": [0, 1]}, _workdir(tmp_path))
    assert settings.papers == ["p1", "p2"]
    assert settings.config["runtime"]["backend"] == "auto"
    assert settings.config["results"] == "results"
    runs = settings.runs
    assert ("ref", "p1", "0") in runs and ("ref", "p1", "1") not in runs
    assert ("seeded", "p2", "1") in runs and ("null", "p2", "0") in runs
    assert len(runs) == 2 * (1 + 2 + 1)


def test_selecting_papers_and_agents(tmp_path: Path) -> None:
    settings = load_settings({"papers": "p2", "agents": ["ref"]}, _workdir(tmp_path))
    assert settings.runs == [("ref", "p2", "0")]


@pytest.mark.parametrize(
    ("config", "field", "message"),
    [
        ({"papers": "../etc"}, "papers", "not a valid id"),
        ({"papers": "a/b"}, "papers", "not a valid id"),
        ({"papers": "p3"}, "papers", "paper folder not found"),
        ({"agents": "nobody"}, "agents", "not defined"),
        ({"judges": ["oracle"]}, "judges[0]", "not available in this version (available: static"),
        ({"judges": ["static", "llm:"]}, "judges[1]", "llm:<model>"),
        ({"runtime": {"backend": "vm"}}, "runtime.backend", "is not one of"),
        ({"runtime": {"backend": ["bwrap", "vm"]}}, "runtime.backend[1]", "'vm' is not one of"),
        ({"runtime": {"backend": []}}, "runtime.backend", "should be non-empty"),
        ({"seeds": [-1]}, "seeds[0]", "less than the minimum"),
        ({"typo_key": 1}, "typo_key", "unknown key (known: results, "),
        ({"runtme": {}}, "runtme", "unknown key; did you mean 'runtime'?"),
        (
            {"judge_settings": {"exec": {"time_limt_s": 30}}},
            "judge_settings.exec.time_limt_s",
            "unknown key; did you mean 'time_limit_s'?",
        ),
        ({"judge_settings": {"exce": {}}}, "judge_settings.exce", "did you mean 'exec'?"),
        ({"judge_settings": {"exec": {"time_limit_s": 0}}}, "exec.time_limit_s", "0 is less"),
    ],
)
def test_config_errors(tmp_path: Path, config: dict, field: str, message: str) -> None:
    with pytest.raises(UserError) as info:
        load_settings(config, _workdir(tmp_path), config_path="config/config.yaml")
    text = str(info.value)
    assert field in text and message in text and "\n" not in text


@pytest.mark.parametrize(
    ("agents", "field", "message"),
    [
        ("a:\n  kind: teleport\n", "a.kind", "is not one of"),
        ("a:\n  kind: replay\n  path: subs/x\n", "a.path", "{paper}"),
        ("a:\n  kind: replay\n", "a.path", "{paper}"),
        ("null:\n  kind: 'null'\n", "null", "must be quoted"),
        ("a:\n  kind: command\n  image: x\n", "a.command", "needs its command line"),
        ("a:\n  kind: basic\n", "a.model", "needs a model"),
        (
            "a:\n  kind: command\n  command: x\n  mounts: [{source: nowhere, target: /agent}]\n",
            "a.mounts[0].source",
            "nowhere does not exist",
        ),
        (
            "a:\n  kind: command\n  command: x\n  mounts: [{source: ., target: agent}]\n",
            "a.mounts[0].target",
            "does not match",
        ),
        (
            "a:\n  kind: basic\n  model: m\n  mounts: [{source: ., target: /agent}]\n",
            "a.mounts",
            "only a command agent",
        ),
        (
            "a:\n  kind: replay\n  path: x/{paper}\n  colour: red\n",
            "line 4: a.colour",
            "unknown key",
        ),
        ("a:\n  kind: basic\n  model: m\n  max_step: 4\n", "line 4: a.max_step", "'max_steps'?"),
        (
            "r:\n  kind: replay\n  path: x/{paper}\na:\n  kind: teleport\n",
            "line 5: a.kind",
            "one of",
        ),
        ("a: [unclosed\n", None, "cannot parse"),
    ],
)
def test_agents_errors(tmp_path: Path, agents: str, field: str | None, message: str) -> None:
    with pytest.raises(UserError) as info:
        load_settings({}, _workdir(tmp_path, agents=agents))
    text = str(info.value)
    assert "agents.yaml" in text and message in text
    if field:
        assert f": {field}:" in text


def test_paper_folder_errors(tmp_path: Path) -> None:
    work = _workdir(tmp_path)
    (work / "resources" / "papers" / "p1" / "saus.yaml").unlink()
    with pytest.raises(UserError, match=r"p1: no SAU file"):
        load_settings({}, work)
    (work / "resources" / "papers" / "p3").mkdir()
    with pytest.raises(UserError, match=r"p3: no paper.md or paper.pdf"):
        load_settings({"papers": "p3"}, work)


def test_judge_fingerprint_follows_settings() -> None:
    assert judge_fingerprint("static", {}) == judge_fingerprint("static", {})
    assert judge_fingerprint("static", {}) != judge_fingerprint("static", {"x": 1})
    assert judge_slug("llm:openai/gpt-4o") == "llm-openai_gpt-4o"


def test_shipped_config_is_valid(repo: Path) -> None:
    config = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    settings = load_settings(config, repo)
    assert {"reference", "drifted", "null"} <= set(settings.agents)
    assert len(settings.papers) >= 2


@pytest.mark.parametrize(
    ("agent", "runtime_gpus", "sandbox", "scheduler"),
    [
        ({"gpus": 2}, 0, 2, 2),  # the agent's own GPUs win
        ({"gpus": 1}, "all", 1, 1),
        ({}, 0, 0, 0),
        ({"gpus": 0}, 3, 3, 3),
        ({}, "2", "2", 2),
        ({}, [0, 2], [0, 2], 2),
        ({}, "0,3", "0,3", 2),
        ({}, "GPU-aa,GPU-bb", "GPU-aa,GPU-bb", 2),
        ({}, "all", "all", 0),  # whatever the job has: the scheduler is asked for none
    ],
)
def test_execution_gpus(agent: dict, runtime_gpus: object, sandbox: object, scheduler: int) -> None:
    assert execution_gpus(agent, {"gpus": runtime_gpus}) == (sandbox, scheduler)


@pytest.mark.parametrize(
    "runs",
    [
        [],
        [("a", "p1", "0"), ("a", "p2", "0"), ("b", "p1", "0"), ("b", "p2", "0")],
        # a narrowed command line: the grid, then runs beyond it, seeds differing per agent
        [("a", "p1", "0"), ("a", "p1", "1"), ("b", "p1", "0"), ("a", "p3", "2"), ("a", "p1", "0")],
    ],
)
def test_packed_runs_round_trip_exactly(runs: list[tuple[str, str, str]]) -> None:
    from sabench.grid import pack_runs, unpack_runs

    packed = pack_runs(runs)
    assert unpack_runs(json.loads(json.dumps(packed))) == runs


def test_a_product_grid_packs_small() -> None:
    from sabench.grid import pack_runs

    runs = [(f"agent{a}", f"paper{p}", "0") for a in range(50) for p in range(2000)]
    assert len(json.dumps(pack_runs(runs))) < 64 * 1024  # one command-line argument holds it


def test_a_json_word_is_one_shell_word_and_the_same_params_record_as_its_dict() -> None:
    """The judge rule's params: its command shows them as one quoted JSON word, and Snakemake
    records them as it recorded the plain dict, so that no judgment is redone on upgrading."""
    import shlex

    from snakemake.persistence import PersistenceBase
    from snakemake.utils import format as snakemake_format

    plain = {"name": "llm", "settings_json": '{"model": "m"}', "fingerprint": "ab12"}
    word = JsonWord(**plain)
    shown = snakemake_format("--spec {params[judge]:q}", params={"judge": word})
    assert shlex.split(shown) == ["--spec", json.dumps(plain, sort_keys=True)]
    record = PersistenceBase._serialize_param_builtin
    assert record(None, word) == record(None, plain) == repr(plain)


def test_an_agent_runs_only_its_papers(tmp_path: Path) -> None:
    """`papers:` (names or glob patterns) scopes an agent: no run of any other paper; the others
    keep every paper; the scope is not part of the agent's settings (changing it reruns nothing)."""
    from types import SimpleNamespace

    from sabench.grid import SCHEDULING_KEYS
    from sabench.lifecycle import missing_replay_sources

    agents = AGENTS.replace("  path: subs/{paper}\n", "  path: subs/{paper}\n  papers: [p1]\n", 1)
    agents += 'globbed:\n  kind: "null"\n  papers: ["p*2", nope]\n'
    workdir = _workdir(tmp_path, agents, papers=("p1", "p2", "q3"))
    settings = load_settings({"seeds": [0]}, workdir)
    by_agent: dict[str, list[str]] = {}
    for agent, paper, _ in settings.runs:
        by_agent.setdefault(agent, []).append(paper)
    assert by_agent == {
        "ref": ["p1"],
        "seeded": ["p1", "p2", "q3"],
        "null": ["p1", "p2", "q3"],
        "globbed": ["p2"],
    }
    assert "papers" in SCHEDULING_KEYS
    # the workflow's start names each run whose replay source has no folder for the paper
    (workdir / "subs" / "p1" / "0").mkdir(parents=True)
    lines = missing_replay_sources(
        SimpleNamespace(runs=settings.runs, agents=settings.agents), workdir
    )
    assert [ln.split(" (")[0] for ln in lines] == [
        "agent seeded has no submission for p2/0",
        "agent seeded has no submission for q3/0",
    ]
    assert "left out of its scores" in lines[0] and "papers" in lines[0]


def test_an_agents_papers_must_be_a_list_of_names() -> None:
    from sabench.grid import validate

    with pytest.raises(UserError, match="papers"):
        validate({"a": {"kind": "null", "papers": "p1"}}, "agents.schema.yaml", "agents.yaml")
