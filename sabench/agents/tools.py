"""The tools a model-driven agent calls: bash in the agent's sandbox, and file access confined to
the submission (writable) and the paper (read-only). The model's API key never enters the sandbox:
tools get only the environment the sandbox builds.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from sabench.sandbox import Mount, SandboxSpec, get_backend
from sabench.sandbox.settings import resolve_runtime

PAPER = "/paper"
SUBMISSION = "/submission"
#: Observations longer than this keep their head and tail: enough to act on, bounded context.
OBSERVATION_LIMIT = 8000

TOOL_SPECS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": (
                "Run a bash command in the sandbox (cwd /submission, paper read-only at /paper, "
                "no network). Returns exit code and output."
            ),
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file: relative to /submission, or under /paper.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Write a text file relative to /submission (folders are created).",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "submit",
            "description": "Finish: the submission folder is final (it must hold reproduce.sh).",
            "parameters": {"type": "object", "properties": {}},
        },
    },
]


class ToolError(Exception):
    """A tool call the model got wrong: reported back to it as an observation, never fatal."""


def truncate(text: str, limit: int = OBSERVATION_LIMIT) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters omitted ...]\n{text[-half:]}"


@dataclass
class Workspace:
    """The agent's two folders and how commands run against them."""

    submission: Path
    paper: Path
    runtime: dict[str, Any]
    command_timeout_s: float = 120.0
    #: the devices held for the agent (sabench.sandbox.gpu.allocate): its commands see these only
    gpus: list[str] = field(default_factory=list)

    def _resolve(self, path: str, *, writable: bool) -> Path:
        """Map a model-given path onto the host, refusing anything outside the two folders."""
        if not isinstance(path, str) or not path.strip():
            raise ToolError("path must be a non-empty string")
        posix = PurePosixPath(path.strip())
        if posix.is_absolute():
            if posix.parts[:2] == ("/", "submission"):
                base, rel = self.submission, PurePosixPath(*posix.parts[2:])
            elif posix.parts[:2] == ("/", "paper") and not writable:
                base, rel = self.paper, PurePosixPath(*posix.parts[2:])
            else:
                where = "/submission" if writable else "/submission or /paper"
                raise ToolError(f"{path}: outside {where}")
        else:
            base, rel = self.submission, posix
        if ".." in rel.parts:
            raise ToolError(f"{path}: '..' is not allowed")
        target = base / rel
        real_base = base.resolve()
        real = target.resolve()
        if real != real_base and real_base not in real.parents:
            raise ToolError(f"{path}: resolves outside its folder")
        return target

    def read_file(self, path: str) -> str:
        target = self._resolve(path, writable=False)
        if not target.is_file():
            raise ToolError(f"{path}: no such file")
        data = target.read_bytes()
        if b"\0" in data[:4096]:
            raise ToolError(f"{path}: binary file ({len(data)} bytes)")
        return truncate(data.decode("utf-8", errors="replace"))

    def write_file(self, path: str, content: str) -> str:
        if not isinstance(content, str):
            raise ToolError("content must be a string")
        target = self._resolve(path, writable=True)
        if target == self.submission:
            raise ToolError(f"{path}: is the submission folder itself")
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink():
            target.unlink()
        target.write_text(content, encoding="utf-8")
        return f"wrote {len(content.encode())} bytes to {target.relative_to(self.submission)}"

    def bash(self, command: str) -> str:
        if not isinstance(command, str) or not command.strip():
            raise ToolError("command must be a non-empty string")
        runtime = resolve_runtime(self.runtime)
        backend = get_backend(runtime["backend"])
        env_path = runtime["python_env"]
        spec = SandboxSpec(
            command=["bash", "-c", command],
            workdir=self.submission,
            ro_mounts=[Mount(self.paper, PAPER)],
            time_limit_s=min(self.command_timeout_s, float(runtime["time_limit_s"])),
            mem_mb=int(runtime["mem_mb"]),
            pids=int(runtime["pids"]),
            output_limit_mb=int(runtime["output_limit_mb"]),
            network=runtime["network"],
            gpus=list(self.gpus),
            image=runtime["image"],
            python_env=Path(env_path) if env_path else None,
            log_limit_kb=64,
        )
        fd, log_name = tempfile.mkstemp(prefix="sabench-tool-", suffix=".log")
        os.close(fd)
        log_path = Path(log_name)
        try:
            result = backend.run(spec, log_path)
            output = log_path.read_text(encoding="utf-8", errors="replace")
        finally:
            log_path.unlink(missing_ok=True)
        output = "\n".join(line for line in output.splitlines() if not line.startswith("[sabench]"))
        # No timings in the observation: the same commands give the same conversation, so a
        # rerun is answered from the LLM cache.
        head = f"exit code {result.exit_code}"
        if result.status != "ok" and result.status != "failed":
            head += f" ({result.status}" + (
                f": stopped after {spec.time_limit_s:.0f}s)" if result.status == "timeout" else ")"
            )
        return truncate(f"{head}\n{output}".rstrip())


def parse_arguments(raw: Any) -> dict[str, Any]:
    """Tool arguments as the model sent them (a JSON string, usually); bad JSON is the model's error."""
    if isinstance(raw, dict):
        return raw
    if raw in (None, ""):
        return {}
    try:
        value = json.loads(raw)
    except (TypeError, json.JSONDecodeError) as exc:
        raise ToolError(f"arguments are not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ToolError("arguments must be a JSON object")
    return value


def call_tool(workspace: Workspace, name: str, arguments: dict[str, Any]) -> str:
    """Run one tool; raises ToolError for anything the model should fix."""
    expected = {"bash": ("command",), "read_file": ("path",), "write_file": ("path", "content")}
    if name not in expected:
        raise ToolError(f"unknown tool {name!r} (tools: bash, read_file, write_file, submit)")
    missing = [a for a in expected[name] if a not in arguments]
    if missing:
        raise ToolError(f"{name}: missing argument(s) {', '.join(missing)}")
    extra = sorted(set(arguments) - set(expected[name]))
    if extra:
        raise ToolError(f"{name}: unexpected argument(s) {', '.join(extra)}")
    return getattr(workspace, name)(**arguments)
