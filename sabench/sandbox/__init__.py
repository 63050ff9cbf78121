"""One interface, several sandbox backends (docs/architecture.md, "The sandbox interface").

A stage asks for a backend by name (``local``, ``bwrap``, ``docker``, ``podman``, ``apptainer``,
``auto``), fills a :class:`SandboxSpec` and gets a :class:`RunResult`. Backends never raise for what the sandboxed code does: a failing, hung or
flooding command is a status.
"""

from __future__ import annotations

import importlib
import logging
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar, NamedTuple

from sabench.errors import UserError

log = logging.getLogger("sabench.sandbox")

#: What a sandboxed command can end as (a subset of ``contracts.EXECUTION_STATUSES``).
RUN_STATUSES = ("ok", "failed", "timeout", "oom", "output_limit", "sandbox_error")
NETWORK_MODES = ("none", "full")
#: Where the one writable folder appears inside every sandbox, and where the command starts.
SUBMISSION_TARGET = "/submission"
#: Targets a read-only mount may not shadow (the system the sandbox runs on).
_RESERVED_TARGETS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/proc", "/dev", "/tmp")
#: Isolation defaults a run may relax (container backends honour them; see docs/sandboxes.md).
ISOLATION_KEYS = (
    "non_root",
    "drop_capabilities",
    "no_new_privileges",
    "read_only_root",
    "read_only_paper",
)


class Mount(NamedTuple):
    """A host folder or file shown read-only inside the sandbox at ``target``."""

    source: Path
    target: str


def _runtime_default(key: str) -> Any:
    from sabench.grid import runtime_defaults

    return runtime_defaults()[key]


@dataclass
class SandboxSpec:
    """Everything a backend needs to run one command; nothing from the host leaks in implicitly.

    ``env`` holds only what the caller gives: backends add PATH (the python env first), HOME,
    TMPDIR, LANG, USER and VIRTUAL_ENV, never the host's environment. ``gpus`` and ``image`` are
    recorded by every backend and used by the container ones. ``isolation`` relaxes the container
    backends' defaults (keys in ``ISOLATION_KEYS``, each True unless set False, with a warning);
    ``options`` holds backend settings such as ``image_cache``.
    """

    command: list[str]
    workdir: Path
    ro_mounts: list[Mount] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    # limits and network default to the config schema's ``runtime`` defaults (their one home)
    time_limit_s: float = field(default_factory=lambda: float(_runtime_default("time_limit_s")))
    mem_mb: int = field(default_factory=lambda: int(_runtime_default("mem_mb")))
    pids: int = field(default_factory=lambda: int(_runtime_default("pids")))
    output_limit_mb: int = field(default_factory=lambda: int(_runtime_default("output_limit_mb")))
    network: str = field(default_factory=lambda: str(_runtime_default("network")))
    gpus: int | list[int] | str | None = 0
    image: str | None = None
    python_env: Path | None = None
    log_limit_kb: int = field(default_factory=lambda: int(_runtime_default("log_limit_kb")))
    isolation: dict[str, bool] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.workdir = Path(self.workdir)
        self.ro_mounts = [Mount(Path(m[0]), str(m[1])) for m in self.ro_mounts]
        if self.python_env is not None:
            self.python_env = Path(self.python_env)
        if not self.command or not all(isinstance(a, str) for a in self.command):
            raise UserError(None, "command", "needs a non-empty list of strings")
        if self.network not in NETWORK_MODES:
            raise UserError(None, "runtime.network", f"must be one of {NETWORK_MODES}")
        for name in ("time_limit_s", "mem_mb", "pids", "output_limit_mb", "log_limit_kb"):
            if not getattr(self, name) > 0:
                raise UserError(
                    None, f"runtime.{name}", f"must be > 0, got {getattr(self, name)!r}"
                )
        seen = {SUBMISSION_TARGET}
        for m in self.ro_mounts:
            target = PurePosixPath(m.target)
            if not target.is_absolute() or ".." in target.parts or str(target) != m.target:
                raise UserError(
                    None, "mounts", f"target {m.target!r} must be a clean absolute path"
                )
            if (
                m.target in seen
                or m.target == "/"
                or any(m.target == r or m.target.startswith(r + "/") for r in _RESERVED_TARGETS)
            ):
                raise UserError(None, "mounts", f"target {m.target!r} is reserved or used twice")
            seen.add(m.target)
            if not m.source.exists():
                raise UserError(
                    m.source, "mounts", "the source of a read-only mount does not exist"
                )
        for key in self.isolation:
            if key not in ISOLATION_KEYS:
                raise UserError(
                    None, "runtime.isolation", f"unknown key {key!r}; one of {ISOLATION_KEYS}"
                )
        for key, value in self.env.items():
            if not isinstance(key, str) or not isinstance(value, str) or not key or "=" in key:
                raise UserError(None, "env", f"bad variable {key!r}")

    @property
    def output_limit_bytes(self) -> int:
        return int(self.output_limit_mb * 1024 * 1024)

    @property
    def mem_bytes(self) -> int:
        return int(self.mem_mb * 1024 * 1024)


@dataclass
class RunResult:
    """How a sandboxed command ended. ``enforcement`` says how each limit was actually enforced."""

    status: str
    exit_code: int | None
    wall_s: float
    peak_mem_mb: float | None
    log_bytes: int
    message: str = ""
    enforcement: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in RUN_STATUSES:
            raise ValueError(f"unknown run status {self.status!r}")


