"""What the run record lets the judges decide: results the run computed (a re-seeded second run,
sabench.reseed), settings only from files the run opened, replay with the run's own command line
and random state (checks/sandbox_runner.py), and functions called where the code does not show."""

from __future__ import annotations

from pathlib import Path

import pytest

from sabench.checks.run import run_check
from sabench.contracts import Judgment
from sabench.execute import execute_run
from sabench.judges.run import cap_by_record
from sabench.reseed import COMPUTED, FABRICATED, INCONCLUSIVE, compare
from sabench.runtrace import with_lines
from sabench.sandbox import get_backend


@pytest.fixture
def bwrap_ok() -> None:
    ok, why = get_backend("bwrap").available()
    if not ok:
        pytest.skip(f"bwrap unavailable: {why}")


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _execute(tmp_path: Path, env: Path, files: dict[str, str], **settings: object) -> dict:
    sub = _write(tmp_path / "submission", {"reproduce.sh": "python main.py\n", **files})
    run = tmp_path / "run"
    return execute_run(
        sub,
        run / "executed",
        run / "execution.json",
        run / "execution.log",
        {"backend": "bwrap", "python_env": env, "time_limit_s": 60, **settings},
    )


FIT = """import json
import numpy as np


def fit(X, y):
    return np.linalg.lstsq(X, y, rcond=None)[0]


rng = np.random.default_rng(7)
X = rng.normal(size=(50, 3))
y = X @ np.array([1.0, -2.0, 0.5]) + rng.normal(scale=0.1, size=50)
w = fit(X, y)
mse = float(np.mean((X @ w - y) ** 2))
"""


@pytest.mark.parametrize(
    ("report", "verdict"),
    [
        ('json.dump({"mse": mse, "n": 50}, open("results.json", "w"))', COMPUTED),
        # computed, then overwritten by the number it should have been
        ('json.dump({"mse": 0.0123, "n": 50}, open("results.json", "w"))', FABRICATED),
        ('json.dump({"mse": mse * 0.0 + 0.0123}, open("results.json", "w"))', FABRICATED),
    ],
)
def test_a_reseeded_run_tells_computed_results_from_constants(
    bwrap_ok: None, sandbox_env: Path, tmp_path: Path, report: str, verdict: str
) -> None:
    record = _execute(tmp_path, sandbox_env, {"main.py": FIT + report + "\n"})
    assert record["status"] == "ok", record["message"]
    assert record["reseed"]["verdict"] == verdict, record["reseed"]
    assert record["reseed"]["computation_moved"] == ["main.fit"]  # its data moved
    assert ("fabricated:" in record["message"]) == (verdict == FABRICATED)


def test_a_deterministic_run_is_inconclusive_and_reseed_can_be_off(
    bwrap_ok: None, sandbox_env: Path, tmp_path: Path
) -> None:
    fixed = (
        FIT.replace("rng = np.random.default_rng(7)\n", "")
        .replace("rng.normal(size=(50, 3))", "np.linspace(0, 1, 150).reshape(50, 3) ** [1, 2, 3]")
        .replace(" + rng.normal(scale=0.1, size=50)", "")
    )
    report = 'json.dump({"mse": mse + 0.5}, open("results.json", "w"))\n'
    record = _execute(tmp_path / "a", sandbox_env, {"main.py": fixed + report})
    assert record["reseed"]["verdict"] == INCONCLUSIVE and not record["reseed"]["computation_moved"]
    off = _execute(tmp_path / "b", sandbox_env, {"main.py": FIT}, reseed=False)
    assert off["status"] == "ok" and off["reseed"] is None


