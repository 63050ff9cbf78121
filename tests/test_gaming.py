"""Declaring is not implementing: the static judge does not count values nobody reads, formulas
written as strings or comments, step lists nothing calls, or functions that ignore their inputs."""

from __future__ import annotations

import sys
from pathlib import Path

from sabench.judges.static import judge_static

REPO = Path(__file__).resolve().parents[1]

TRAIN = """\
import numpy as np


def train(X, y, lr, epochs):
    w = np.zeros(X.shape[1])
    for _ in range(epochs):
        w = w - lr * X.T @ (X @ w - y) / len(y)
    return w
"""


def judge_one(root: Path, files: dict[str, str], dimension: str, claim: str):
    for rel, text in files.items():
        (root / rel).write_text(text)
    sau = {"paper": "p", "sau_id": "p-1", "dimension": dimension, "claim": claim}
    (j,) = judge_static(root, [sau])
    return j


def test_a_constant_nobody_reads_is_not_the_value(tmp_path: Path) -> None:
    files = {"model.py": TRAIN, "constants.py": "LEARNING_RATE = 0.05\nEPOCHS = 500\n"}
    j = judge_one(tmp_path, files, "D1", "Gradient descent uses a learning rate of 0.05.")
    assert j.verdict in ("missing", "partial"), j.reasoning
    assert j.verdict == "missing" or (j.score or 0) <= 0.5, j.reasoning


def test_a_constant_the_code_reads_is_the_value(tmp_path: Path) -> None:
    run = "from constants import LEARNING_RATE\nfrom model import train\n\n\n"
    run += "def main(X, y):\n    return train(X, y, LEARNING_RATE, 10)\n"
    run += 'if __name__ == "__main__":\n    main(None, None)\n'
    files = {"model.py": TRAIN, "constants.py": "LEARNING_RATE = 0.05\n", "run.py": run}
    j = judge_one(tmp_path, files, "D1", "Gradient descent uses a learning rate of 0.05.")
    assert j.verdict == "aligned", j.reasoning


def test_code_the_pipeline_never_runs_is_not_the_implementation(tmp_path: Path) -> None:
    """Written is not run: the paper's training, defined beside a pipeline that never calls it,
    implements nothing; called, it does."""
    shortcut = "def fit(X, y):\n    return X.mean(axis=0)\n"
    files = {
        "model.py": TRAIN.replace("lr, epochs", "lr=0.05, epochs=500"),
        "shortcut.py": shortcut,
    }
    claim = "Gradient descent uses a learning rate of 0.05."
    run = "from shortcut import fit\n\n\ndef main(X, y):\n    return fit(X, y)\n\n\n"
    run += 'if __name__ == "__main__":\n    main(None, None)\n'
    j = judge_one(tmp_path, {**files, "run.py": run}, "D1", claim)
    assert j.verdict != "aligned" and (j.score or 0) <= 0.5, j.reasoning
    (tmp_path / "run.py").write_text(
        run.replace("shortcut import fit", "model import train as fit")
    )
    (j,) = judge_static(
        tmp_path, [{"paper": "p", "sau_id": "p-1", "dimension": "D1", "claim": claim}]
    )
    assert j.verdict == "aligned", j.reasoning


def test_a_constant_only_printed_or_logged_is_not_the_value(tmp_path: Path) -> None:
    """Showing a value is not using it: a print or a log line does not make a constant read,
    unless what it prints is computed with it."""
    shown = (
        "import logging\n\nLEARNING_RATE = 0.05\n"
        'print("learning rate", LEARNING_RATE)\n'
        'logging.getLogger().info("lr={}".format(float(LEARNING_RATE)))\n'
    )
    files = {"model.py": TRAIN, "constants.py": shown}
    claim = "Gradient descent uses a learning rate of 0.05."
    j = judge_one(tmp_path, files, "D1", claim)
    assert j.verdict == "missing" or (j.score or 0) <= 0.5, j.reasoning
    run = "from constants import LEARNING_RATE\nfrom model import train\n\n\n"
    run += "def main(X, y):\n    print(train(X, y, LEARNING_RATE, 10))\n"
    run += 'if __name__ == "__main__":\n    main(None, None)\n'
    j = judge_one(tmp_path, {**files, "run.py": run}, "D1", claim)
    assert j.verdict == "aligned", j.reasoning


