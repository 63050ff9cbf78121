"""Container backends against hostile reproduce.sh scripts, through the real execute step and a real
engine: Docker (marker ``docker``) and podman's API service (marker ``podman``) run the same suite.

The engines come from conftest.py (``docker_engine`` / ``podman_engine``): one that answers, or a
private one started for the session (tests/containers/), with the project's image built once and
cached by content hash. Nothing here is mocked except GPUs (a fake nvidia-smi: no GPU here).
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import shutil
import signal
import socket
import stat
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fake_gpu
import pytest
from sandbox_access import assert_outputs_follow, assert_read_and_written, paper_agent_execute

from sabench.agents import run_agent
from sabench.execute import RECORD_KEYS, execute_run
from sabench.sandbox import Mount, SandboxSpec, get_backend
from sabench.sandbox.docker import (
    LABEL_OWNER,
    LABEL_RUN,
    DockerSandbox,
    device_requests,
)

REPO = Path(__file__).resolve().parents[1]
ENGINES = [
    pytest.param("docker", marks=pytest.mark.docker, id="docker"),
    pytest.param("podman", marks=pytest.mark.podman, id="podman"),
]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Each engine in turn, with DOCKER_HOST / CONTAINER_HOST pointing at it for this test."""
    eng = request.getfixturevalue(f"{request.param}_engine")
    for key, value in eng.env().items():
        monkeypatch.setenv(key, value)
    return eng


