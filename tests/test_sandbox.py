"""The sandbox backends against hostile reproduce.sh scripts: real bwrap, real cgroups, no mocks."""

from __future__ import annotations

import logging
import os
import secrets
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_access import assert_outputs_follow, assert_read_and_written, paper_agent_execute

from sabench.errors import UserError
from sabench.sandbox import Mount, RunResult, Sandbox, SandboxSpec, get_backend
from sabench.sandbox.bwrap import BwrapSandbox
from sabench.sandbox.cgroups import PREFIX, CgroupUnavailable, RunCgroup
from sabench.sandbox.common import LogCapture, resolve_python_env
from sabench.sandbox.local import LocalSandbox

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def bwrap() -> BwrapSandbox:
    backend = get_backend("bwrap")
    ok, why = backend.available()
    if not ok:
        pytest.skip(f"bwrap unavailable: {why}")
    assert isinstance(backend, BwrapSandbox)
    return backend


def run_script(
    backend: Sandbox, tmp_path: Path, script: str, env_path: Path | None, **limits: object
) -> tuple[RunResult, str, Path]:
    """Run ``script`` as reproduce.sh with /paper mounted; return result, log and workdir."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "reproduce.sh").write_text(script)
    paper = tmp_path / "paper"
    paper.mkdir()
    (paper / "paper.md").write_text("# The paper\n")
    settings: dict = {"time_limit_s": 30, "mem_mb": 512, "pids": 256, "output_limit_mb": 64}
    settings.update(limits)
    spec = SandboxSpec(
        command=["bash", "reproduce.sh"],
        workdir=work,
        ro_mounts=[Mount(paper, "/paper")],
        python_env=env_path,
        **settings,  # type: ignore[arg-type]
    )
    result = backend.run(spec, tmp_path / "run.log")
    return result, (tmp_path / "run.log").read_text(errors="replace"), work


def _own_cgroup_leftovers() -> list[str]:
    own = next(
        line.split(":", 2)[2].strip()
        for line in Path("/proc/self/cgroup").read_text().splitlines()
        if ":memory:" in line
    )
    parent = Path("/sys/fs/cgroup/memory" + own)
    prefix = f"{PREFIX}{os.getpid()}-"
    return (
        [d.name for d in parent.iterdir() if d.name.startswith(prefix)] if parent.is_dir() else []
    )


# --- registry and spec -------------------------------------------------------------------------


def test_registry_names_and_errors() -> None:
    assert isinstance(get_backend("local"), LocalSandbox)
    assert isinstance(get_backend("bwrap"), BwrapSandbox)
    with pytest.raises(UserError, match=r"runtime\.backend.*unknown backend 'dockr'"):
        get_backend("dockr")
    for name in ("docker", "podman", "apptainer"):  # container backends: tests/test_docker.py
        assert get_backend(name).name == name


@pytest.mark.bwrap
def test_auto_picks_bwrap_and_never_local(
    bwrap: BwrapSandbox, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for name in ("docker", "podman", "apptainer"):  # ahead of bwrap in auto's order
        monkeypatch.setattr(type(get_backend(name)), "available", lambda self: (False, "absent"))
    with caplog.at_level(logging.INFO, logger="sabench.sandbox"):
        assert get_backend("auto").name == "bwrap"
    assert "auto picked 'bwrap'" in caplog.text
    monkeypatch.setattr(BwrapSandbox, "available", lambda self: (False, "not here"))
    with pytest.raises(UserError, match=r"runtime\.backend.*no sandbox.*bwrap: not here"):
        get_backend("auto")


@pytest.mark.bwrap
def test_a_list_picks_the_first_backend_that_works(
    bwrap: BwrapSandbox, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The slurm profile's [apptainer, bwrap]: apptainer where a node has it, else bwrap."""
    from sabench.sandbox.apptainer import ApptainerSandbox

    monkeypatch.setattr(ApptainerSandbox, "installed", lambda self: (False, "not installed"))
    with caplog.at_level(logging.INFO, logger="sabench.sandbox"):
        assert get_backend(["apptainer", "bwrap"]).name == "bwrap"
    assert "apptainer,bwrap picked 'bwrap' (apptainer: not installed)" in caplog.text
    with pytest.raises(UserError, match=r"runtime\.backend.*apptainer: not installed"):
        get_backend(["apptainer"])
    with pytest.raises(UserError, match="unknown backend 'auto'"):
        get_backend(["auto", "bwrap"])  # auto is a word of its own, not a list member
    assert get_backend(["local"]).name == "local"  # named: allowed, as with backend: local


