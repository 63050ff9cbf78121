"""A folder laid out as SA-Bench's data (saus/, runs/<config>.tar.gz, reference/<config>/) around
one demo paper and one submission, for the tests of the benchmarks that read SA-Bench."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

from sabench.saus import import_paper_saus

REPO = Path(__file__).resolve().parents[1]


def write_sabench_layout(root: Path, paper: str, submission: Path) -> Path:
    """SA-Bench's layout under ``root``: the demo paper's SAUs, ``submission`` as the run of the
    configuration ``demo``, and a reference that scores every second SAU 1 and the others 0."""
    saus = import_paper_saus(REPO / "resources" / "papers" / paper)
    by_dim: dict[str, list[dict[str, str]]] = {}
    claims: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for i, s in enumerate(saus):
        item = {"id": s["sau_id"], "claim": s["claim"], "source": s["source"]}
        by_dim.setdefault(s["dimension"], []).append(item)
        verdict = {"id": s["sau_id"], "score": float(i % 2 == 0), "judge_reasoning": "set here"}
        claims.setdefault(s["dimension"], {"claims": []})["claims"].append(verdict)
    (root / "saus").mkdir()
    (root / "saus" / f"{paper}.json").write_text(json.dumps({"paper_id": paper, **by_dim}))
    (root / "reference" / "demo").mkdir(parents=True)
    (root / "reference" / "demo" / f"{paper}.json").write_text(json.dumps({"dimensions": claims}))
    (root / "runs").mkdir()
    with tarfile.open(root / "runs" / "demo.tar.gz", "w:gz") as tar:
        tar.add(submission, arcname=paper)
    return root
