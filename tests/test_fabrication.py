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