def test_runtime_backend_lists_are_validated() -> None:
    from sabench.sandbox.settings import resolve_runtime

    assert resolve_runtime({"backend": ["apptainer", "bwrap"]})["backend"] == [
        "apptainer",
        "bwrap",
    ]
    for bad in ([], ["auto"], ["bwrap", "chroot"], "chroot"):
        with pytest.raises(UserError, match=r"runtime\.backend"):
            resolve_runtime({"backend": bad})


def test_spec_validation(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"runtime\.network"):
        SandboxSpec(command=["true"], workdir=tmp_path, network="host")
    with pytest.raises(UserError, match="reserved"):
        SandboxSpec(command=["true"], workdir=tmp_path, ro_mounts=[Mount(tmp_path, "/usr/x")])
    with pytest.raises(UserError, match="clean absolute"):
        SandboxSpec(command=["true"], workdir=tmp_path, ro_mounts=[Mount(tmp_path, "paper")])
    with pytest.raises(UserError, match=r"runtime\.mem_mb"):
        SandboxSpec(command=["true"], workdir=tmp_path, mem_mb=0)


def test_python_env_binds_base_interpreter_not_shims(sandbox_env: Path) -> None:
    penv = resolve_python_env(sandbox_env)
    assert penv.binds[0] == sandbox_env.resolve()
    home = next(
        line.split("=", 1)[1].strip()
        for line in (sandbox_env / "pyvenv.cfg").read_text().splitlines()
        if line.startswith("home")
    )
    base = Path(home).resolve().parent
    assert any(b == base or b in base.parents for b in penv.binds)
    assert not any("shims" in b.parts for b in penv.binds)


@pytest.mark.bwrap
def test_a_mount_over_the_python_env_is_refused(
    bwrap: BwrapSandbox, sandbox_env: Path, tmp_path: Path
) -> None:
    """A project cloned under a path the sandbox mounts over (CI once cloned under /check while
    checks were mounted there) gets a clear error, not "execvp python: No such file"."""
    above_env = str(sandbox_env.resolve().parent)
    if above_env == "/tmp" or above_env.startswith(("/tmp/", "/usr/")):
        pytest.skip(f"{above_env} is a reserved mount target: no mount can lie over it")
    work = tmp_path / "work"
    work.mkdir()
    spec = SandboxSpec(
        command=["python", "-c", "pass"],
        workdir=work,
        ro_mounts=[Mount(tmp_path, above_env)],
        python_env=sandbox_env,
    )
    with pytest.raises(UserError, match=rf"runtime\.python_env.*lies under {above_env}"):
        bwrap.run(spec, tmp_path / "run.log")
    spec.ro_mounts = [Mount(tmp_path, "/sabench-elsewhere")]
    assert bwrap.run(spec, tmp_path / "run.log").status == "ok"


def test_log_capture_keeps_head_and_tail() -> None:
    cap = LogCapture(1000)
    cap.feed(b"HEAD" + b"x" * 100_000)
    for _ in range(50):
        cap.feed(b"y" * 3000)
    cap.feed(b"TAIL")
    out = cap.render()
    assert cap.total == 4 + 100_000 + 150_000 + 4
    assert out.startswith(b"HEAD") and out.endswith(b"TAIL")
    assert len(out) < 1100 and b"bytes of output omitted" in out


# --- bwrap: normal runs --------------------------------------------------------------------------