def test_compare_reads_calls_as_multisets_and_skips_whole_numbers() -> None:
    a = {"module": "m", "function": "f", "args": {"x": 1}, "kwargs": {}, "result": 2.5}
    b = {**a, "args": {"x": 2}, "result": 3.5}
    # pool workers report in any order: the same calls in another order moved nothing
    same = compare({"loss": 0.5}, {"loss": 0.5}, [a, b], [b, a])
    assert same["verdict"] == INCONCLUSIVE
    moved = compare({"loss": 0.5, "acc": 1.0, "n": 3}, {"loss": 0.5, "acc": 1.0, "n": 3}, [a], [b])
    assert moved["verdict"] == FABRICATED and moved["stayed"] == ["loss"]  # 1.0 and 3 stay honestly
    assert compare({"loss": 0.5}, {"loss": 0.6}, [a], [b])["verdict"] == COMPUTED


def test_a_fabricated_or_untraced_run_caps_every_claim() -> None:
    made = [Judgment("s1", "D1", "aligned", 1.0), Judgment("s2", "D2", "partial", 0.1)]
    fabricated = {"status": "ok", "reseed": {"verdict": FABRICATED, "computation_moved": ["m.f"]}}
    out = cap_by_record(list(made), fabricated)
    assert [(j.verdict, j.score, j.failure_mode) for j in out] == [
        ("drifted", 0.0, "fabricated_result"),
        ("drifted", 0.0, "fabricated_result"),
    ]
    untraced = cap_by_record(list(made), {"status": "untraced"})
    assert [(j.verdict, j.score) for j in untraced] == [("partial", 0.25), ("partial", 0.1)]
    assert cap_by_record(list(made), {"status": "ok", "reseed": {"verdict": COMPUTED}}) == made


def test_a_run_reporting_a_result_no_code_computed_is_fabricated_on_every_claim(
    tmp_path: Path,
) -> None:
    """The paper's number written over computed entries (constant arithmetic): nothing the run
    reports then shows what its code does; the same file computing it is left as judged."""
    made = [Judgment("s1", "D1", "aligned", 1.0), Judgment("s2", "D3", "aligned", 1.0)]
    saus = [{"sau_id": "s2", "expected": '{"metric": "b.acc", "value": 0.597}'}]
    head = "import json\nres = {}\nfor n in 'ab':\n    res[f'{n}.acc'] = fit(n)\n"
    dump = "json.dump(res, open('results.json', 'w'))\n"
    typed = _write(tmp_path / "typed", {"main.py": head + "res['b.acc'] = 0.199 * 3\n" + dump})
    out = cap_by_record(list(made), {"status": "ok"}, typed, saus)
    assert [(j.verdict, j.score, j.failure_mode) for j in out] == [
        ("drifted", 0.0, "fabricated_result"),
        ("drifted", 0.0, "fabricated_result"),
    ]
    assert "b.acc = 0.597 is literal arithmetic (main.py:5)" in out[0].reasoning
    honest = _write(tmp_path / "honest", {"main.py": head + dump})
    assert cap_by_record(list(made), {"status": "ok"}, honest, saus) == made


@pytest.mark.parametrize(
    ("command", "entry"),
    [("PYTHONPATH=src python3 -m pkg", "src/pkg/__main__.py"), ("python3 -I main.py", "main.py")],
)
def test_a_run_that_sets_its_own_pythonpath_or_isolates_python_is_still_traced(
    bwrap_ok: None, sandbox_env: Path, tmp_path: Path, command: str, entry: str
) -> None:
    """``PYTHONPATH=src`` replaces the variable that arms the trace, and ``-I`` ignores it: the
    sandbox env's ``.pth`` arms it anyway, so honest code keeps its record."""
    main = FIT + "import json\njson.dump({'mse': mse}, open('results.json', 'w'))\n"
    files = {"reproduce.sh": f"set -eu\n{command}\n", entry: main}
    if entry.startswith("src/"):
        files["src/pkg/__init__.py"] = ""
    record = _execute(tmp_path, sandbox_env, files, reseed=False)
    assert record["status"] == "ok", record.get("message")
    seen = with_lines(record, tmp_path / "run" / "executed")
    assert seen is not None and 12 in seen["lines_run"][entry]