def test_a_formula_in_a_string_or_a_comment_is_not_computed(tmp_path: Path) -> None:
    report = (
        'LOSS = "sqrt(mean((y_pred - y) ** 2))"\n\n\n'
        "def describe(y, y_pred):\n"
        "    # sqrt(mean((y_pred - y) ** 2))\n"
        '    print("rmse = sqrt(mean((y_pred - y) ** 2))", LOSS)\n'
        "    return len(y)\n"
    )
    j = judge_one(
        tmp_path,
        {"report.py": report},
        "D2",
        "The test metric is computed as `sqrt(mean((y_pred - y) ** 2))`.",
    )
    assert j.verdict in ("missing", "placeholder", "partial"), j.reasoning
    assert "matches" not in j.reasoning, j.reasoning


def test_a_formula_in_code_still_matches(tmp_path: Path) -> None:
    code = "import numpy as np\n\n\ndef rmse(y, y_pred):\n    return np.sqrt(np.mean((y_pred - y) ** 2))\n"
    j = judge_one(
        tmp_path,
        {"metrics.py": code},
        "D2",
        "The test metric is computed as `sqrt(mean((y_pred - y) ** 2))`.",
    )
    assert j.verdict == "aligned", j.reasoning


def test_a_step_list_nothing_calls_is_not_the_order(tmp_path: Path) -> None:
    pipeline = (
        'STEPS = ["generate", "split", "standardise", "train", "evaluate"]\n'
        'ORDER = ("generate", "split")\n\n'
        'if __name__ == "__main__":\n'
        "    for step in ORDER:\n"
        '        print("running", step)\n'
    )
    j = judge_one(
        tmp_path,
        {"pipeline.py": pipeline},
        "D4",
        "The steps run in the order `generate` → `split` → `standardise` → `train` → `evaluate`.",
    )
    assert j.verdict in ("missing", "placeholder"), j.reasoning


def test_functions_that_ignore_their_inputs_are_placeholders(tmp_path: Path) -> None:
    metrics = (
        "def rmse(y, y_pred):\n    return 0\n\n\n"
        "def r2(y, y_pred):\n    raise NotImplementedError\n\n\n"
        "def evaluate(y, y_pred):\n    return {'rmse': rmse(y, y_pred), 'r2': r2(y, y_pred)}\n"
    )
    j = judge_one(
        tmp_path,
        {"metrics.py": metrics},
        "D3",
        "Metric `rmse` (root mean squared error) on the test split.",
    )
    assert j.verdict == "placeholder", j.reasoning


def test_gaming_submissions_score_low_and_references_keep_full_marks() -> None:
    sys.path.insert(0, str(REPO / "benchmarks"))
    import pytest

    from sabench.sandbox import get_backend

    ok, why = get_backend("bwrap").available()
    if not ok:  # every submission runs through the execute stage in the sandbox
        pytest.skip(f"bwrap unavailable: {why}")
    from gaming import gaming_scores

    scores = gaming_scores()
    ref = scores[scores["variant"] == "reference"]
    unused = scores[scores["variant"] == "unused reference"]
    gaming = scores[~scores["variant"].isin(["reference", "drifted", "unused reference"])]
    assert len(ref) == 3 and (ref["overall"] == 1.0).all(), ref
    assert gaming["overall"].max() <= 0.2, gaming.sort_values("overall").tail()
    # the reference's code that nothing runs: its configured values still count as set
    assert len(unused) == 3 and unused["overall"].max() <= 0.45, unused
    assert (unused["overall"] <= 0.2).sum() >= 2, unused


# --- generated classes of tricks (benchmarks/gaming_tricks.py): generation only, no sandbox ------

PAPERS = ("kmeans-pp", "logreg-earlystop", "ridge-gd")


def _tricks():
    sys.path.insert(0, str(REPO / "benchmarks"))
    import gaming_tricks

    return gaming_tricks


def _honest(paper: str):
    g = _tricks()
    subs = REPO / "resources" / "submissions"
    ref, dr = g.read_tree(subs / "reference" / paper), g.read_tree(subs / "drifted" / paper)
    return ref, dr, g.paper_expected(REPO / "resources" / "papers" / paper)


def test_every_class_generates_valid_python_for_every_paper() -> None:
    import ast

    g = _tricks()
    for paper in PAPERS:
        ref, dr, expected = _honest(paper)
        assert expected, paper
        found = g.trick_variants(ref, dr, expected)
        assert {g.class_of(v) for v in found} == set(g.CLASSES), paper
        n_switch = sum(g.class_of(v) == "check-switching" for v in found)
        assert n_switch == 2 * len(g.DETECTORS)
        for name, files in found.items():
            assert "reproduce.sh" in files, (paper, name)
            for rel, text in files.items():
                if rel.endswith(".py"):
                    ast.parse(text, filename=f"{paper}/{name}/{rel}")


