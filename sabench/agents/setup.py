"""What a command agent from a preset (:mod:`sabench.agents.presets`) needs at run time: its own
Python env (:func:`agent_python_env`), its npm packages (:func:`agent_npm_folder`) and its
transcript moved out of the submission into the run folder (:func:`capture_transcript`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path, PurePosixPath
from typing import Any

#: Where the Python envs of agents with ``requirements`` are built (in the repository).
AGENT_ENVS = ".venv-agents"
#: Where an agent's npm packages are shown in its sandbox (read-only), and their stamp file.
NPM_TARGET = "/opt/sabench-agent"
NPM_STAMP = ".sabench-npm"
#: Largest transcript file taken out of a submission (a bigger one is left where it is).
MAX_TRANSCRIPT_BYTES = 64 << 20


def agent_python_env(agent: dict[str, Any], repo: Path, base_requirements: Path) -> Path:
    """The agent's own Python env: ``base_requirements`` (the sandbox's pins) and its
    ``requirements``, built once under ``repo/.venv-agents/`` (rebuilt when a pin changes).
    Raises ``RuntimeError`` when pip cannot build it."""
    from sabench.sandbox.pyenv import ensure_sandbox_env

    files = [base_requirements, *(_under(repo, r) for r in agent["requirements"])]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise RuntimeError(f"requirements file not found: {', '.join(missing)}")
    return ensure_sandbox_env(repo / AGENT_ENVS / files[-1].stem, files)


def agent_npm_folder(agent: dict[str, Any], repo: Path, timeout_s: int = 900) -> Path:
    """The agent's ``npm`` packages (pinned ``name@version``), installed once on the host into
    ``repo/.venv-agents/npm-<hash>`` (shown read-only at :data:`NPM_TARGET`). Raises
    ``RuntimeError`` when npm cannot install them."""
    import fcntl
    import hashlib
    import subprocess
    import tempfile

    packages = [str(p) for p in agent["npm"]]
    digest = hashlib.sha256("\n".join(packages).encode()).hexdigest()[:16]
    folder = repo / AGENT_ENVS / f"npm-{digest}"
    if (folder / NPM_STAMP).is_file():
        return folder
    if shutil.which("npm") is None:
        raise RuntimeError(f"npm is not on this host's PATH (to install {' '.join(packages)})")
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(Path(tempfile.gettempdir()) / f"sabench-npm-{digest}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / NPM_STAMP).is_file():
            return folder
        shutil.rmtree(folder, ignore_errors=True)
        argv = ["npm", "install", "--prefix", str(folder), "--no-audit", "--no-fund", *packages]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
        if done.returncode:
            raise RuntimeError(f"npm install {' '.join(packages)} failed: {done.stderr[-1500:]}")
        (folder / NPM_STAMP).write_text("\n".join(packages) + "\n")
    return folder


def _under(repo: Path, name: str) -> Path:
    path = Path(name).expanduser()
    return path if path.is_absolute() else repo / path


def transcript_source(workdir: Path, relative: str) -> Path | None:
    """The transcript file in the agent's folder, or None where it is not a plain file inside
    it (the agent wrote nothing there, or a link: it is never followed out of the sandbox)."""
    parts = PurePosixPath(relative).parts
    if not parts or PurePosixPath(relative).is_absolute() or ".." in parts:
        return None
    current = workdir
    for part in parts:
        current = current / part
        if current.is_symlink():
            return None
    if not current.is_file() or current.stat().st_size > MAX_TRANSCRIPT_BYTES:
        return None
    return current


def capture_transcript(spec: dict[str, Any], workdir: Path, run_dir: Path) -> str | None:
    """Move the agent's transcript out of its submission folder into ``run_dir``
    (``agent-transcript<suffix>``) and its messages into ``transcript.jsonl`` (what the report's
    run page shows). Returns the raw file's name, or None when the agent wrote none."""
    source = transcript_source(workdir, spec["path"])
    if source is None:
        return None
    raw = run_dir / f"agent-transcript{source.suffix}"
    run_dir.mkdir(parents=True, exist_ok=True)
    shutil.move(source, raw)
    folder = source.parent
    while folder != workdir and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent
    events = transcript_events(raw.read_text(encoding="utf-8", errors="replace"), spec)
    with open(run_dir / "transcript.jsonl", "w", encoding="utf-8") as out:
        for step, event in enumerate(events):
            out.write(json.dumps({"step": step, **event}, default=str) + "\n")
    return raw.name


#: What a message keeps in transcript.jsonl (the provider's raw response stays in the raw file).
MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id")


def transcript_events(text: str, spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages of a transcript: the list under ``spec["messages"]`` of a JSON object, a JSON
    list, or JSON lines; each message's role, content and tool calls."""
    try:
        data: Any = json.loads(text)
    except ValueError:
        data = [_json_line(line) for line in text.splitlines() if line.strip()]
    if isinstance(data, dict):
        data = data.get(spec.get("messages", "messages"), [])
    if not isinstance(data, list):
        return []
    events = []
    for message in data:
        if isinstance(message, dict):
            kept = {k: message[k] for k in MESSAGE_KEYS if message.get(k) not in (None, "", [])}
            events.append(kept or message)
        else:
            events.append({"value": message})
    return events


def _json_line(line: str) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return {"text": line}