class Sandbox(ABC):
    """A way to run untrusted code. Subclasses set ``name`` and ``isolation``."""

    name: ClassVar[str]
    #: One line for the record, e.g. "UNSANDBOXED ..." or "sandboxed: ...".
    isolation: ClassVar[str]
    #: Whether ``SandboxSpec.python_env`` must be given (the sandbox cannot see the host's Python).
    needs_python_env: ClassVar[bool] = True
    #: Whether ``SandboxSpec.image`` is what the command runs in (else it sees this host's system).
    runs_images: ClassVar[bool] = False
    #: Whether an image's ENTRYPOINT runs with the command as its arguments (docker, podman).
    keeps_entrypoint: ClassVar[bool] = False

    @abstractmethod
    def available(self) -> tuple[bool, str]:
        """Whether this backend can run here, and why not."""

    def available_when_named(self) -> tuple[bool, str]:
        """Whether this backend can run here when the user listed it, image or not (``auto`` asks
        :meth:`available`, which may also want an image it can find without being told)."""
        return self.available()

    @abstractmethod
    def run(self, spec: SandboxSpec, log_path: Path) -> RunResult:
        """Run ``spec.command``; write its capped log to ``log_path``; its faults are a status."""

    def describe(self, spec: SandboxSpec | None = None) -> dict[str, Any]:
        """What the execution record says about the sandbox (backend, isolation, image)."""
        return {
            "backend": self.name,
            "isolation": self.isolation,
            "image": spec.image if spec is not None else None,
        }


#: name -> "module:Class", or None for a backend that is planned but not written yet.
_REGISTRY: dict[str, str | None] = {
    "docker": "sabench.sandbox.docker:DockerSandbox",
    "podman": "sabench.sandbox.podman:PodmanSandbox",
    "apptainer": "sabench.sandbox.apptainer:ApptainerSandbox",
    "bwrap": "sabench.sandbox.bwrap:BwrapSandbox",
    "local": "sabench.sandbox.local:LocalSandbox",
}
#: ``auto`` tries these in order. ``local`` is never among them: agent code is untrusted.
AUTO_ORDER = ("docker", "podman", "apptainer", "bwrap")


def register_backend(name: str, target: str | None) -> None:
    """Register (or replace) a backend as ``"module:Class"``: how container backends plug in."""
    if name == "auto":
        raise ValueError("'auto' is not a backend")
    _REGISTRY[name] = target


def backend_names() -> list[str]:
    """Every name ``runtime.backend`` accepts, implemented or not."""
    return [*sorted(_REGISTRY), "auto"]


def _load(name: str) -> Sandbox:
    target = _REGISTRY[name]
    if target is None:
        ready = ", ".join(n for n in sorted(_REGISTRY) if _REGISTRY[n]) + ", auto"
        raise UserError(
            None,
            "runtime.backend",
            f"backend {name!r} is planned but not implemented yet; use {ready}",
        )
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)()


def backend_choices(name: str | Sequence[str]) -> tuple[str, ...]:
    """The backends ``runtime.backend`` names, in order of preference (``auto``: ``AUTO_ORDER``);
    a one-line UserError for an unknown name or an empty list."""
    if name == "auto":
        return AUTO_ORDER
    names = (name,) if isinstance(name, str) else tuple(name or ())
    if not names:
        raise UserError(None, "runtime.backend", "an empty list names no backend")
    for candidate in names:
        if candidate not in _REGISTRY:
            raise UserError(
                None,
                "runtime.backend",
                f"unknown backend {candidate!r}; choose one of {', '.join(backend_names())}, "
                "or a list of them in order of preference",
            )
    return names


def get_backend(name: str | Sequence[str]) -> Sandbox:
    """The backend called ``name``; a list: the first of those that works on this host (a cluster
    profile's ``[apptainer, bwrap]``); ``auto``: the first that works of ``AUTO_ORDER``, never local."""
    order = backend_choices(name)
    if isinstance(name, str) and name != "auto":
        return _load(name)
    reasons = []
    for candidate in order:
        if _REGISTRY.get(candidate) is None:
            reasons.append(f"{candidate}: not implemented")
            continue
        backend = _load(candidate)
        ok, why = backend.available() if name == "auto" else backend.available_when_named()
        if ok:
            log.info(
                "runtime.backend %s picked %r (%s)",
                backend_label(name),
                candidate,
                "; ".join(reasons) or "first choice",
            )
            return backend
        reasons.append(f"{candidate}: {why}")
    hint = (
        "install bubblewrap, or set runtime.backend: local for trusted code only (it runs "
        "UNSANDBOXED)"
        if name == "auto"
        else "install one of them or list another"
    )
    raise UserError(
        None,
        "runtime.backend",
        f"{backend_label(name)} found no sandbox that works here ({'; '.join(reasons)}); {hint}",
    )


def backend_label(name: str | Sequence[str]) -> str:
    """``runtime.backend`` as one word for records and messages (``apptainer,bwrap``)."""
    return name if isinstance(name, str) else ",".join(name)


__all__ = [
    "AUTO_ORDER",
    "ISOLATION_KEYS",
    "NETWORK_MODES",
    "RUN_STATUSES",
    "SUBMISSION_TARGET",
    "Mount",
    "RunResult",
    "Sandbox",
    "SandboxSpec",
    "backend_choices",
    "backend_label",
    "backend_names",
    "get_backend",
    "register_backend",
]