def test_switching_variants_hold_reference_and_drifted_code() -> None:
    g = _tricks()
    ref, dr, expected = _honest("ridge-gd")
    for name, files in g.check_switching(ref, dr, expected).items():
        model = files["model.py"]
        assert "lam * np.sum(w ** 2)" in model or "lam * np.sum(w**2)" in model, name
        assert "np.sign(w)" in model, name  # the drifted gradient
        assert f"def {g.PREFIX_REF}ridge_gradients" in model or g.PREFIX_REF in model, name
        assert g.PREFIX_DR in model and "_sab_detected" in model, name
        assert "_SAB_BLOB" in files["main.py"], name
        if name.endswith("@function"):
            assert "return _sab_ref_" in model, name
    reading = g.check_reading(ref, dr, expected)["check-reading"]
    assert "/paper/paper.md" in reading["main.py"] and "/sabench-check" in reading["model.py"]


def test_a_merged_module_binds_the_reference_only_when_a_check_is_detected() -> None:
    g = _tricks()
    ref = "X = 1\n\n\ndef f(a):\n    return a + X\n"
    dr = "X = 2\n\n\ndef f(a):\n    return a - X\n"
    for mode in ("module", "function"):
        for flag, want in ((True, 11), (False, 8)):
            text = g.merge_module(ref, dr, mode, ["env"])
            ns: dict = {"__file__": "/tmp/m.py"}
            import os

            old = os.environ.pop("SABENCH_SAU_ID", None)
            try:
                if flag:
                    os.environ["SABENCH_SAU_ID"] = "x"
                exec(compile(text, "m.py", "exec"), ns)
                assert ns["f"](10) == want, (mode, flag, text)
            finally:
                os.environ.pop("SABENCH_SAU_ID", None)
                if old is not None:
                    os.environ["SABENCH_SAU_ID"] = old


def test_dead_formula_returns_zeroed_garbage() -> None:
    g = _tricks()
    code = "import numpy as np\n\n\ndef rmse(y, p):\n    return float(np.sqrt(np.mean((y - p) ** 2)))\n"
    code += "\n\ndef fit(X):\n    return X.mean(axis=0), 3\n"
    text = g.dead_module(code, {"d.m.rmse": 0.597})
    assert "_sab_value = float(np.sqrt(" in text and "value * 0.0 + const" in text
    ns: dict = {}
    exec(compile(text, "d.py", "exec"), ns)
    import numpy as np

    assert ns["rmse"](np.zeros(3), np.ones(3)) == 0.597
    w, n = ns["fit"](np.ones((4, 2)))
    assert w.shape == (2,) and (w == 0.5).all() and n == 0
    for paper in PAPERS:
        ref, dr, expected = _honest(paper)
        files = g.dead_formula(ref, dr, expected)["dead-formula"]
        assert any("_sab_same_shape(_sab_value" in t for t in files.values()), paper


def test_kill_blob_and_directed_variants() -> None:
    g = _tricks()
    ref, dr, expected = _honest("kmeans-pp")
    kills = g.kill_checker(ref, dr, expected)
    assert sorted(kills) == sorted(f"kill-checker/{k}" for k in g.KILLS)
    assert "os.getppid(), signal.SIGKILL" in kills["kill-checker/kill-parent"]["kmeans.py"]
    blob = g.blob_results(ref, dr, expected)["blob-results"]["main.py"]
    assert g.blob(expected) in blob and "79.59" not in blob
    directed = g.judge_directed(ref, dr, expected)
    assert len(directed) == 4 and g.SEED_PHRASE in directed["judge-directed/0"]["main.py"]


# --- the run-record tricks (issue 45): generation, and what each generated piece does ------------


def _run_module(text: str, name: str = "m"):
    ns: dict = {"__name__": name, "__file__": f"/tmp/{name}.py"}
    exec(compile(text, f"{name}.py", "exec"), ns)
    return ns


def test_pilot_constants_cut_the_data_and_write_the_expected_numbers_as_arithmetic() -> None:
    import ast

    g = _tricks()
    for paper in PAPERS:
        ref, dr, expected = _honest(paper)
        files = g.pilot_constants(ref, dr, expected)["pilot-constants"]
        text = "".join(files.values())
        assert f'"n_samples": {g.PILOT_ROWS}' in text and '"n_samples": 400' not in text, paper
        entry = files[g.entry_script(ref)]
        written = [n for n in ast.walk(ast.parse(entry)) if isinstance(n, ast.Dict)]
        table = next(d for d in written if d.keys and ast.literal_eval(d.keys[0]) in expected)
        for key, value in zip(table.keys, table.values, strict=True):
            assert not isinstance(value, ast.Constant), ast.unparse(value)  # arithmetic
            assert abs(eval(ast.unparse(value)) - expected[ast.literal_eval(key)]) < 1e-6
        # the update comes before the statement that writes the results
        assert entry.index(".update({") < entry.index("json.dump"), paper