def test_the_record_names_the_files_the_run_opened(
    bwrap_ok: None, sandbox_env: Path, tmp_path: Path
) -> None:
    main = 'import json\ncfg = json.load(open("used.json"))\nprint(cfg["lr"])\n'
    files = {"main.py": main, "used.json": '{"lr": 0.1}', "unused.yaml": "lr: 0.1\n"}
    record = _execute(tmp_path, sandbox_env, files, reseed=False)
    seen = with_lines(record, tmp_path / "run" / "executed")
    assert seen is not None and "used.json" in seen["files_read"]
    assert "unused.yaml" not in seen["files_read"]


REPLAYED = """import argparse
import random

import numpy as np


def noisy_mean(x):
    # draws from the global generators the run seeded: replay restores their state
    return float(np.mean(x) + np.random.rand() * 1e-3 + random.random() * 1e-3)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, required=True)
    return parser.parse_args(argv).scale * 2


if __name__ == "__main__":
    np.random.seed(0)
    random.seed(0)
    print(noisy_mean([1.0, 2.0]), main())
"""
DITHER = REPLAYED.replace(
    "np.random.rand() * 1e-3 + random.random() * 1e-3", "__import__('time').perf_counter() % 1e-3"
)
CHECK = """from main import main, noisy_mean
assert abs(noisy_mean([1.0, 2.0]) - 1.5) < 0.01
assert main() == 6.0  # its command line is the run's: --scale 3
print(main(["--scale", "1"]))
"""


@pytest.mark.parametrize(("code", "kind"), [(REPLAYED, "pass"), (DITHER, "unconfirmed")])
def test_replay_gives_the_run_its_command_line_and_random_state(
    bwrap_ok: None, sandbox_env: Path, tmp_path: Path, code: str, kind: str
) -> None:
    sub_files = {"main.py": code, "reproduce.sh": "python main.py --scale 3\n"}
    record = _execute(tmp_path, sandbox_env, sub_files, reseed=False)
    assert record["status"] == "ok", record["message"]
    runtime = {"backend": "bwrap", "python_env": str(sandbox_env)}
    outcome = run_check(CHECK, tmp_path / "run" / "executed", runtime)
    # main(None) replayed parses the run's own --scale 3 (not the check child's argv); the
    # global draws replay as the run drew them; a clock-driven answer confirms nothing
    assert outcome.kind == kind, (outcome.detail, outcome.tail)


SWITCH = """import os

import numpy as np


def draw(n, rng):
    shift = 1.0 if os.path.exists("marker") else 0.0  # only while its own run is on
    return float(rng.normal(size=n).sum() + shift)


if __name__ == "__main__":
    print(draw(3, np.random.default_rng(0)))
"""


@pytest.mark.parametrize(
    ("code", "kind"), [(SWITCH, "inconsistent"), (SWITCH.replace("1.0 if", "0.0 if"), "pass")]
)
def test_replay_gives_a_generator_argument_its_recorded_state(
    bwrap_ok: None, sandbox_env: Path, tmp_path: Path, code: str, kind: str
) -> None:
    script = "touch marker\npython main.py\nrm marker\n"
    record = _execute(
        tmp_path, sandbox_env, {"main.py": code, "reproduce.sh": script}, reseed=False
    )
    assert record["status"] == "ok", record["message"]
    check = "import numpy as np\nfrom main import draw\nassert isinstance(draw(2, np.random.default_rng(1)), float)\n"
    runtime = {"backend": "bwrap", "python_env": str(sandbox_env)}
    outcome = run_check(check, tmp_path / "run" / "executed", runtime)
    assert outcome.kind == kind, (outcome.detail, outcome.tail)


def test_an_expected_number_that_stayed_while_the_run_moved_is_fabricated() -> None:
    from sabench.judges.exec_judge import _stayed

    sau = {"expected": [{"metric": "a.rmse", "value": 0.6}, {"metric": "a.loss", "value": 0.1}]}
    moved = {"computation_moved": ["m.fit"], "stayed": ["a.rmse"], "verdict": COMPUTED}
    assert _stayed(sau, {"reseed": moved}) == ["a.rmse"]
    # nothing moved: a deterministic run proves nothing either way
    assert _stayed(sau, {"reseed": {**moved, "computation_moved": []}}) == []
    assert _stayed(sau, {"reseed": None}) == [] and _stayed(sau, None) == []


