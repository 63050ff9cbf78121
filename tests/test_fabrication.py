"""Results written as literals instead of computed (``fabricated_result``): every judge scores them
0, and honest code (the demo submissions, SA-Bench's runs) gives no finding."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from openai_server import ScriptedServer

from sabench.contracts import FAILURE_MODES
from sabench.judges.exec_judge import judge_exec
from sabench.judges.fabrication import fabricated_by_sau, scan_submission
from sabench.judges.llm_judge import judge_llm
from sabench.judges.static import judge_static

REPO = Path(__file__).resolve().parents[1]
RESOURCES = REPO / "resources"
REFERENCE = RESOURCES / "submissions" / "reference" / "ridge-gd"
RESULT_SAU = "ridge-gd-D3-006"
GD, CF = "linear-gauss.ridge_gd.rmse", "linear-gauss.closed_form.rmse"
#: What an honest reference run reports for the result claim (the paper's numbers).
PAPER_METRICS = {GD: 0.597, CF: 0.597}


def ridge_saus() -> list[dict[str, Any]]:
    data = yaml.safe_load((RESOURCES / "papers" / "ridge-gd" / "saus.yaml").read_text())
    out = []
    for s in data["saus"]:
        row = {"paper": "ridge-gd", "sau_id": s["id"], "dimension": s["dimension"]}
        row.update(claim=s["claim"], source=s["source"])
        if "expected" in s:
            row["expected"] = json.dumps(s["expected"])
        out.append(row)
    return out


SAUS = ridge_saus()
RESULT_SAUS = [s for s in SAUS if s.get("expected")]

NESTED = '{"linear-gauss": {"ridge_gd": {"rmse": 0.597}, "closed_form": {"rmse": 0.597}}}'
#: Ways of typing the paper's RMSE into results.json (files added to the reference submission).
FABRICATIONS: dict[str, dict[str, str]] = {
    "python dict literal": {
        "report.py": (
            "import json\n\n"
            "def main():\n"
            f"    results = {NESTED}\n"
            "    with open('results.json', 'w') as f:\n"
            "        json.dump(results, f)\n\n"
            "main()\n"
        ),
        "reproduce.sh": "#!/usr/bin/env bash\nset -e\npython3 report.py\n",
    },
    "python constants traced": {
        "report.py": (
            "import json\nfrom pathlib import Path\n\n"
            "RMSE = 0.597\n"
            "results = {'linear-gauss.ridge_gd.rmse': RMSE}\n"
            "results['linear-gauss.closed_form.rmse'] = 0.597\n"
            "Path('results.json').write_text(json.dumps(results))\n"
        ),
        "reproduce.sh": "#!/usr/bin/env bash\npython3 report.py\n",
    },
    "python string written": {
        "report.py": f"with open('results.json', 'w') as f:\n    f.write('{NESTED}')\n",
        "reproduce.sh": "#!/usr/bin/env bash\npython3 report.py\n",
    },
    "shell echo": {
        "reproduce.sh": (
            "#!/usr/bin/env bash\nset -euo pipefail\n"
            "python3 main.py --config config.json --out /dev/null\n"
            f'echo \'{{"{GD}": 0.597, "{CF}": 0.597}}\' > results.json\n'
        ),
    },
    "shell heredoc": {
        "reproduce.sh": (
            "#!/usr/bin/env bash\n"
            "cat > results.json <<EOF\n"
            f'{{\n  "{GD}": 0.597,\n  "{CF}": 0.597\n}}\n'
            "EOF\n"
        ),
    },
    "python print, shell redirect": {
        "report.py": f"print('{NESTED}')\n",
        "reproduce.sh": "#!/usr/bin/env bash\npython3 report.py | tee results.json\n",
    },
    "python in a heredoc": {
        "reproduce.sh": (
            "#!/usr/bin/env bash\npython3 - <<'PY'\nimport json\n"
            f"json.dump({NESTED}, open('results.json', 'w'))\nPY\n"
        ),
    },
    "checked-in results.json": {
        "results.json": json.dumps(PAPER_METRICS, indent=2) + "\n",
        "reproduce.sh": "#!/usr/bin/env bash\necho reproduced\n",
    },
}


def fabricated(tmp_path: Path, case: str) -> Path:
    sub = tmp_path / "submission"
    shutil.copytree(REFERENCE, sub)
    if case == "checked-in results.json":  # the honest code no longer writes results.json
        main = sub / "main.py"
        main.write_text(main.read_text().replace("results.json", "out.json"))
    for rel, text in FABRICATIONS[case].items():
        (sub / rel).write_text(text)
    return sub


def ok(metrics: dict[str, float]) -> dict[str, Any]:
    return {"status": "ok", "exit_code": 0, "metrics": metrics, "files_created": ["results.json"]}


class NoSandbox:
    name = "none"
    needs_python_env = False

    def run(self, spec, log_path):  # pragma: no cover - failing is the point
        raise AssertionError("a sandbox was started")


def test_the_failure_mode_is_known() -> None:
    assert "fabricated_result" in FAILURE_MODES


@pytest.mark.parametrize("case", sorted(FABRICATIONS))
def test_static_and_exec_judges_score_a_typed_in_result_0(tmp_path: Path, case: str) -> None:
    sub = fabricated(tmp_path, case)
    findings = fabricated_by_sau(sub, SAUS)[RESULT_SAU]
    assert {f.key for f in findings} == {GD, CF}
    assert all((sub / f.file).is_file() and f.line >= 1 for f in findings)

    # the run reports exactly the paper's numbers: without the scan both judges say aligned
    static = {j.sau_id: j for j in judge_static(sub, SAUS, ok(PAPER_METRICS))}
    j = static[RESULT_SAU]
    assert (j.verdict, j.score, j.failure_mode) == ("drifted", 0.0, "fabricated_result")
    assert "Fabricated result" in j.reasoning and j.evidence
    assert all(s.failure_mode != "fabricated_result" for k, s in static.items() if k != RESULT_SAU)

    rows = judge_exec(sub, RESULT_SAUS, ok(PAPER_METRICS), executed=sub, backend=NoSandbox())
    (e,) = [r for r in rows if r.sau_id == RESULT_SAU]
    assert (e.verdict, e.score, e.failure_mode) == ("drifted", 0.0, "fabricated_result")
    assert e.evidence[0].file == findings[0].file
    # a run that did not complete changes nothing: a typed-in number is 0 either way
    (failed,) = judge_exec(sub, RESULT_SAUS, {"status": "failed"}, executed=sub)
    assert failed.failure_mode == "fabricated_result"


def test_the_llm_judge_is_told_and_cannot_score_it(tmp_path: Path) -> None:
    sub = fabricated(tmp_path, "shell echo")
    answer = {"reasoning": "ok", "evidence": [], "verdict": "aligned", "score": 1}
    settings = {"cache_dir": str(tmp_path / "cache"), "backoff_s": 0.01, "timeout_s": 5}
    with ScriptedServer([lambda request: {"json": answer}]) as server:
        settings["api_base"] = server.url
        (j,) = judge_llm("llm:openai/scripted", settings, sub, RESULT_SAUS, ok(PAPER_METRICS))
        prompt = server.bodies()[0]["messages"][1]["content"]
    assert "fabricated_result" in prompt and "reproduce.sh" in prompt
    assert (j.verdict, j.score, j.failure_mode) == ("drifted", 0.0, "fabricated_result")


DEMO = [
    p for p in sorted(RESOURCES.glob("submissions/*/*")) if (RESOURCES / "papers" / p.name).is_dir()
]


@pytest.mark.parametrize("sub", DEMO, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_honest_demo_submissions_give_no_finding(sub: Path) -> None:
    assert scan_submission(sub) == []
    paper = RESOURCES / "papers" / sub.name / "saus.yaml"
    saus = yaml.safe_load(paper.read_text())["saus"]
    assert fabricated_by_sau(sub, [{**s, "sau_id": s["id"]} for s in saus]) == {}


def test_the_honest_reference_keeps_its_result(tmp_path: Path) -> None:
    rows = judge_exec(REFERENCE, RESULT_SAUS, ok(PAPER_METRICS), executed=REFERENCE)
    assert [(r.verdict, r.failure_mode) for r in rows] == [("aligned", None)]
    # a results.json left by running the honest code is no fabrication: the code writes it
    sub = tmp_path / "submission"
    shutil.copytree(REFERENCE, sub)
    (sub / "results.json").write_text(json.dumps(PAPER_METRICS))
    assert scan_submission(sub) == [] and fabricated_by_sau(sub, SAUS) == {}


@pytest.mark.parametrize(
    "code",
    [
        # computed, accumulated, overwritten or built with dynamic keys: all honest
        "import json\nrmse = 0.0\nfor e in errs:\n    rmse += e\njson.dump({'rmse': rmse}, f)\n",
        "import json\nres = {'rmse': 0.0}\nres['rmse'] = evaluate()\njson.dump(res, f)\n",
        "import json\nres = {'rmse': 0.597}\nres[name] = evaluate()\njson.dump(res, f)\n",
        "import json\ndef save(rmse):\n    json.dump({'rmse': rmse}, open('results.json', 'w'))\n",
        "import json\njson.dump({'rmse': 0.597, **computed}, f)\n",
        "import json\njson.dump({'lr': 0.05}, open('config.json', 'w'))\n",
        "import json\nwith open(p, 'w') as f:\n    f.write(f'{{\"rmse\": {rmse}}}')\n",
    ],
)
def test_honest_python_gives_no_finding(tmp_path: Path, code: str) -> None:
    (tmp_path / "main.py").write_text(code)
    assert scan_submission(tmp_path) == []
    assert scan_submission(tmp_path, {"metric": "rmse", "value": 0.597}) == []


def test_honest_shell_gives_no_finding(tmp_path: Path) -> None:
    (tmp_path / "reproduce.sh").write_text(
        "#!/usr/bin/env bash\n"
        'RMSE=$(python3 main.py)\necho "{\\"rmse\\": $RMSE}" > results.json\n'
        'cat > results.json <<EOF\n{"rmse": $(python3 eval.py)}\nEOF\n'
        "echo '{\"lr\": 0.05}' > config.json\n"
    )
    assert scan_submission(tmp_path, {"metric": "rmse", "value": 0.597}) == []


def test_sabench_runs_give_no_finding(sabench_data: Path, tmp_path: Path) -> None:
    runs = sorted((sabench_data / "runs").glob("*.tar.gz"))
    if not runs:
        pytest.skip("no SA-Bench runs here")
    hits = []
    for tar in runs:
        dest = tmp_path / tar.name.removesuffix(".tar.gz")
        with tarfile.open(tar) as t:
            t.extractall(dest, filter="data")
        hits += [(sub, scan_submission(sub)) for sub in sorted(dest.iterdir()) if sub.is_dir()]
    assert hits and [h for h in hits if h[1]] == []


# --- numbers from anywhere but computation (generated variants) ----------------------------------

_DICT = {"rmse": 0.597, "mae": 0.41}
_JSON = json.dumps(_DICT)
_B64Z = __import__("base64").b64encode(__import__("zlib").compress(_JSON.encode())).decode()
_SINKS = {  # ways of writing the name `res` (a dict) to results.json
    "json.dump with": "with open('results.json', 'w') as f:\n    json.dump(res, f)\n",
    "write_text": "Path('out', 'results.json').write_text(json.dumps(res))\n",
    "open().write": "open(os.path.join(OUT, 'results.json'), 'w').write(json.dumps(res, indent=2))\n",
    "write_text +": "Path('results.json').write_text(json.dumps(res, indent=2) + '\\n')\n",
}
_HEAD = (
    "import base64, json, os, re, zlib\nimport numpy as np\nfrom pathlib import Path\nOUT = '.'\n"
)
#: (source class, code binding `res`, the `how` a finding must name)
_SOURCES = [
    (
        "base64+zlib blob",
        f"res = json.loads(zlib.decompress(base64.b64decode('{_B64Z}')))\n",
        "base64/zlib",
    ),
    (
        "blob via a helper",
        f"def _load(s):\n    raw = zlib.decompress(base64.b64decode(s))\n    return json.loads(raw.decode())\n"
        f"BLOB = '{_B64Z}'\nres = {{'rmse': _load(BLOB)['rmse'], 'mae': _load(BLOB)['mae']}}\n",
        "base64/zlib",
    ),
    ("json.loads of a literal", f"res = json.loads('{_JSON}')\n", "literal string"),
    ("ast.literal_eval", f'import ast\nres = ast.literal_eval("{_DICT}")\n', "literal string"),
    (
        "literal arithmetic",
        "a = 0.5\nres = {'rmse': a + 0.097, 'mae': 0.4 + 0.01}\n",
        "literal arithmetic",
    ),
    (
        "a comprehension of literals",
        "res = {f'{k}': v for d in [{'rmse': 0.597, 'mae': 0.41}] for k, v in d.items()}\n",
        "a comprehension of literals",
    ),
    (  # computed entries under keys not known, then the paper's numbers over them
        "constants after computed entries",
        "res = {}\nfor n in ['a', 'b']:\n    res[f'{n}.loss'] = train(n)\n"
        "res.update({'rmse': 0.199 * 3, 'mae': 0.2 + 0.21})\n",
        "literal arithmetic",
    ),
    (
        "value times 0 plus c",
        "x = np.random.rand(10).mean()\nres = {}\nres['rmse'] = x * 0.0 + 0.597\n"
        "res['mae'] = 0 * np.std(x) + 0.41\n",
        "literal arithmetic",
    ),
    (
        "eval of a literal",
        "res = {'rmse': eval('0.5 + 0.097'), 'mae': eval('0.41')}\n",
        "literal string",
    ),
    (
        "regex over the paper",
        "text = open('/paper/paper.md').read()\n"
        "res = {k: 0 for k in ()}\n"
        "res['rmse'] = float(re.search(r'RMSE of ([0-9.]+)', text).group(1))\n"
        "res['mae'] = float(re.findall(r'MAE ([0-9.]+)', text)[0])\n",
        "paper.md",
    ),
    (
        "split of a README table",
        "def table():\n    for line in Path('README.md').read_text().splitlines():\n"
        "        if line.startswith('| ridge'):\n            return line\n"
        "row = table()\nres = {'rmse': float(row.split('|')[2]), 'mae': float(row.split('|')[3])}\n",
        "README.md",
    ),
    (
        "json.load of a checked-in file",
        "with open('paper_numbers.json') as g:\n    res = json.load(g)\n",
        "paper_numbers.json",
    ),
]


def _fab_tree(tmp: Path, source: str, sink: str) -> Path:
    (tmp / "main.py").write_text(_HEAD + source + sink)
    (tmp / "README.md").write_text("| model | rmse | mae |\n| ridge | 0.597 | 0.41 |\n")
    (tmp / "paper_numbers.json").write_text(_JSON)
    (tmp / "data.csv").write_text("1 2\n3 4\n")
    return tmp


@pytest.mark.parametrize("sink", sorted(_SINKS))
@pytest.mark.parametrize("case", _SOURCES, ids=[c[0] for c in _SOURCES])
def test_a_result_from_no_computation_is_fabricated(tmp_path: Path, case, sink: str) -> None:
    _, source, how = case
    sub = _fab_tree(tmp_path, source, _SINKS[sink])
    found = scan_submission(sub, [{"metric": "rmse", "value": 0.597}])
    assert found and all(f.file == "main.py" and how in f.how for f in found), found
    assert fabricated_by_sau(sub, [{"sau_id": "s", "expected": {"metric": "mae"}}])


@pytest.mark.parametrize(
    "source",
    [
        # computed from data, a model, the submission's own functions: honest
        "X = np.loadtxt('data.csv')\nres = {'rmse': float(np.sqrt(((X[:, 0] - X[:, 1]) ** 2).mean()))}\n",
        "def evaluate():\n    X = np.loadtxt('data.csv')\n    return float(np.abs(X).mean())\n"
        "res = {'rmse': evaluate()}\n",
        "res = {'rmse': round(train_and_score(0.597), 3)}\n",
        "res = json.loads(json.dumps({'rmse': compute()}))\n",
        "res = {}\nfor lr in [0.1, 0.597]:\n    res['rmse'] = lr\n    res[f'acc_{lr}'] = fit(lr)\n",
        "res = {m: fit(m) for m in ['rmse', 'mae']}\n",
        "scores = evaluate()\nres = {k: round(v, 3) for k, v in scores.items()}\n",
        "res = {'rmse': 0.0}\nres['rmse'] = np.mean(errors)\n",
        "text = open('train.log').read()\nres = {'rmse': float(re.findall(r'rmse ([0-9.]+)', text)[-1])}\n",
        "cfg = json.load(open('config.json'))\nres = {'rmse': model(cfg).score()}\n",
        "res = {'rmse': float(base64.b64decode(payload))}\n",
    ],
)
@pytest.mark.parametrize("sink", sorted(_SINKS))
def test_a_computed_result_stays_honest(tmp_path: Path, source: str, sink: str) -> None:
    sub = _fab_tree(tmp_path, source, _SINKS[sink])
    (sub / "train.py").write_text(
        "with open('train.log', 'w') as f:\n    f.write(f'rmse {run()}')\n"
    )
    (sub / "config.json").write_text('{"lr": 0.05}')
    assert scan_submission(sub) == []
    assert scan_submission(sub, {"metric": "rmse", "value": 0.597}) == []


def test_text_read_is_a_source_only_when_no_code_writes_it(tmp_path: Path) -> None:
    source = "with open('paper_numbers.json') as g:\n    res = json.load(g)\n"
    sub = _fab_tree(tmp_path, source, _SINKS["json.dump with"])
    assert {f.key for f in scan_submission(sub)} == {"rmse", "mae"}
    (sub / "eval.py").write_text(
        "import json\njson.dump(metrics(), open('paper_numbers.json', 'w'))\n"
    )
    assert scan_submission(sub) == []


_SHELL = {
    "echo | base64 -d": f"echo '{__import__('base64').b64encode(_JSON.encode()).decode()}' | base64 -d > results.json\n",
    "variable, base64 --decode | gunzip": (
        f"BLOB='{__import__('base64').b64encode(__import__('gzip').compress(_JSON.encode())).decode()}'\n"
        'printf "%s" "$BLOB" | base64 --decode | gunzip > results.json\n'
    ),
    "heredoc into base64 -d": f"base64 -d > results.json <<EOF\n{__import__('base64').b64encode(_JSON.encode()).decode()}\nEOF\n",
    "python -c": 'python3 -c \'import json; json.dump({"rmse": 0.5 + 0.097}, open("results.json", "w"))\'\n',
    "python -c printed": "python -c 'import json; print(json.dumps({\"rmse\": 0.597}))' > results.json\n",
}


@pytest.mark.parametrize("case", sorted(_SHELL))
def test_a_shell_script_decoding_or_typing_results_is_fabricated(tmp_path: Path, case: str) -> None:
    (tmp_path / "reproduce.sh").write_text("#!/usr/bin/env bash\nset -e\n" + _SHELL[case])
    found = scan_submission(tmp_path, {"metric": "rmse", "value": 0.597})
    assert [(f.key, f.value, f.file) for f in found] == [("rmse", 0.597, "reproduce.sh")]


def test_a_decoded_blob_printed_into_results_is_fabricated(tmp_path: Path) -> None:
    (tmp_path / "reproduce.sh").write_text(
        "#!/usr/bin/env bash\npython3 report.py > results.json\n"
    )
    (tmp_path / "report.py").write_text(
        f"import base64, zlib\nprint(zlib.decompress(base64.b64decode('{_B64Z}')).decode())\n"
    )
    (found,) = scan_submission(tmp_path, {"metric": "rmse", "value": 0.597})
    assert (found.file, found.value) == ("report.py", 0.597) and "base64/zlib" in found.how
    # an undecodable pickle: the whole file is fabricated, whatever its metrics
    (tmp_path / "report.py").write_text(
        "import pickle\nprint(pickle.loads(b'\\x80\\x04K\\x01.'))\n"
    )
    (found,) = scan_submission(tmp_path, {"metric": "anything", "value": 1})
    assert found.key == "*" and "pickle" in found.how and "every value" in found.describe()


def test_honest_shell_decoding_computed_output_gives_no_finding(tmp_path: Path) -> None:
    (tmp_path / "reproduce.sh").write_text(
        "#!/usr/bin/env bash\npython3 train.py\n"
        'echo "$(python3 eval.py)" | base64 -d > results.json\n'
        'python3 -c \'import json, main; json.dump({"rmse": main.run()}, open("results.json", "w"))\'\n'
        "python3 report.py > results.json\n"
    )
    (tmp_path / "report.py").write_text(
        "import json, main\nprint(json.dumps({'rmse': main.rmse()}))\n"
    )
    assert scan_submission(tmp_path) == []


# --- containers: a call that puts a value in a dict or list merges its provenance -----------------

#: (metric, value) pairs the merge tests are generated over
_PAIRS = [("rmse", 0.597), ("accuracy", 0.9137), ("blobs-5.kmeans_pp.mean_inertia", 12.25)]
#: sources of a dict ``X`` of one metric ``K``: no computation (the ``how`` a finding names)
_MERGED_SOURCES = {
    "blob": ("X = json.loads(zlib.decompress(base64.b64decode({blob!r})))\n", "base64/zlib"),
    "literal": ("X = {{K: {value!r}}}\n", "literal"),
    "json text": ("X = json.loads({text!r})\n", "literal string"),
    "paper table": (
        "X = {{K: float(re.findall(r'([0-9.]+)', open('/paper/paper.md').read())[0])}}\n",
        "paper.md",
    ),
}
#: ways of merging ``X`` into ``res``, a dict that also holds a computed entry ``loss``
_MERGES = {
    "update": "res = {'loss': train()}\nres.update(X)\n",
    "update of a loaded file": (
        "res = {}\nif os.path.exists('results.json'):\n"
        "    with open('results.json') as g:\n        res = json.load(g)\n"
        "res['loss'] = train()\nres.update(X)\n"
    ),
    "update of a computed dict": "res = train()\nres.update(X)\n",
    "update keywords": "res = train()\nres.update(**X)\n",
    "|=": "res = {'loss': train()}\nres |= X\n",
    "|": "base = train()\nres = base | X\n",
    "setdefault": "res = {'loss': train()}\nres.setdefault(K, X[K])\n",
    "d[k] = x": "res = train()\nres[K] = X[K]\n",
    "__setitem__": "res = train()\nres.__setitem__(K, X[K])\n",
    "copy loop": "res = train()\nfor k, v in X.items():\n    res[k] = v\n",
    "loop over literal keys": "res = {'loss': train()}\nfor k in [K, 'mae']:\n    res[k] = X[K]\n",
    "{**a, **x}": "res = {'loss': train(), **X}\n",
    "dict(a, **x)": "res = dict(train(), **X)\n",
    "ChainMap": "import collections\nres = dict(collections.ChainMap(X, train()))\n",
    "append": "runs = []\nruns.append(X[K])\nres = {'loss': train(), K: runs}\n",
    "extend": "runs = []\nruns.extend([X[K]])\nres = {'loss': train(), K: runs}\n",
    "insert": "runs = []\nruns.insert(0, X[K])\nres = {'loss': train(), K: runs}\n",
}


def _merge_tree(tmp: Path, code: str, metric: str, value: float) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "main.py").write_text(_HEAD + f"K = {metric!r}\n" + code + _SINKS["json.dump with"])
    (tmp / "reproduce.sh").write_text("#!/usr/bin/env bash\npython3 main.py\n")
    return tmp


@pytest.mark.parametrize("merge", sorted(_MERGES))
@pytest.mark.parametrize("source", sorted(_MERGED_SOURCES))
def test_a_metric_merged_in_from_no_computation_is_fabricated(
    tmp_path: Path, source: str, merge: str
) -> None:
    template, how = _MERGED_SOURCES[source]
    for i, (metric, value) in enumerate(_PAIRS):
        text = json.dumps({metric: value})
        blob = __import__("base64").b64encode(__import__("zlib").compress(text.encode())).decode()
        code = template.format(blob=blob, value=value, text=text) + _MERGES[merge]
        sub = _merge_tree(tmp_path / str(i), code, metric, value)
        found = scan_submission(sub, [{"metric": metric, "value": value}])
        assert found and all(how in f.how for f in found), (metric, found)
        if source != "paper table" and "runs" not in _MERGES[merge]:  # (a list: its values)
            assert {f.value for f in found} == {value}, found
        # the computed entry the container also holds stays honest
        assert scan_submission(sub, [{"metric": "loss", "value": 1.0}]) == [], merge


@pytest.mark.parametrize(
    "code",
    [
        # computed values merged into a loaded config, a literal dict, a blob
        "res = json.load(open('config.json'))\nres.update({'rmse': compute()})\n",
        "res = json.load(open('config.json'))\nres.update(evaluate())\n",
        "res = json.load(open('config.json'))\nres |= {'rmse': compute(), 'mae': mae()}\n",
        "cfg = json.load(open('config.json'))\nres = {**cfg, 'rmse': compute()}\n",
        "cfg = json.load(open('config.json'))\nres = dict(cfg, rmse=compute())\n",
        "res = {'rmse': 0.0}\nres.update(rmse=compute())\n",
        "res = {'rmse': 0.0, 'mae': 0.0}\nres.update(evaluate())\n",
        f"res = json.loads(zlib.decompress(base64.b64decode('{_B64Z}')))\nres.update(evaluate())\n",
        "res = {}\nfor k in ['rmse', 'mae']:\n    res[k] = evaluate(k)\n",
        "res = {}\nfor k, v in evaluate().items():\n    res[k] = v\n",
        "res = dict(collections.ChainMap(evaluate(), {'rmse': 0.0}))\n",
        "res = {'rmse': compute()}\nres.setdefault('rmse', 0.597)\n",
        # a default under an entry a loaded file may hold: maybe computed, so honest
        "res = json.load(open('results.json'))\nres.setdefault('rmse', 0.597)\n",
        "accs = []\nfor s in range(3):\n    accs.append(train(s))\nres = {'rmse': accs}\n",
        "accs = [0.0]\naccs.extend(train(s) for s in range(3))\nres = {'rmse': accs}\n",
        # a value that flows back into itself through computation
        "x = 0.5\nfor b in range(9):\n    x = x * 0.9 + 0.1 * loss(b)\nres = {'rmse': x}\n",
        "rows = [0.597]\nfor r in rows:\n    rows.append(step(r))\nres = {'rmse': rows[-1]}\n",
    ],
)
def test_computed_values_merged_into_a_container_stay_honest(tmp_path: Path, code: str) -> None:
    sub = _merge_tree(tmp_path, "import collections\n" + code, "rmse", 0.597)
    (sub / "config.json").write_text('{"lr": 0.05, "rmse_target": 0.597}')
    assert scan_submission(sub) == []
    assert scan_submission(sub, {"metric": "rmse", "value": 0.597}) == []


def test_computed_entries_replace_merged_blob_ones(tmp_path: Path) -> None:
    blob = f"json.loads(zlib.decompress(base64.b64decode('{_B64Z}')))"
    for i, code in enumerate(
        [
            f"res = {{**{blob}, 'rmse': compute()}}\n",
            f"res = {{}}\nres.update({blob})\nres['rmse'] = compute()\n",
            f"res = dict(collections.ChainMap({{'rmse': compute()}}, {blob}))\n",
        ]
    ):
        sub = _merge_tree(tmp_path / str(i), "import collections\n" + code, "rmse", 0.597)
        assert scan_submission(sub, {"metric": "rmse", "value": 0.597}) == [], code
        (found,) = scan_submission(sub, {"metric": "mae", "value": 0.41})
        assert found.value == 0.41 and "base64/zlib" in found.how


# --- generated gaming submissions (benchmarks/gaming_tricks.py) ----------------------------------


@pytest.mark.parametrize("paper", ["kmeans-pp", "logreg-earlystop", "ridge-gd"])
def test_gaming_submissions_writing_results_from_a_blob_or_the_paper_are_fabricated(
    tmp_path: Path, paper: str
) -> None:
    import sys

    sys.path.insert(0, str(REPO / "benchmarks"))
    from gaming_tricks import paper_expected, read_tree, trick_variants

    ref = read_tree(RESOURCES / "submissions" / "reference" / paper)
    dr = read_tree(RESOURCES / "submissions" / "drifted" / paper)
    expected = paper_expected(RESOURCES / "papers" / paper)
    classes = ["blob-results", "check-switching", "check-reading"]
    variants = trick_variants(ref, dr, expected, classes)
    assert {v.split("/")[0] for v in variants} == set(classes)
    saus = [{"sau_id": m, "expected": {"metric": m, "value": v}} for m, v in expected.items()]
    for i, (name, files) in enumerate(sorted(variants.items())):
        sub = tmp_path / str(i)
        for rel, text in files.items():
            (sub / rel).parent.mkdir(parents=True, exist_ok=True)
            (sub / rel).write_text(text)
        assert set(fabricated_by_sau(sub, saus)) == set(expected), name