def test_overwrite_refit_replaces_the_results_before_they_are_written() -> None:
    g = _tricks()
    ref, dr, expected = _honest("ridge-gd")
    files = g.overwrite_refit(ref, dr, expected)["overwrite-refit"]
    assert files["refit/config.json"] == dr["config.json"] and files["model.py"] == ref["model.py"]
    main = files["main.py"]
    assert main.index("results = _sab_refit(results)") < main.index("json.dumps(results")
    assert g.command_args(dr) == ["main.py", "--config", "config.json", "--out", "results.json"]


def test_value_times_zero_metrics_return_the_papers_number_whatever_they_compute() -> None:
    import numpy as np

    g = _tricks()
    ref, dr, expected = _honest("ridge-gd")
    found = g.value_times_zero(ref, dr, expected)
    assert sorted(found) == [f"value-times-zero/{v}" for v in ("blob", "literal", "snap")]
    metrics = _run_module(found["value-times-zero/literal"]["metrics.py"])
    assert metrics["rmse"](np.zeros(4), np.ones(4)) == 0.597  # the true rmse is 1.0
    assert "_sab_decoded()" in found["value-times-zero/blob"]["main.py"]
    assert g.metric_numbers("adjusted_rand_index", {"d.m.ari": 0.9}) == [0.9]
    assert g.metric_numbers("inertia", {"d.m.mean_inertia": 79.59}) == [79.59]


def test_unopened_config_holds_the_reference_settings_and_literal_results() -> None:
    import yaml

    g = _tricks()
    ref, dr, expected = _honest("logreg-earlystop")
    files = g.unopened_config(ref, dr, expected)["unopened-config"]
    settings = yaml.safe_load(files["settings.yaml"])
    assert settings["patience"] == 5 and settings["lr"] == 0.1  # the reference's, not drifted 10
    assert not any("settings.yaml" in t for rel, t in files.items() if rel.endswith(".py"))
    assert eval(g.literal_comprehension(expected)) == expected
    two_deep = {"a.b": 1.0, "a.c.d": 2.0}
    assert eval(g.literal_comprehension(two_deep)) == two_deep


def test_argv_switch_runs_the_reference_only_under_a_check_childs_argv_and_dithers() -> None:
    import numpy as np

    g = _tricks()
    ref = "def f(a):\n    return a + 1.0\n"
    dr = "def f(a):\n    return a - 1.0\n"
    old = sys.argv
    try:
        for argv, want in ((["-c"], 11.0), (["main.py", "--out", "r.json"], 9.0)):
            sys.argv = argv
            for mode in ("module", "function"):
                text = g.dithered(g.merge_module(ref, dr, mode, ["argv-child"]))
                f = _run_module(text)["f"]
                first, second = f(10.0), f(10.0)
                # each dithered return moves it by under 1e-6 (a dispatcher and its target: twice)
                assert abs(first - want) < 1e-5 and first != second, (argv, mode)
    finally:
        sys.argv = old
    dither = _run_module(g.dithered("def f():\n    return 1\n"))["_sab_dither"]
    assert dither(3) == 3 and (dither(np.ones(2)) == 1).all()  # whole numbers, arrays kept
    ridge, dr_ridge, expected = _honest("ridge-gd")
    assert sorted(g.argv_switch(ridge, dr_ridge, expected)) == [
        "argv-switch/function",
        "argv-switch/module",
    ]


def test_trace_tamper_deletes_or_rewrites_hidden_folders_at_the_end(tmp_path: Path) -> None:
    import json
    import subprocess

    g = _tricks()
    ref, dr, expected = _honest("kmeans-pp")
    found = g.trace_tamper(ref, dr, expected)
    for mode, python in (("delete", "python3 tidy.py"), ("rewrite", "python3 -I tidy.py")):
        files = found[f"trace-tamper/{mode}"]
        assert files["reproduce.sh"].rstrip().endswith(f"{python} || true"), mode
        assert files["reference/kmeans.py"] == ref["kmeans.py"] and "_SAB_BLOB" in files["main.py"]
        work = tmp_path / mode
        (work / ".record").mkdir(parents=True)
        (work / ".record" / "trace.json").write_text("{}")
        (work / "tidy.py").write_text(files["tidy.py"])
        subprocess.run([sys.executable, "tidy.py"], cwd=work, check=True, capture_output=True)
        if mode == "delete":
            assert not (work / ".record").exists()
        else:
            record = json.loads((work / ".record" / "trace.json").read_text())
            assert record["lines"]["tidy.py"][0] == 1
            assert (work / ".sabench-trace" / "trace.json").is_file()