@pytest.mark.bwrap
def test_bwrap_ok_runs_as_non_root_with_the_sandbox_python(
    bwrap: BwrapSandbox, sandbox_env: Path, tmp_path: Path
) -> None:
    script = """set -e
id -u > uid.txt
grep CapEff /proc/self/status
python -c 'import numpy, sys; print("numpy", numpy.__version__, sys.executable)'
cat /paper/paper.md
cp /bin/true suid-bin && chmod u+s suid-bin
ln -s /etc/shadow leak
ln -s ../../.. up
mkdir sub && ln -s . sub/L && ln -s sub/L/../../x tricky
ln -s uid.txt inside
mkfifo pipe
echo '{"acc": 0.5}' > results.json
"""
    res, log, work = run_script(bwrap, tmp_path, script, sandbox_env)
    assert res.status == "ok", (res, log)
    assert res.exit_code == 0 and res.wall_s > 0 and res.peak_mem_mb and res.peak_mem_mb > 0
    assert (work / "uid.txt").read_text().strip() == "1000"
    assert "CapEff:\t0000000000000000" in log
    assert f"numpy 2.4.6 {sandbox_env}/bin/python" in log
    assert "# The paper" in log
    # what the sandbox leaves behind is inert on the host: no setuid bit, no fifo, no link out
    assert not (work / "suid-bin").stat().st_mode & 0o6000
    for name in ("leak", "up", "tricky"):
        assert not os.path.lexists(work / name), name
    assert os.readlink(work / "sub" / "L") == "."
    assert not os.path.lexists(work / "pipe")
    assert os.readlink(work / "inside") == "uid.txt"
    assert "removed 3 link(s) pointing outside" in res.message
    assert "removed 1 fifo(s)" in res.message and "setuid/setgid bits on 1" in res.message
    assert "cgroup" in res.enforcement["memory"] and "ext4-loop" in res.enforcement["output"]
    assert _own_cgroup_leftovers() == []


@pytest.mark.bwrap
def test_bwrap_failing_script_is_failed_with_exit_code(
    bwrap: BwrapSandbox, sandbox_env: Path, tmp_path: Path
) -> None:
    res, log, _ = run_script(bwrap, tmp_path, "echo about to fail\nexit 3\n", sandbox_env)
    assert (res.status, res.exit_code) == ("failed", 3)
    assert "about to fail" in log and "exited 3" in res.message


@pytest.mark.bwrap
def test_bwrap_cannot_start_is_sandbox_error(sandbox_env: Path, tmp_path: Path) -> None:
    res, log, _ = run_script(
        BwrapSandbox(bwrap="/nonexistent/bwrap"), tmp_path, "true\n", sandbox_env
    )
    assert res.status == "sandbox_error" and "not installed" in res.message
    assert "sandbox_error" in log


# --- bwrap: the paper and /submission as the workflow makes them ----------------------------------


@pytest.mark.bwrap
def test_bwrap_reads_the_ingested_paper_and_writes_its_submission(
    bwrap: BwrapSandbox, sandbox_env: Path, tmp_path: Path
) -> None:
    """Ingest's view, a command agent's folder, the executed copy: read and written by the
    sandbox's uid 1000 (this user outside), and left with the umask's modes for the group."""
    out = paper_agent_execute(tmp_path, 0o022, {"backend": "bwrap", "python_env": str(sandbox_env)})
    assert_read_and_written(out)
    assert (out["run"] / "submission" / "agent-uid.txt").read_text().strip() == "1000"
    assert_outputs_follow(out, 0o022)


@pytest.mark.bwrap
def test_bwrap_as_root_opens_a_foreign_paper_and_faults_on_a_foreign_workdir(
    bwrap: BwrapSandbox, sandbox_env: Path, tmp_path: Path
) -> None:
    """Root's sandbox user has no capabilities, so no DAC override: a paper view another user
    owns (0700) is opened up for it; a workdir it cannot write is a sandbox_error before the run,
    not a "failed" reproduce.sh."""
    if os.geteuid() != 0:
        pytest.skip("needs root (to own files as another user)")
    work = tmp_path / "work"
    work.mkdir()
    (work / "reproduce.sh").write_text("cat /paper/paper.md > seen.md\n")
    paper = tmp_path / "paper"
    paper.mkdir()
    (paper / "paper.md").write_text("# The paper\n")
    for path, mode in ((paper, 0o700), (paper / "paper.md", 0o600)):
        os.chown(path, 4321, 4321)
        path.chmod(mode)
    spec = SandboxSpec(
        command=["bash", "reproduce.sh"],
        workdir=work,
        ro_mounts=[Mount(paper, "/paper")],
        python_env=sandbox_env,
        time_limit_s=30,
        mem_mb=512,
        output_limit_mb=64,
    )
    res = bwrap.run(spec, tmp_path / "run.log")
    assert res.status == "ok", (res, (tmp_path / "run.log").read_text())
    assert (work / "seen.md").read_text() == "# The paper\n"
    assert "read-only mount entries readable for the sandbox" in res.message
    assert (paper / "paper.md").stat().st_uid == 4321  # opened up, not taken over
    os.chown(work, 4321, 4321)
    work.chmod(0o700)
    res = bwrap.run(spec, tmp_path / "run.log")
    assert res.status == "sandbox_error", res
    assert "(uid 0 on the host) cannot write /submission" in res.message
    assert "mode 0700, owner 4321:4321" in res.message


