"""A cgroup per sandboxed run: hard memory and pids limits, OOM-kill and peak-memory readings.

Works with cgroup v1 (memory and pids hierarchies, as on this build machine and older Slurm nodes)
and v2. The run's group is made under the caller's own group, so a job's limits (Slurm's, the
container's) still bound it, and removed afterwards; groups left by a killed caller are reaped.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

PREFIX = "sabench-"


class CgroupUnavailable(Exception):
    """Why no run cgroup could be made (the caller falls back to rlimits and says so)."""


@dataclass(frozen=True)
class CgroupMount:
    root: str
    mountpoint: Path
    fstype: str
    options: frozenset[str]


def cgroup_mounts() -> list[CgroupMount]:
    out = []
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        for line in fh:
            left, _, right = line.partition(" - ")
            lf, rf = left.split(), right.split()
            if len(lf) < 5 or len(rf) < 3:
                continue
            point = Path(lf[4].replace("\\040", " "))
            out.append(CgroupMount(lf[3], point, rf[0], frozenset(rf[2].split(","))))
    return out


def _own_paths() -> dict[str, str]:
    """controller -> this process's cgroup path ('' is the v2 unified hierarchy)."""
    out: dict[str, str] = {}
    with open("/proc/self/cgroup", encoding="utf-8") as fh:
        for line in fh:
            _id, controllers, path = line.rstrip("\n").split(":", 2)
            for c in controllers.split(",") if controllers else [""]:
                out[c] = path
    return out


def cgroup_dir(mount: CgroupMount, own: str) -> Path:
    rel = os.path.relpath(own, mount.root) if own.startswith(mount.root) else own
    rel = "" if rel == "." else rel.lstrip("/")
    return mount.mountpoint / rel


def read_stat_key(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _procs(d: Path) -> list[int]:
    try:
        return [int(x) for x in (d / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _reap_stale(parent: Path) -> None:
    """Remove run groups whose creator died without cleaning up (SIGKILLed job)."""
    with contextlib.suppress(OSError):
        for d in parent.iterdir():
            parts = d.name.split("-")
            if not d.name.startswith(PREFIX) or len(parts) != 3 or not parts[1].isdigit():
                continue
            if _alive(int(parts[1])):
                continue
            for pid in _procs(d):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                d.rmdir()


@dataclass
class RunCgroup:
    """One run's cgroup(s); the sandbox's first process writes itself into ``procs_files``."""

    version: int
    dirs: dict[str, Path] = field(default_factory=dict)

    @classmethod
    def create(cls, mem_bytes: int, pids: int) -> RunCgroup:
        """Make and limit a fresh group, or raise :class:`CgroupUnavailable` saying why."""
        if os.geteuid() != 0:
            raise CgroupUnavailable("not root: cannot create cgroups")
        mounts = cgroup_mounts()
        own = _own_paths()
        name = f"{PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        v1 = {
            c: m
            for m in mounts
            if m.fstype == "cgroup"
            for c in ("memory", "pids")
            if c in m.options
        }
        if "memory" in v1:
            return cls._create_v1(v1, own, name, mem_bytes, pids)
        v2 = next((m for m in mounts if m.fstype == "cgroup2"), None)
        if v2 is not None:
            return cls._create_v2(v2, own.get("", "/"), name, mem_bytes, pids)
        raise CgroupUnavailable("no cgroup memory controller is mounted")

    @classmethod
    def _create_v1(
        cls, mounts: dict[str, CgroupMount], own: dict[str, str], name: str, mem: int, pids: int
    ) -> RunCgroup:
        group = cls(version=1)
        try:
            for controller, mount in mounts.items():
                parent = cgroup_dir(mount, own.get(controller, "/"))
                _reap_stale(parent)
                d = parent / name
                d.mkdir()
                group.dirs[controller] = d
            mem_dir = group.dirs["memory"]
            (mem_dir / "memory.limit_in_bytes").write_text(str(mem))
            with contextlib.suppress(OSError):  # absent without swap accounting
                (mem_dir / "memory.memsw.limit_in_bytes").write_text(str(mem))
            if "pids" in group.dirs:
                (group.dirs["pids"] / "pids.max").write_text(str(pids))
        except OSError as exc:
            group.remove()
            raise CgroupUnavailable(f"cgroup v1: {exc}") from exc
        return group

    @classmethod
    def _create_v2(cls, mount: CgroupMount, own: str, name: str, mem: int, pids: int) -> RunCgroup:
        errors = []
        for parent in dict.fromkeys([cgroup_dir(mount, own), mount.mountpoint]):
            try:
                wanted = {"memory", "pids"}
                enabled = set((parent / "cgroup.subtree_control").read_text().split())
                if not wanted <= enabled:
                    (parent / "cgroup.subtree_control").write_text("+memory +pids")
                _reap_stale(parent)
                d = parent / name
                d.mkdir()
            except OSError as exc:
                errors.append(f"{parent}: {exc}")
                continue
            group = cls(version=2, dirs={"unified": d})
            try:
                (d / "memory.max").write_text(str(mem))
                with contextlib.suppress(OSError):
                    (d / "memory.swap.max").write_text("0")
                (d / "pids.max").write_text(str(pids))
            except OSError as exc:
                group.remove()
                errors.append(f"{d}: {exc}")
                continue
            return group
        raise CgroupUnavailable("cgroup v2: " + "; ".join(errors))

    @property
    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs.values()]

    def describe(self) -> str:
        controllers = "+".join(sorted(self.dirs)) if self.version == 1 else "memory+pids"
        return f"cgroup v{self.version} ({controllers})"

    def _dir(self, controller: str) -> Path | None:
        return self.dirs.get("unified") or self.dirs.get(controller)

    def oom_kills(self) -> int:
        d = self._dir("memory")
        if d is None:
            return 0
        return read_stat_key(
            d / ("memory.oom_control" if self.version == 1 else "memory.events"), "oom_kill"
        )

    def peak_bytes(self) -> int | None:
        d = self._dir("memory")
        f = d / ("memory.max_usage_in_bytes" if self.version == 1 else "memory.peak") if d else None
        try:
            return int(f.read_text()) if f else None
        except (OSError, ValueError):
            return None

    def pids_limit_hits(self) -> int:
        d = self._dir("pids")
        return read_stat_key(d / "pids.events", "max") if d else 0

    def kill_all(self, timeout_s: float = 3.0) -> bool:
        """SIGKILL everything left in the group; True once it is empty."""
        d = self.dirs.get("unified")
        if d is not None:
            with contextlib.suppress(OSError):
                (d / "cgroup.kill").write_text("1")
        deadline = time.monotonic() + timeout_s
        while True:
            pids = {p for d in self.dirs.values() for p in _procs(d)}
            if not pids:
                return True
            if time.monotonic() > deadline:
                return False
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.02)

    def remove(self, timeout_s: float = 3.0) -> bool:
        """Remove the group's folders (retrying while the killed tasks drain)."""
        deadline = time.monotonic() + timeout_s
        left = dict(self.dirs)
        while left:
            for key, d in list(left.items()):
                try:
                    d.rmdir()
                    del left[key]
                except FileNotFoundError:
                    del left[key]
                except OSError:
                    pass
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        return not left