@pytest.fixture
def docker(docker_engine: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("DOCKER_HOST", docker_engine.url)
    return docker_engine


def make_run(tmp_path: Path, script: str, files: dict[str, str] | None = None) -> dict[str, Path]:
    """A workflow-shaped tree: results/{papers/P/agent_view, runs/A/P/0/submission}."""
    results = tmp_path / "results"
    view = results / "papers" / "ridge-gd" / "agent_view"
    view.mkdir(parents=True)
    (view / "paper.md").write_text("# The paper\nlr = 0.05\n")
    sub = results / "runs" / "agent" / "ridge-gd" / "0" / "submission"
    sub.mkdir(parents=True)
    (sub / "reproduce.sh").write_text(script)
    for name, text in (files or {}).items():
        (sub / name).parent.mkdir(parents=True, exist_ok=True)
        (sub / name).write_text(text)
    run = sub.parent
    return {
        "submission": sub,
        "executed": run / "executed",
        "agent_view": view,
        "record_path": run / "execution.json",
        "log_path": run / "execution.log",
    }


def execute(eng: Any, paths: dict[str, Path], **settings: Any) -> tuple[dict[str, Any], str, Path]:
    cfg = {"backend": eng.name, "time_limit_s": 60, "mem_mb": 512, "output_limit_mb": 64}
    cfg.update(settings)
    run = {k: paths[k] for k in ("submission", "executed", "record_path", "log_path")}
    record = execute_run(**run, settings=cfg)  # the paper's view is the agent's, not the run's
    return record, paths["log_path"].read_text(errors="replace"), paths["executed"]


def containers_of(eng: Any, label: str) -> list[dict[str, Any]]:
    return eng.client.api.containers(all=True, filters={"label": label})


# --- a normal run ----------------------------------------------------------------------------


NORMAL = """set -e
id -u > uid.txt
grep -E 'CapEff|NoNewPrivs' /proc/self/status
python -c 'import numpy, sys; print("numpy", numpy.__version__, sys.executable)'
test -n "$(ls -A /paper 2>/dev/null)" && echo PAPER-MOUNTED || echo no-paper
touch /this-root-is-writable 2>/dev/null && echo ROOT-WRITABLE || echo root-read-only
echo tmp > /tmp/scratch && echo tmp-ok
echo '{"acc": 0.5, "nested": {"loss": 0.25}}' > results.json
mkdir -p out && echo model > out/model.txt
echo changed >> data.txt
"""


def test_normal_run_record(engine: Any, tmp_path: Path) -> None:
    paths = make_run(tmp_path, NORMAL, {"data.txt": "original\n"})
    record, log, executed = execute(engine, paths)
    assert record["status"] == "ok", (record, log)
    assert tuple(sorted(record)) == tuple(sorted(RECORD_KEYS))
    assert record["backend"] == engine.name and record["exit_code"] == 0
    assert record["image"] == engine.image.pinned
    assert re.fullmatch(r"sabench/python:[0-9a-f]{16}@sha256:[0-9a-f]{64}", record["image"])
    assert (executed / "uid.txt").read_text().strip() == "1000"
    assert "CapEff:\t0000000000000000" in log and "NoNewPrivs:\t1" in log
    assert "numpy 2.4.6 /opt/sabench-env/bin/python" in log
    assert "no-paper" in log and "root-read-only" in log and "tmp-ok" in log
    assert record["metrics"] == {"acc": 0.5, "nested.loss": 0.25}
    assert record["files_created"] == ["out/model.txt", "results.json", "uid.txt"]
    assert record["files_modified"] == ["data.txt"]
    assert record["peak_mem_mb"] and record["peak_mem_mb"] > 0
    iso = record["isolation"]
    for part in ("uid 1000", "no capabilities", "no-new-privileges", "read-only root",
                 "network none", "ext4-loop"):  # fmt: skip
        assert part in iso, iso
    assert "WEAKENED" not in iso
    # the outputs belong to us on the host, the pristine submission is untouched
    assert (executed / "results.json").stat().st_uid == os.getuid()
    assert sorted(p.name for p in paths["submission"].iterdir()) == ["data.txt", "reproduce.sh"]
    assert containers_of(engine, f"{LABEL_RUN}=agent/ridge-gd/0") == []


def test_failing_script_is_failed(engine: Any, tmp_path: Path) -> None:
    record, log, _ = execute(engine, make_run(tmp_path, "echo about to fail\nexit 3\n"))
    assert (record["status"], record["exit_code"]) == ("failed", 3)
    assert "about to fail" in log and "exited 3" in record["message"]


# --- hostile scripts -------------------------------------------------------------------------


@pytest.fixture
def host_server() -> Iterator[tuple[int, list[bytes], str]]:
    """A TCP server on all of the host's addresses; returns (port, connections, a host IP)."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("0.0.0.0", 0))
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
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("10.255.255.255", 9))
        host_ip = probe.getsockname()[0]
    except OSError:
        host_ip = "127.0.0.1"
    finally:
        probe.close()
    yield srv.getsockname()[1], got, host_ip
    stop.set()
    thread.join(2)
    srv.close()


NET_PROBE = """python - <<'EOF'
import socket
for host, port in (("127.0.0.1", {port}), ("{host_ip}", {port}), ("pypi.org", 443)):
    try:
        s = socket.create_connection((host, port), timeout=3)
        print("CONNECTED", host, s.recv(100))
    except OSError as exc:
        print("BLOCKED", host, type(exc).__name__)
EOF
cat /sys/class/net/*/address 2>/dev/null | sort -u | tr '\\n' ' '; echo
ls /sys/class/net
"""


def test_network_is_unreachable(
    engine: Any, tmp_path: Path, host_server: tuple[int, list[bytes], str]
) -> None:
    port, got, host_ip = host_server
    script = NET_PROBE.replace("{port}", str(port)).replace("{host_ip}", host_ip)
    record, log, _ = execute(engine, make_run(tmp_path, script))
    assert record["status"] == "ok", log
    assert "CONNECTED" not in log and log.count("BLOCKED") == 3, log
    assert got == []
    assert re.search(r"^lo$", log, re.MULTILINE) and "eth0" not in log  # loopback only


HOSTILE_WRITES = """for target in /paper/new.txt /usr/evil /etc/evil /evil /opt/evil \
    /opt/sabench-env/bin/evil /dev/evil /proc/evil; do
  if (echo pwned > "$target") 2>/dev/null; then echo "WROTE $target"; else echo "DENIED $target"; fi
done
test -n "$(ls -A /paper 2>/dev/null)" && echo "MOUNTED paper" || echo "DENIED paper"
mount -t tmpfs x /mnt 2>/dev/null && echo "MOUNTED" || echo "DENIED mount"
chmod u+s /bin/sh 2>/dev/null && echo "CHMODDED" || echo "DENIED chmod"
"""


def test_root_is_read_only_and_no_paper_is_mounted(engine: Any, tmp_path: Path) -> None:
    """reproduce.sh needs no paper, so none is shown (a run could read its results off it)."""
    paths = make_run(tmp_path, HOSTILE_WRITES)
    record, log, _ = execute(engine, paths)
    assert record["status"] == "ok", log
    for bad in ("WROTE", "MOUNTED", "CHMODDED"):
        assert bad not in log, log
    assert log.count("DENIED") == 11
    assert (paths["agent_view"] / "paper.md").read_text() == "# The paper\nlr = 0.05\n"
    assert sorted(p.name for p in paths["agent_view"].iterdir()) == ["paper.md"]


def test_saus_rubrics_and_other_runs_are_invisible(engine: Any, tmp_path: Path) -> None:
    """Neither by host path, nor relative to /submission or /paper, nor by searching."""
    paths = make_run(tmp_path, "")
    results = tmp_path / "results"
    secrets_on_host = {
        results / "papers" / "ridge-gd" / "saus.parquet": "SAU-SECRET",
        results / "papers" / "ridge-gd" / "rubric.json": "RUBRIC-SECRET",
        results / "runs" / "other" / "ridge-gd" / "0" / "submission" / "main.py": "OTHER-RUN",
        results / "runs" / "reference" / "ridge-gd" / "0" / "executed" / "x.py": "REFERENCE",
    }
    for path, text in secrets_on_host.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    probes = [*secrets_on_host, REPO / "resources" / "papers" / "ridge-gd" / "saus.yaml",
              REPO / "pyproject.toml", Path("/work/shared"), Path.home() / ".bashrc"]  # fmt: skip
    script = "\n".join(f'cat "{p}" 2>/dev/null; [ -e "{p}" ] && echo "PRESENT {p}"' for p in probes)
    script += """
for rel in ../saus.parquet ../../papers/ridge-gd/saus.parquet ../../../../papers/ridge-gd/saus.parquet \
    /paper/../saus.parquet /paper/../../papers/ridge-gd/rubric.json; do
  cat "$rel" 2>/dev/null && echo "READ $rel"
done
ls -a /paper /submission/.. /proc/1/root/ 2>&1 | tr '\\n' ' '; echo
find / -xdev \\( -name 'saus*' -o -name 'rubric*' -o -name 'results' \\) 2>/dev/null | head
grep -rl SECRET / --exclude-dir=proc --exclude-dir=sys 2>/dev/null | head
echo probe-done
"""
    (paths["submission"] / "reproduce.sh").write_text(script)
    record, log, _ = execute(engine, paths, time_limit_s=120)
    assert record["status"] == "ok", log
    assert "probe-done" in log
    for marker in ("PRESENT", "READ ", "SECRET", "OTHER-RUN", "REFERENCE", "saus.parquet\n"):
        assert marker not in log, (marker, log)


def test_host_environment_and_api_key_never_leak(
    engine: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-test-" + secrets.token_hex(16)
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    script = f"""env | sort
cat /proc/1/environ | tr '\\0' '\\n'
echo "openai=${{OPENAI_API_KEY:-unset}}"
grep -r {key[:12]} / --exclude-dir=proc --exclude-dir=sys 2>/dev/null | head -3
env > env.txt
"""
    paths = make_run(tmp_path, script)
    record, log, executed = execute(engine, paths)
    assert record["status"] == "ok", log
    assert "openai=unset" in log and "HOME=/tmp" in log
    everything = [log, json.dumps(record)]
    everything += [p.read_text(errors="replace") for p in executed.rglob("*") if p.is_file()]
    assert not any(key in text for text in everything)
    assert "OPENAI" not in (executed / "env.txt").read_text()


def test_memory_hog_is_oom(engine: Any, tmp_path: Path) -> None:
    script = "python -c 'x = bytearray(1024 * 1024 * 1024); print(\"survived\", len(x))'\n"
    record, log, _ = execute(engine, make_run(tmp_path, script), mem_mb=128)
    assert record["status"] == "oom", (record, log)
    assert "survived 1073741824" not in log and record["exit_code"] == 137
    assert "out of memory (mem_mb=128" in record["message"]
    assert record["peak_mem_mb"] is not None and record["peak_mem_mb"] <= 129


def test_fork_bomb_is_contained(engine: Any, tmp_path: Path) -> None:
    script = "bomb() { bomb | bomb & }\nbomb\nsleep 2\necho survived\n"
    t0 = time.monotonic()
    record, log, _ = execute(engine, make_run(tmp_path, script), pids=64, time_limit_s=8)
    assert time.monotonic() - t0 < 30
    assert record["status"] in ("ok", "failed", "timeout"), (record, log)
    assert "pids limit (64) reached" in record["message"], record
    assert subprocess.run(["true"], timeout=5).returncode == 0  # the host can still fork


def _host_pids_with(marker: bytes) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.add(int(entry))
            except OSError:
                continue
    return found


def test_sleep_is_killed_at_the_time_limit(engine: Any, tmp_path: Path) -> None:
    """`sleep 10000` (and a setsid'd one) end as timeout within the limit plus a few seconds,
    with no process and no container left."""
    marker = f"10000.{secrets.randbelow(10**6):06d}"
    script = f"sleep {marker} &\nsetsid sleep {marker} &\nsleep {marker}\n"
    seen: set[int] = set()
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            seen.update(_host_pids_with(marker.encode()))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    t0 = time.monotonic()
    record, log, _ = execute(engine, make_run(tmp_path, script), time_limit_s=3)
    elapsed = time.monotonic() - t0
    stop.set()
    watcher.join(2)
    assert record["status"] == "timeout", (record, log)
    assert 2.9 <= record["wall_s"] < 3 + 5 and elapsed < 3 + 10, (record["wall_s"], elapsed)
    assert "killed after time_limit_s=3" in record["message"]
    assert len(seen) >= 2, "the watcher never saw the sleeps"
    time.sleep(0.2)
    assert _host_pids_with(marker.encode()) == set()
    deadline = time.monotonic() + 15  # the engine removes a killed container asynchronously
    while containers_of(engine, f"{LABEL_RUN}=agent/ridge-gd/0") and time.monotonic() < deadline:
        time.sleep(0.5)
    assert containers_of(engine, f"{LABEL_RUN}=agent/ridge-gd/0") == []


SAVES_ON_SIGTERM = """import signal, sys


def save(signum, frame):
    open("saved.txt", "w").write("saved")
    sys.exit(143)


signal.signal(signal.SIGTERM, save)
print("spinning", flush=True)
while True:
    pass
"""


def test_a_timed_out_run_gets_sigterm_and_a_grace_period(engine: Any, tmp_path: Path) -> None:
    """At the time limit the run's processes get SIGTERM and TERM_GRACE_S to end as they would
    (this one saves its work; a traced Python sends its record), then the container is killed."""
    from sabench.sandbox.common import TERM_GRACE_S

    script = "set -e\npython main.py\necho never > after.txt\n"
    paths = make_run(tmp_path, script, {"main.py": SAVES_ON_SIGTERM})
    record, log, executed = execute(engine, paths, time_limit_s=3)
    assert record["status"] == "timeout", (record, log)
    assert record["wall_s"] < 3 + TERM_GRACE_S + 5, record
    assert "spinning" in log and "SIGTERM" in json.dumps(record), record
    assert (executed / "saved.txt").read_text() == "saved"
    assert not (executed / "after.txt").exists()


def test_ten_gigabytes_stop_at_the_output_cap(engine: Any, tmp_path: Path) -> None:
    script = """echo start
head -c 10000000000 /dev/zero > big.bin; echo "write exit=$?"
truncate -s 10G sparse.bin; echo "truncate exit=$?"
python -c 'f = open("sparse2.bin", "wb"); f.seek(10 * 2**30); f.write(b"x")'; echo "seek exit=$?"
echo end
"""
    t0 = time.monotonic()
    record, log, executed = execute(engine, make_run(tmp_path, script), output_limit_mb=32)
    assert time.monotonic() - t0 < 60
    assert record["status"] == "output_limit", (record, log)
    assert "end" in log and ("No space left on device" in log or "File size limit" in log)
    size = (executed / "big.bin").stat().st_size
    assert 24 << 20 <= size <= 40 << 20, size  # what fitted was copied back, no more
    total = sum(p.stat().st_size for p in executed.rglob("*") if p.is_file())
    assert total <= 40 << 20, total  # no sparse giant came out either
    assert "output exceeded output_limit_mb=32" in record["message"]


def test_outward_symlinks_are_neither_copied_out_nor_followed_by_the_judge(
    engine: Any, tmp_path: Path
) -> None:
    from sabench.judges.run import run_judge
    from sabench.saus import import_paper_saus

    paths = make_run(tmp_path, "")
    sub = paths["submission"]
    shutil.rmtree(sub)
    shutil.copytree(REPO / "resources" / "submissions" / "reference" / "ridge-gd", sub)
    saus_on_host = tmp_path / "results" / "papers" / "ridge-gd" / "saus.parquet"
    saus_on_host.write_text("LEARNING_RATE = 0.99  # SAU-SECRET\n")
    os.symlink("/etc/passwd", sub / "passwd.py")
    os.symlink("../../../../papers/ridge-gd/saus.parquet", sub / "saus.py")
    os.symlink("/etc", sub / "etcdir")
    (sub / "reproduce.sh").write_text(
        (sub / "reproduce.sh").read_text()
        + "\nln -s /etc/passwd results2.json\nln -s ../../../../papers/ridge-gd/saus.parquet s2\n"
        "ln -s /etc/shadow shadow\nln -s config.json inside\n"
    )
    record, log, executed = execute(engine, paths, metrics_files=["results.json", "results2.json"])
    assert record["status"] == "ok", (record, log)
    for name in ("passwd.py", "saus.py", "etcdir", "results2.json", "s2", "shadow"):
        assert not os.path.lexists(executed / name), name
    assert os.readlink(executed / "inside") == "config.json"
    assert "removed 6 link(s) pointing outside /submission" in record["message"]
    assert "root:x:0:0" not in json.dumps(record)
    # the judge reads the pristine submission: the links are there and must not be followed
    saus = import_paper_saus(REPO / "resources" / "papers" / "ridge-gd")
    rows = [j.row() for j in run_judge("static", {}, sub, saus, record)]
    assert rows
    text = json.dumps(rows, default=str)
    assert "passwd.py" not in text and "saus.py" not in text and "etcdir" not in text
    assert "root:x:0:0" not in text and "SAU-SECRET" not in text and "0.99" not in text


def test_log_flood_is_capped(engine: Any, tmp_path: Path) -> None:
    script = "head -c 20000000 /dev/zero | tr '\\0' x\necho\necho END-OF-FLOOD\n"
    record, log, _ = execute(engine, make_run(tmp_path, script), log_limit_kb=64)
    assert record["status"] == "ok", record
    assert record["log_bytes"] >= 20_000_000
    assert len(log.encode()) < 70 * 1024
    assert "END-OF-FLOOD" in log and "bytes of output omitted" in log


# --- the paper and /submission as the workflow makes them, as root ------------------------------


@pytest.mark.parametrize("mask", [0o022, 0o077], ids=["umask022", "umask077"])
def test_uid_1000_reads_the_ingested_paper_and_writes_its_submission(
    engine: Any, tmp_path: Path, mask: int
) -> None:
    """The view from sabench's ingest and the agent's folder from its atomic writer are root's
    (0700 before outputs followed the umask; still 0700 under umask 077): the container's uid 1000
    reads /paper and writes /submission all the same, and the host gets its files back."""
    out = paper_agent_execute(
        tmp_path, mask, {"backend": engine.name}, agent={"image": engine.image.ref}
    )
    assert_read_and_written(out)
    assert (out["run"] / "submission" / "agent-uid.txt").read_text().strip() == "1000"
    assert_outputs_follow(out, mask)
    if mask == 0o077:  # only the paper was opened up (for uid 1000), and the log says so
        agent_log = (out["run"] / "agent-command.log").read_text()
        assert "read-only mount entries readable for uid 1000" in agent_log
        assert stat.S_IMODE((out["run"] / "execution.json").stat().st_mode) == 0o600


def test_a_paper_the_agent_cannot_read_is_a_sandbox_error(engine: Any, tmp_path: Path) -> None:
    """Not a hollow "submitted" (or an agent's "failure") with nothing read: what uid 1000 cannot
    open and root cannot open up (an immutable file) is the sandbox's fault, named before the run.
    (The agent is the one shown the paper: reproduce.sh is shown none.)"""
    paths = make_run(tmp_path, "")
    paper = paths["agent_view"] / "paper.md"
    paper.chmod(0o600)
    subprocess.run(["chattr", "+i", str(paper)], check=True)
    run = paths["submission"].parent
    spec = {"kind": "command", "command": ["sh", "-c", "cat /paper/paper.md > seen.md"]}
    try:
        record = run_agent(
            "cmd",
            {**spec, "image": engine.image.ref},
            "ridge-gd",
            "0",
            run / "agent-out",
            run / "agent.json",
            REPO,
            paths["agent_view"],
            {"backend": engine.name},
        )
    finally:
        subprocess.run(["chattr", "-i", str(paper)], check=True)
    assert (record["status"], record.get("fault")) == ("fault", "sandbox_error"), record
    assert "(uid 1000 on the host) cannot read /paper/paper.md" in record["error"], record
    assert "mode 0600, owner 0:0" in record["error"]
    assert not (run / "agent-out" / "seen.md").exists()


# --- docker: engine faults, GPUs, isolation settings -------------------------------------------


def test_engine_unavailable_is_sandbox_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such.sock")
    record, log, _ = execute(type("E", (), {"name": "docker"})(), make_run(tmp_path, "echo hi\n"))
    assert record["status"] == "sandbox_error"
    assert "docker unavailable: no docker engine socket" in record["message"]
    assert "status=sandbox_error" in log


@pytest.mark.docker
def test_missing_image_is_sandbox_error_with_engine_message(docker: Any, tmp_path: Path) -> None:
    t0 = time.monotonic()
    record, _, _ = execute(docker, make_run(tmp_path, "true\n"), image="sabench/nope:missing")
    assert time.monotonic() - t0 < 30
    assert record["status"] == "sandbox_error"
    assert "image: cannot pull sabench/nope:missing" in record["message"]


@pytest.mark.docker
def test_gpu_request_on_a_host_without_gpus_fails_fast(
    docker: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SABENCH_NVIDIA_SMI", str(tmp_path / "absent-nvidia-smi"))
    t0 = time.monotonic()
    record, log, _ = execute(docker, make_run(tmp_path, "sleep 100\n"), gpus=1)
    assert time.monotonic() - t0 < 10
    assert record["status"] == "sandbox_error" and record["gpus"] == 1
    assert "asks for GPUs but this host has none" in record["message"]
    assert "sandbox_error" in log
    backend = DockerSandbox()  # the backend itself refuses too, without the allocator
    spec = SandboxSpec(command=["true"], workdir=tmp_path, gpus=2)
    res = backend.run(spec, tmp_path / "gpu.log")
    assert res.status == "sandbox_error" and "has none" in res.message


@pytest.mark.docker
def test_gpu_allocation_device_requests_and_engine_error(
    docker: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With (fake) GPUs the allocator picks a device and the sampler runs; the engine here has no
    NVIDIA runtime, so the start fails with its own message as sandbox_error (a real GPU machine
    runs it)."""
    fake_gpu.install(tmp_path, monkeypatch)
    record, log, _ = execute(docker, make_run(tmp_path, "nvidia-smi\n"), gpus=1)
    assert record["status"] == "sandbox_error", (record, log)
    assert "could not start" in record["message"] and "gpu" in record["message"].lower()
    usage = record["gpu_usage"]
    assert usage["ids"] == ["0"] and usage["count"] == 1
    assert device_requests(["0"]) == [
        {"Driver": "", "Capabilities": [["gpu"]], "Options": {}, "Count": 0, "DeviceIDs": ["0"]}
    ]
    assert device_requests(2)[0]["Count"] == 2 and device_requests("all")[0]["Count"] == -1
    assert device_requests(0) == []


def test_gpu_allocator_and_sampler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Device locks among the job's GPUs (CUDA_VISIBLE_DEVICES from the scheduler), waiting and
    clear errors; nvidia-smi samples summarised for the record (a fake nvidia-smi)."""
    from sabench.sandbox.gpu import GpuSampler, NoGpuError, allocate, host_gpus

    fake_gpu.install(tmp_path, monkeypatch)
    gpus, _ = host_gpus()
    assert [(g.index, g.uuid) for g in gpus] == [("0", "GPU-aaaa"), ("1", "GPU-bbbb")]
    locks = tmp_path / "locks"
    with allocate(1, lock_dir=locks) as first, allocate(1, lock_dir=locks) as second:
        assert (first, second) == (["0"], ["1"])
        with (
            pytest.raises(NoGpuError, match="still busy"),
            allocate(1, lock_dir=locks, timeout_s=0.6),
        ):
            pass
    with allocate("all", lock_dir=locks) as both:
        assert both == ["0", "1"]
    with allocate(["GPU-bbbb"], lock_dir=locks) as by_uuid:
        assert by_uuid == ["1"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")  # what Slurm gave this job
    with allocate(1, lock_dir=locks) as slurm:
        assert slurm == ["1"]
    with pytest.raises(NoGpuError, match="can use 1 GPU"), allocate(2, lock_dir=locks):
        pass
    with allocate(0, lock_dir=locks) as none:
        assert none == []
    with GpuSampler(["0"], interval_ms=100) as sampler:
        time.sleep(0.6)
    summary = sampler.summary()
    assert summary["ids"] == ["0"] and summary["samples"] >= 3
    assert summary["mem_peak_mb"] >= 1003 and 0 < summary["util_max_pct"] <= 100


def test_create_kwargs_are_the_isolation_defaults(tmp_path: Path) -> None:
    paper = tmp_path / "paper"
    paper.mkdir()
    spec = SandboxSpec(
        command=["bash", "reproduce.sh"],
        workdir=tmp_path,
        ro_mounts=[Mount(paper, "/paper")],
        mem_mb=256,
        pids=100,
        env={"SEED": "1"},
        gpus=["1", "3"],
    )
    kw = DockerSandbox().create_kwargs(
        spec, "sha256:abc", tmp_path / "stage", uid=1000, gid=1000, labels={"l": "v"}, fsize=99
    )
    assert kw["user"] == "1000:1000" and kw["cap_drop"] == ["ALL"]
    assert kw["security_opt"] == ["no-new-privileges"] and kw["read_only"] is True
    assert kw["network_mode"] == "none" and kw["pids_limit"] == 100
    assert kw["mem_limit"] == kw["memswap_limit"] == 256 << 20
    assert kw["working_dir"] == "/submission" and kw["log_config"]["Type"] == "none"
    assert kw["environment"] == {
        "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8", "USER": "sandbox",
        "LOGNAME": "sandbox", "SEED": "1",
    }  # fmt: skip
    mounts = {m["Target"]: m for m in kw["mounts"]}
    assert mounts["/paper"]["ReadOnly"] is True and mounts["/submission"]["ReadOnly"] is False
    assert set(mounts) == {"/paper", "/submission"}
    assert kw["tmpfs"] == {"/tmp": f"rw,nosuid,nodev,size={1024 << 20},mode=1777"}
    assert [u["Name"] for u in kw["ulimits"]] == ["core", "fsize"]
    assert kw["device_requests"][0]["DeviceIDs"] == ["1", "3"]


@pytest.mark.docker
def test_isolation_override_warns_and_is_recorded(
    docker: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="sabench.sandbox.docker"):
        record, log, executed = execute(
            docker, make_run(tmp_path, "id -u > uid.txt\n"), isolation={"non_root": False}
        )
    assert record["status"] == "ok", log
    assert (executed / "uid.txt").read_text().strip() == "0"
    assert "WEAKENED: the command runs as root" in record["isolation"]
    assert "isolation weakened" in caplog.text and "WARNING: isolation weakened" in log


# --- a dying job leaves nothing behind ----------------------------------------------------------


def _cli_run(eng: Any, paths: dict[str, Path]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "sabench.execute", str(paths["submission"]),
         "--out", str(paths["record_path"].parent),
         "--backend", eng.name, "--time-limit-s", "300", "--quiet"],
        cwd=REPO, env={**os.environ, **eng.env()},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def _wait_for(predicate: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def _stage_mounts(pid: int) -> list[str]:
    text = Path("/proc/self/mountinfo").read_text()
    return [line for line in text.splitlines() if f"sabench-ctr-{pid}-" in line]


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
@pytest.mark.docker
def test_a_killed_job_leaves_no_container(docker: Any, tmp_path: Path, how: signal.Signals) -> None:
    paths = make_run(tmp_path, "sleep 300\n")
    label = f"{LABEL_RUN}=agent/ridge-gd/0"
    proc = _cli_run(docker, paths)
    try:
        running = _wait_for(
            lambda: any(c["State"] == "running" for c in containers_of(docker, label)), 60
        )
        assert running, "the container never started"
        os.kill(proc.pid, how)
        proc.wait(30)
        assert _wait_for(lambda: not containers_of(docker, label), 15), containers_of(docker, label)
        assert _wait_for(lambda: not _stage_mounts(proc.pid), 10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.docker
def test_start_script_is_idempotent(docker: Any) -> None:
    if not docker.started_here:
        pytest.skip("the engine was not started by this session")
    pid = Path("/tmp/sabench-ct/dockerd.pid").read_text()
    again = subprocess.run(
        [str(REPO / "tests" / "containers" / "start_dockerd.sh"), "--tests"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert again.returncode == 0 and again.stdout.strip() == f"DOCKER_HOST={docker.url}"
    assert Path("/tmp/sabench-ct/dockerd.pid").read_text() == pid


@pytest.mark.docker
def test_reap_removes_containers_of_dead_owners(docker: Any) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    owner = f"{socket.gethostname()}:{dead.pid}:12345"
    c = docker.client.containers.create(
        docker.image.id, ["sleep", "100"], labels={LABEL_OWNER: owner, LABEL_RUN: "x/y/0"}
    )
    live = docker.client.containers.create(
        docker.image.id, ["true"], labels={LABEL_OWNER: "other-host:1:1", LABEL_RUN: "x/y/1"}
    )
    try:
        removed = DockerSandbox().reap()
        assert c.id in removed and live.id not in removed
    finally:
        live.remove(force=True)


# --- images ------------------------------------------------------------------------------------


@pytest.mark.docker
def test_image_is_cached_by_content_hash(docker: Any, tmp_path: Path) -> None:
    from dataclasses import replace

    from sabench.sandbox.images import (
        RECIPES,
        build_argv,
        content_hash,
        ensure_image,
        image_tag,
    )

    t0 = time.monotonic()
    again = ensure_image(docker.client, "python")
    assert time.monotonic() - t0 < 2 and not again.built
    assert again.id == docker.image.id
    recipe = RECIPES["python"]
    changed = tmp_path / "Dockerfile"
    changed.write_text(recipe.dockerfile.read_text() + "# a change\n")
    assert image_tag(replace(recipe, dockerfile=changed)) != image_tag(recipe)
    labels = docker.client.images.get(image_tag(recipe)).labels
    assert labels["org.sabench.recipe"] == "python"
    cuda = RECIPES["cuda"]
    argv = build_argv(cuda, "/ctx")
    assert argv == [
        "docker", "build", "--network", "none", "--pull=false",
        "--file", "/ctx/Dockerfile", "--tag", image_tag(cuda),
        "--label", f"org.sabench.content-hash={content_hash(cuda)}",
        "--label", "org.sabench.recipe=cuda",
        "--build-arg", "BASE=pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
        "--build-arg", "PYTHON=/opt/conda/bin/python",
        "--build-arg", "VENV_ARGS=--system-site-packages",
        "/ctx",
    ]  # fmt: skip
    assert image_tag(cuda).startswith("sabench/python-cuda:")


@pytest.mark.docker
def test_auto_prefers_docker_and_says_so(docker: Any, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="sabench.sandbox"):
        assert get_backend("auto").name == "docker"
    assert "auto picked 'docker'" in caplog.text


# --- overhead ----------------------------------------------------------------------------------


@pytest.mark.docker
def test_overhead_over_a_bare_docker_run_is_under_20_percent(docker: Any, tmp_path: Path) -> None:
    """start + `true` + teardown through the backend vs `docker run --rm IMAGE true`, interleaved
    (a busy machine slows both alike); the best of two rounds of 12 (benchmarks/ has the 20)."""
    cli = shutil.which("docker") or "/usr/bin/docker"
    backend = DockerSandbox()
    work = tmp_path / "w"
    work.mkdir()
    spec = SandboxSpec(command=["true"], workdir=work)
    env = {**os.environ, **docker.env()}
    argv = [cli, "run", "--rm", "--network", "none", docker.image.id, "true"]
    assert backend.run(spec, tmp_path / "t.log").status == "ok"
    ratios = []
    for _ in range(2):
        bare, ours = [], []
        for _ in range(12):
            t = time.perf_counter()
            subprocess.run(argv, check=True, env=env, capture_output=True)
            bare.append(time.perf_counter() - t)
            t = time.perf_counter()
            assert backend.run(spec, tmp_path / "t.log").status == "ok"
            ours.append(time.perf_counter() - t)
        ratios.append(statistics.median(ours) / statistics.median(bare))
        if ratios[-1] < 1.2:
            break
    assert min(ratios) < 1.2, ratios


# --- the demo end to end -----------------------------------------------------------------------


@pytest.mark.workflow
@pytest.mark.docker
def test_demo_with_docker_gives_the_same_tables_as_bwrap(
    docker: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pandas as pd

    ok, why = get_backend("bwrap").available()
    if not ok:
        pytest.skip(f"bwrap unavailable: {why}")
    key = "sk-test-" + secrets.token_hex(16)
    snakemake = str(Path(sys.executable).with_name("snakemake"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SNAKEMAKE")}
    env.update(docker.env(), OPENAI_API_KEY=key)
    out = {}
    for backend in ("docker", "bwrap"):
        results = tmp_path / backend
        done = subprocess.run(
            [snakemake, "--cores", "2", "--config", f"results={results}",
             f"runtime={{backend: {backend}}}"],
            cwd=REPO, env=env, capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        out[backend] = results
    runs = {b: pd.read_parquet(out[b] / "tables" / "runs.parquet") for b in out}
    assert set(runs["docker"]["backend"]) == {"docker"} and set(runs["bwrap"]["backend"]) == {
        "bwrap"
    }
    ran = runs["docker"][runs["docker"]["execution_status"] != "no_reproduce_script"]
    assert len(ran) and ran["image"].str.contains("@sha256:").all()
    same = ["agent", "paper", "seed", "execution_status", "exit_code", "metrics"]
    pd.testing.assert_frame_equal(runs["docker"][same], runs["bwrap"][same])
    for table, drop in (
        ("judgments", ["latency_s", "cached"]),  # checks an earlier run (make demo) answered
        ("scores_by_run", []),
        ("scores_by_agent", []),
        ("coverage", []),
        ("error_taxonomy", []),
    ):
        a = pd.read_parquet(out["docker"] / "tables" / f"{table}.parquet")
        b = pd.read_parquet(out["bwrap"] / "tables" / f"{table}.parquet")
        cols = [c for c in a.columns if c not in drop]
        if "reasoning" in cols:
            # a check's reasoning ends with the tail of its process log, where the relayed output
            # of the code under test (a second process) depends on scheduling: the verdict and the
            # check's own message before the tail must be the same, the log excerpt need not
            a, b = a.copy(), b.copy()
            tail = "\n--- output (tail) ---"
            for frame in (a, b):
                frame["reasoning"] = frame["reasoning"].str.split(tail, regex=False).str[0]
        pd.testing.assert_frame_equal(a[cols], b[cols], obj=table)
    leaked = [
        p
        for p in out["docker"].rglob("*")
        if p.is_file() and not p.is_symlink() and key.encode() in p.read_bytes()
    ]
    assert leaked == [], leaked