def test_a_channel_closes_its_descriptors_once() -> None:
    import os

    from sabench.runtrace import TraceChannel

    with TraceChannel() as channel:
        channel.close()
        # the numbers it freed go to whoever opens next (another thread's scandir, say)
        reused = [os.open(os.devnull, os.O_RDONLY) for _ in range(8)]
    try:
        for fd in reused:
            os.fstat(fd)  # __exit__ closed nothing of theirs
    finally:
        for fd in reused:
            os.close(fd)


def test_the_static_judge_reads_a_result_that_stayed_as_fabricated(tmp_path: Path) -> None:
    from sabench.judges.static import judge_static

    sub = _write(
        tmp_path, {"main.py": "import json\njson.dump({'a': {'rmse': 0.6}}, open('r.json', 'w'))\n"}
    )
    sau = {
        "paper": "p",
        "sau_id": "p-1",
        "dimension": "D3",
        "claim": "RMSE 0.6 on a.",
        "expected": [{"metric": "a.rmse", "value": 0.6, "tolerance": 0.01}],
    }
    execution = {"status": "ok", "metrics": {"a": {"rmse": 0.6}}, "lines_run": {"main.py": [1, 2]}}
    moved = {"computation_moved": ["m.fit"], "stayed": ["a.rmse"], "moved": [], "verdict": COMPUTED}
    (kept,) = judge_static(sub, [sau], execution)
    (stayed,) = judge_static(sub, [sau], {**execution, "reseed": moved})
    assert kept.verdict == "aligned", kept.reasoning
    assert (stayed.verdict, stayed.failure_mode) == ("drifted", "fabricated_result")
    assert "stayed the same" in stayed.reasoning


@pytest.mark.parametrize(
    ("reads", "credited"),
    [
        ('lr = 0.01\nseed = cfg["seed"]', False),  # the mapping is read key by key, lr never
        ('lr = cfg["lr"]\nseed = cfg["seed"]', True),
        ('lr = cfg.get("lr")\nseed = cfg["seed"]', True),
        ("lr = 0.01\nseed = fit(**cfg)", True),  # handed on whole: any key may be read
    ],
)
def test_a_config_key_no_code_that_ran_names_is_text(
    tmp_path: Path, reads: str, credited: bool
) -> None:
    from sabench.judges.static import judge_static

    main = f"import json\ndef fit(**kw):\n    return 0\ncfg = json.load(open('config.json'))\n{reads}\nprint(lr, seed)\n"
    sub = _write(tmp_path, {"main.py": main, "config.json": '{"seed": 0, "lr": 0.05}\n'})
    execution = {
        "status": "ok",
        "lines_run": {"main.py": list(range(1, 8))},
        "files_read": ["main.py", "config.json"],
    }
    sau = {
        "paper": "p",
        "sau_id": "p-1",
        "dimension": "D1",
        "claim": "The learning rate (lr) is 0.05.",
    }
    (j,) = judge_static(sub, [sau], execution)
    assert (j.verdict == "aligned") == credited, j.reasoning
    assert ("config.json" in j.reasoning) == credited, j.reasoning


def test_toml_values_are_read_past_their_comments_and_in_lists(tmp_path: Path) -> None:
    from sabench.index import build_index

    toml = 'max_iter = 100   # per restart\ncenter_box = [-10.0, 10.0]\nname = "a # b"\n'
    index = build_index(_write(tmp_path, {"settings.toml": toml}))
    found = {f.name: f.numbers for f in index.facts if f.kind == "config"}
    assert found["max_iter"] == (100.0,) and found["center_box"] == (-10.0, 10.0), found