# --- bwrap: hostile scripts ----------------------------------------------------------------------


@pytest.fixture
def host_server() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on the host's 127.0.0.1: a sandbox with network=none must not reach it."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    srv.settimeout(0.2)
    got: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            with conn:
                got.append(b"connected")
                conn.sendall(b"hello from host\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield srv.getsockname()[1], got
    stop.set()
    thread.join(2)
    srv.close()


NET_PROBE = """python - <<'EOF'
import socket
try:
    s = socket.create_connection(("127.0.0.1", {port}), timeout=3)
    print("CONNECTED", s.recv(100))
except OSError as exc:
    print("BLOCKED", exc)
for host in ("pypi.org",):  # a package index: the only outside host this machine may reach
    try:
        socket.create_connection((host, 443), timeout=2)
        print("CONNECTED", host)
    except OSError as exc:
        print("BLOCKED", host, exc)
EOF
"""


@pytest.mark.bwrap
def test_bwrap_network_none_cannot_reach_host(
    bwrap: BwrapSandbox, sandbox_env: Path, tmp_path: Path, host_server: tuple[int, list[bytes]]
) -> None:
    port, got = host_server
    res, log, _ = run_script(bwrap, tmp_path, NET_PROBE.format(port=port), sandbox_env)
    assert res.status == "ok", log
    assert "CONNECTED" not in log and log.count("BLOCKED") == 2
    assert got == []


@pytest.mark.bwrap
def test_bwrap_network_full_reaches_host(
    bwrap: BwrapSandbox, sandbox_env: Path, tmp_path: Path, host_server: tuple[int, list[bytes]]
) -> None:
    """The positive control: the probe above does connect when the network is shared."""
    port, got = host_server
    script = NET_PROBE.format(port=port).split("for host")[0] + "EOF\n"
    res, log, _ = run_script(bwrap, tmp_path, script, sandbox_env, network="full")
    assert res.status == "ok", log
    assert "CONNECTED b'hello from host" in log, log
    assert got == [b"connected"]


@pytest.mark.bwrap
def test_bwrap_paper_and_system_are_read_only(
    bwrap: BwrapSandbox, sandbox_env: Path, tmp_path: Path
) -> None:
    script = """for target in /paper/new.txt /paper/paper.md /usr/evil /etc/evil /evil \
    /root/.pyenv/evil /dev/evil; do
  if (echo pwned > "$target") 2>/dev/null; then echo "WROTE $target"; else echo "DENIED $target"; fi
done
rm -f /paper/paper.md 2>/dev/null && echo "REMOVED paper" || echo "DENIED rm"
"""
    res, log, _ = run_script(bwrap, tmp_path, script, sandbox_env)
    assert res.status == "ok", log
    assert "WROTE" not in log and "REMOVED" not in log
    assert log.count("DENIED") == 8
    assert (tmp_path / "paper" / "paper.md").read_text() == "# The paper\n"
    assert sorted(p.name for p in (tmp_path / "paper").iterdir()) == ["paper.md"]


@pytest.mark.bwrap
def test_bwrap_host_tree_is_invisible(
    bwrap: BwrapSandbox, sandbox_env: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "results" / "runs" / "secret.txt"
    secret.parent.mkdir(parents=True)
    secret.write_text("s3cret")
    paths = [
        REPO / "pyproject.toml",
        REPO / "sabench",
        REPO / ".venv",
        REPO / "results",
        secret,
        Path.home() / ".bashrc",
        Path.home() / ".cache",
        Path.home() / ".pyenv" / "shims",
        Path("/work/shared"),
    ]
    checks = "\n".join(f'[ -e "{p}" ] && echo "PRESENT {p}" || echo "ABSENT {p}"' for p in paths)
    res, log, _ = run_script(bwrap, tmp_path, checks + "\nls -A /root\n", sandbox_env)
    assert res.status == "ok", log
    assert "PRESENT" not in log and log.count("ABSENT") == len(paths)
    assert "s3cret" not in log


@pytest.mark.bwrap
def test_bwrap_host_environment_does_not_leak(
    bwrap: BwrapSandbox, sandbox_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SABENCH_SECRET", "hunter2")
    script = 'env | sort\necho "secret=${SABENCH_SECRET:-unset}"\n'
    res, log, _ = run_script(bwrap, tmp_path, script, sandbox_env)
    assert res.status == "ok"
    assert "hunter2" not in log and "secret=unset" in log
    assert f"PATH={sandbox_env}/bin:" in log and "HOME=/tmp/home" in log


@pytest.mark.bwrap
def test_bwrap_memory_hog_is_oom(bwrap: BwrapSandbox, sandbox_env: Path, tmp_path: Path) -> None:
    script = "python -c 'x = bytearray(1024 * 1024 * 1024); print(\"survived\", len(x))'\n"
    res, log, _ = run_script(bwrap, tmp_path, script, sandbox_env, mem_mb=128)
    assert res.status == "oom", (res, log)
    assert "survived 1073741824" not in log and res.exit_code == 137
    assert res.peak_mem_mb is not None and res.peak_mem_mb <= 129


@pytest.mark.bwrap
def test_bwrap_fork_bomb_is_contained(
    bwrap: BwrapSandbox, sandbox_env: Path, tmp_path: Path
) -> None:
    script = "bomb() { bomb | bomb & }\nbomb\nsleep 2\necho survived\n"
    t0 = time.monotonic()
    res, log, _ = run_script(bwrap, tmp_path, script, sandbox_env, pids=64, time_limit_s=6)
    assert time.monotonic() - t0 < 15
    assert res.status in ("ok", "failed", "timeout"), (res, log)
    assert "pids limit (64) reached" in res.message
    assert subprocess.run(["true"], timeout=5).returncode == 0  # the host can still fork
    assert _own_cgroup_leftovers() == []


def _pids_with_marker(marker: bytes) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.add(int(entry))
            except OSError:
                continue
    return found


def _watch_for(marker: bytes, stop: threading.Event, seen: set[int]) -> None:
    while not stop.is_set():
        seen |= _pids_with_marker(marker)
        time.sleep(0.05)


def _assert_timeout_kills_everything(
    backend: Sandbox, env: Path | None, tmp_path: Path
) -> set[int]:
    """Run sleeps (one in its own session) past the limit; return the host PIDs still alive."""
    marker = f"9999.{secrets.randbelow(10**6):06d}"
    script = f"sleep {marker} &\nsetsid sleep {marker} &\nsleep {marker}\n"
    seen: set[int] = set()
    stop = threading.Event()
    watcher = threading.Thread(target=_watch_for, args=(marker.encode(), stop, seen), daemon=True)
    watcher.start()
    t0 = time.monotonic()
    res, log, _ = run_script(backend, tmp_path, script, env, time_limit_s=2)
    elapsed = time.monotonic() - t0
    stop.set()
    watcher.join(2)
    assert res.status == "timeout", (res, log)
    assert 1.9 <= res.wall_s < 5 and elapsed < 8
    assert len(seen) >= 2, "the watcher never saw the sleeps"
    time.sleep(0.2)
    alive = {pid for pid in seen if Path(f"/proc/{pid}").exists()}
    alive = {pid for pid in alive if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()}
    return alive


@pytest.mark.bwrap
def test_bwrap_timeout_kills_the_whole_tree(
    bwrap: BwrapSandbox, sandbox_env: Path, tmp_path: Path
) -> None:
    """Even a ``setsid`` child dies: killing the sandbox's pid 1 ends its pid namespace."""
    assert _assert_timeout_kills_everything(bwrap, sandbox_env, tmp_path) == set()


@pytest.mark.bwrap
def test_bwrap_log_flood_is_capped(bwrap: BwrapSandbox, sandbox_env: Path, tmp_path: Path) -> None:
    script = "head -c 20000000 /dev/zero | tr '\\0' x\necho\necho END-OF-FLOOD\n"
    res, log, _ = run_script(bwrap, tmp_path, script, sandbox_env, log_limit_kb=64)
    assert res.status == "ok", res
    assert res.log_bytes >= 20_000_000
    assert (tmp_path / "run.log").stat().st_size < 70 * 1024
    assert "END-OF-FLOOD" in log and "bytes of output omitted" in log


@pytest.mark.bwrap
def test_bwrap_output_limit(bwrap: BwrapSandbox, sandbox_env: Path, tmp_path: Path) -> None:
    script = "echo start\nhead -c 50000000 /dev/zero > big.bin\necho exit=$?\n"
    res, log, work = run_script(bwrap, tmp_path, script, sandbox_env, output_limit_mb=8)
    assert res.status == "output_limit", (res, log)
    assert "No space left on device" in log
    size = (work / "big.bin").stat().st_size
    assert 7 << 20 <= size <= 12 << 20  # what fitted was copied back, no more


@pytest.mark.bwrap
@pytest.mark.parametrize("output_fs", [("tmpfs",), ()], ids=["tmpfs", "no-fs"])
def test_bwrap_output_limit_fallbacks(
    sandbox_env: Path, tmp_path: Path, output_fs: tuple[str, ...]
) -> None:
    """Without a loop device: a sized tmpfs; without any mount: the file-size rlimit."""
    script = "head -c 50000000 /dev/zero > big.bin\necho exit=$?\n"
    backend = BwrapSandbox(output_fs=output_fs)
    res, log, work = run_script(backend, tmp_path, script, sandbox_env, output_limit_mb=8)
    assert res.status == "output_limit", (res, log)
    assert (work / "big.bin").stat().st_size <= 10 << 20
    expected = "tmpfs filesystem" if output_fs else "RLIMIT_FSIZE"
    assert expected in res.enforcement["output"]


@pytest.mark.bwrap
def test_bwrap_without_cgroups_falls_back_to_rlimits(
    sandbox_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where no cgroup can be made, memory is an address-space rlimit and the record says so."""

    def refuse(cls: type, mem_bytes: int, pids: int) -> RunCgroup:
        raise CgroupUnavailable("refused for this test")

    monkeypatch.setattr(RunCgroup, "create", classmethod(refuse))
    script = "python -c 'x = bytearray(1024 * 1024 * 1024)'\n"
    res, log, _ = run_script(BwrapSandbox(), tmp_path, script, sandbox_env, mem_mb=256)
    assert res.status == "oom", (res, log)
    assert "MemoryError" in log
    assert res.enforcement["memory"].startswith("RLIMIT_AS")
    assert "cgroups unavailable (refused for this test)" in res.message


# --- local backend -------------------------------------------------------------------------------


def test_local_ok_is_labelled_unsandboxed(
    sandbox_env: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("SABENCH_SECRET", "hunter2")
    script = (
        'python -c "import numpy; print(numpy.__version__)" > v.txt\n'
        'echo "s=${SABENCH_SECRET:-unset}"\n'
    )
    with caplog.at_level(logging.WARNING, logger="sabench.sandbox.local"):
        res, log, work = run_script(LocalSandbox(), tmp_path, script, sandbox_env)
    assert res.status == "ok", log
    assert (work / "v.txt").read_text().strip() == "2.4.6"
    assert "UNSANDBOXED" in log and "UNSANDBOXED" in caplog.text and "UNSANDBOXED" in res.message
    assert "s=unset" in log
    assert "UNSANDBOXED" in LocalSandbox().describe()["isolation"]


def test_local_timeout_kills_the_process_group(sandbox_env: Path, tmp_path: Path) -> None:
    """The group dies; a ``setsid`` child escapes local (that is why it is UNSANDBOXED)."""
    alive = _assert_timeout_kills_everything(LocalSandbox(), sandbox_env, tmp_path)
    assert len(alive) <= 1
    for pid in alive:  # the escaped setsid sleep: ours to clean up, by PID
        os.kill(pid, 9)
