"""sabench.locks with real processes: the results folder's one writer, one process per step of a
run, a job that ends with its snakemake, and SIGTERM that removes the sandbox."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from sabench import locks
from sabench.runtrace import SITE_TARGET

REPO = Path(__file__).resolve().parents[1]
HOST = socket.gethostname()


def env(**extra: str) -> dict[str, str]:
    """The test's environment without a snakemake to watch (unless ``extra`` names one)."""
    base = {k: v for k, v in os.environ.items() if k != locks.SNAKEMAKE_ENV}
    return {**base, **extra}


def python(code: str, **kw: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,  # type: ignore[arg-type]
    )


def wait_for(predicate, timeout: float = 20.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def hold_results(results: Path) -> subprocess.Popen[str]:
    """A process holding ``results``' lock until its stdin closes."""
    proc = python(
        f"""
        import sys
        from sabench.locks import acquire_results
        acquire_results({str(results)!r})
        print("held", flush=True)
        sys.stdin.read()
        """,
        stdin=subprocess.PIPE,
        env=env(),
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n", proc.stderr
    return proc


def acquire(results: Path) -> subprocess.CompletedProcess[str]:
    code = f"from sabench.locks import acquire_results; acquire_results({str(results)!r})"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, env=env()
    )


def test_second_writer_is_refused_in_one_line_naming_the_holder(tmp_path: Path) -> None:
    results = tmp_path / "results"
    holder = hold_results(results)
    try:
        refused = acquire(results)
    finally:
        holder.communicate("")
    assert refused.returncode == 1
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: results folder "), refused.stderr
    assert f"{results.resolve()} is in use by another sabench run" in lines[0]
    assert f"host {HOST}, pid {holder.pid}, user " in lines[0] and ", since 20" in lines[0]
    assert f"delete {results.resolve() / '.sabench.lock'}" in lines[0]
    # the holder ended normally: the lock file is gone and the next run takes it silently
    assert not (results / ".sabench.lock").exists()
    again = acquire(results)
    assert again.returncode == 0 and again.stderr == ""


def test_lock_of_a_killed_run_is_stale_and_taken_over(tmp_path: Path) -> None:
    results = tmp_path / "results"
    holder = hold_results(results)
    holder.kill()  # kill -9: the kernel drops the fcntl lock, the record stays
    holder.communicate()
    record = json.loads((results / ".sabench.lock").read_text())
    assert record["pid"] == holder.pid and record["host"] == HOST
    taken = acquire(results)
    assert taken.returncode == 0, taken.stderr
    assert taken.stderr.startswith(f"warning: {results.resolve() / '.sabench.lock'}: taking over")
    assert f"pid {holder.pid}," in taken.stderr


def test_record_only_locking_where_the_filesystem_cannot_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENOLCK (an NFS mount without a lock manager): the record is the lock; a dead pid on this
    host or an old heartbeat from another host is stale."""

    def no_locks(fd: int, cmd: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(locks.fcntl, "lockf", no_locks)
    path = tmp_path / ".sabench.lock"
    held, holder = locks.try_lock(path)
    assert held is not None and held.fd is None and holder is None
    again, holder = locks.try_lock(path)  # this live process holds it
    assert again is None and holder is not None and holder["pid"] == os.getpid()
    held.release()
    assert not path.exists()

    dead = subprocess.Popen(["true"])
    dead.wait()
    other = {"host": "elsewhere", "pid": 1, "since": "then"}
    for record, stale in [
        ({"host": HOST, "pid": dead.pid, "proc_start": "1"}, True),
        ({**other, "heartbeat": time.time()}, False),
        ({**other, "heartbeat": time.time() - locks.STALE_AFTER_S - 1}, True),
    ]:
        path.write_text(json.dumps(record))
        held, holder = locks.try_lock(path)
        assert (held is not None) == stale, record
        if held is not None:
            assert held.previous == record
            held.release()
        else:
            assert holder == record


def test_a_free_lock_still_beating_on_another_host_is_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mount whose fcntl locks are host-local (nolock) lets every host lock; the holder's
    heartbeat in the record still tells another host that the run lives."""
    path = tmp_path / ".sabench.lock"
    beating = {"host": "elsewhere", "pid": 1, "since": "then", "heartbeat": time.time()}
    path.write_text(json.dumps(beating))
    held, holder = locks.try_lock(path)
    assert held is None and holder == beating
    old = {**beating, "heartbeat": time.time() - locks.STALE_AFTER_S - 1}
    path.write_text(json.dumps(old))
    held, _ = locks.try_lock(path)
    assert held is not None and held.previous == old
    held.release()
    path.write_text(json.dumps(beating))
    held, _ = locks.try_lock(path, remote_beat_holds=False)  # run locks trust the free lock
    assert held is not None
    held.release()
    monkeypatch.setattr(locks, "HEARTBEAT_S", 0.05)
    held, _ = locks.try_lock(path)
    assert held is not None
    first = held.record["heartbeat"]
    wait_for(
        lambda: json.loads(os.pread(held.fd, 4096, 0) or b"{}").get("heartbeat", 0) > first,
        timeout=5,
        what="the holder's heartbeat",
    )
    held.release()


def guard(run: Path, stage: str, *, then: str = "sys.stdin.read()", **kw: object):
    """A process in ``job_guard(run, stage)`` that starts a child ``sleep`` and waits."""
    return python(
        f"""
        import subprocess, sys
        from sabench.locks import job_guard
        from sabench.steps import step
        with step(None, "test"), job_guard({str(run)!r}, {stage!r}):
            child = subprocess.Popen(["sleep", "300"], stdout=-3, stderr=-3)  # DEVNULL
            print(child.pid, flush=True)
            {then}
        print("released", flush=True)
        """,
        stdin=subprocess.PIPE,
        **kw,
    )


def test_a_second_job_ends_an_orphaned_one_and_its_children(tmp_path: Path) -> None:
    """A live holder on this host with no live snakemake is an orphan: SIGTERM (clean), and its
    process tree is gone before the second job starts its work."""
    run = tmp_path / "run"
    first = guard(run, "execute", env=env())
    assert first.stdout is not None
    first_child = int(first.stdout.readline())
    record = json.loads((run / ".lock-execute").read_text())
    assert record["pid"] == first.pid and record["stage"] == "execute"
    second = guard(run, "execute", env=env())
    assert second.stdout is not None
    second_child = int(second.stdout.readline())  # the second works: the first must be gone
    assert not locks.alive(first.pid) and not locks.alive(first_child)
    assert json.loads((run / ".lock-execute").read_text())["pid"] == second.pid
    out, _ = first.communicate(timeout=30)
    assert first.returncode == 128 + signal.SIGTERM and "released" not in out
    out, err = second.communicate("", timeout=30)
    os.kill(second_child, signal.SIGKILL)
    assert second.returncode == 0 and out.endswith("released\n")
    assert "ending the execute step left running by a killed snakemake" in err
    assert not (run / ".lock-execute").exists(), "released on the way out"


def test_a_job_whose_snakemake_lives_is_waited_for(tmp_path: Path) -> None:
    run = tmp_path / "run"
    # the first job's snakemake is this test process: alive, so the first is no orphan
    first = guard(run, "judge-exec", env=env(**{locks.SNAKEMAKE_ENV: f"{HOST}:{os.getpid()}"}))
    assert first.stdout is not None
    os.kill(int(first.stdout.readline()), signal.SIGKILL)
    second = guard(run, "judge-exec", then="pass", env=env())
    time.sleep(2 * locks.POLL_S)
    assert second.poll() is None, "the second waits"
    out, _ = first.communicate("", timeout=30)
    assert first.returncode == 0 and out.endswith("released\n")
    out, err = second.communicate(timeout=30)
    os.kill(int(out.split()[0]), signal.SIGKILL)
    assert second.returncode == 0 and out.endswith("released\n"), err
    assert "waiting for the judge-exec step running there (host" in err


def test_a_job_ends_itself_when_its_snakemake_dies(tmp_path: Path) -> None:
    snakemake = subprocess.Popen(["sleep", "300"])  # stands in for the snakemake process
    watching = env(**{locks.SNAKEMAKE_ENV: f"{HOST}:{snakemake.pid}"})
    job = guard(tmp_path / "run", "reproduce", env=watching)
    assert job.stdout is not None
    child = int(job.stdout.readline())
    os.kill(child, signal.SIGKILL)  # only the job's own cleanup matters here
    snakemake.kill()
    snakemake.wait()
    started = time.monotonic()
    assert job.wait(timeout=3 * locks.POLL_S + 5) == 128 + signal.SIGTERM
    assert time.monotonic() - started < 3 * locks.POLL_S + 5
    assert f"snakemake (pid {snakemake.pid}) is gone" in job.communicate()[1]
    assert not (tmp_path / "run" / ".lock-reproduce").exists()


@pytest.mark.bwrap
def test_sigterm_removes_the_bwrap_sandbox(sandbox_env: Path, tmp_path: Path) -> None:
    """SIGTERM of an execute job unwinds: the sandbox's processes, its helper and its control
    folder are gone when the job has exited (the default action would leave the folder)."""
    from sabench.sandbox import get_backend

    ok, why = get_backend("bwrap").available()
    if not ok:
        pytest.skip(f"bwrap unavailable: {why}")
    sub = tmp_path / "submission"
    sub.mkdir()
    marker = f"sabench-test-{os.getpid()}-sigterm"
    (sub / "reproduce.sh").write_text(f"exec -a {marker} sleep 300\n")
    job = subprocess.Popen(
        [sys.executable, "-m", "sabench.execute", str(sub),
         "--out", str(tmp_path / "run"), "--backend", "bwrap", "--python-env", str(sandbox_env)],
        cwd=REPO, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    wait_for(lambda: processes(marker), what="the sandbox to start")
    tree = locks._descendants(job.pid)
    controls = list(Path("/tmp").glob(f"sabench-bwrap-{job.pid}-*"))
    assert controls, "bwrap's control folder is where this test expects it"
    job.send_signal(signal.SIGTERM)
    assert job.wait(timeout=30) == 128 + signal.SIGTERM, job.stderr
    assert not [p for p in tree if locks.alive(p)], "every process of the job has ended"
    assert not [c for c in controls if c.exists()], "the sandbox's control folder is removed"
    assert not (tmp_path / "run" / ".lock-execute").exists()


# --- through snakemake: two checkouts on one results folder, a kill -9 and the resumed run ------

SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def slow_grid(tmp_path: Path, marker: str) -> list[str]:
    """One paper, one replay agent whose reproduce.sh (named ``marker`` in the process table)
    waits until the test creates ``go`` in the trace's site folder, the one host folder a run
    sees (read-only, at /opt/sabench-site; see :func:`release`), or 120 s."""
    sub = tmp_path / "submissions" / "ridge-gd"
    sub.mkdir(parents=True)
    (sub / "reproduce.sh").write_text(
        f"exec -a {marker} bash -c 'for i in $(seq 1200); do [ -e {SITE_TARGET}/go ] && break;"
        " sleep 0.1; done; echo {} > results.json'\n"
    )
    agents = tmp_path / "agents.yaml"
    agents.write_text(json.dumps({"slow": {"kind": "replay", "path": f"{sub.parent}/{{paper}}"}}))
    return [
        "--config",
        f"results={tmp_path / 'results'}",
        "papers=ridge-gd",
        "agents=slow",
        f"agents_file={agents}",
        "judges=[static]",
        "runtime={backend: bwrap}",
    ]


def release() -> None:
    """Let every slow_grid sandbox finish: ``go`` in each run's site folder (execute_run's)."""
    for site in Path(tempfile.gettempdir()).glob("sabench-site-*"):
        with contextlib.suppress(OSError):
            (site / "go").touch()


def snakemake(workdir: Path, *args: str) -> subprocess.Popen[str]:
    """snakemake with its own working directory (its own .snakemake/ lock), the repo's workflow."""
    workdir.mkdir(parents=True, exist_ok=True)
    clean = {k: v for k, v in env().items() if not k.startswith("SNAKEMAKE")}
    return subprocess.Popen(
        [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "--directory", str(workdir),
         "--configfile", str(REPO / "config" / "config.yaml"), "--cores", "2", *args],
        cwd=workdir, env=clean, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip


def processes(argv0: str) -> list[int]:
    """Pids whose argv[0] is ``argv0`` and whose parent's is not (a fork not yet exec'd): the
    sandboxes of one test."""
    named = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if argv[0] == argv0.encode():
                named[int(entry)] = ppid
    return [pid for pid, ppid in named.items() if ppid not in named]


def finish(proc: subprocess.Popen[str], timeout: float = 300) -> str:
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, out[-4000:]
    return out


@pytest.mark.workflow
@pytest.mark.bwrap
def test_two_checkouts_on_one_results_folder(sandbox_env: Path, tmp_path: Path) -> None:
    marker = f"sabench-test-{os.getpid()}-two"
    args = slow_grid(tmp_path, marker)
    results = (tmp_path / "results").resolve()
    first = snakemake(tmp_path / "checkout-a", *args)
    try:
        wait_for(lambda: processes(marker), timeout=180, what="the first run's sandbox")
        holder = json.loads((results / ".sabench.lock").read_text())
        assert holder["pid"] == first.pid and holder["workdir"] == str(tmp_path / "checkout-a")
        second = snakemake(tmp_path / "checkout-b", *args)
        out, _ = second.communicate(timeout=180)
        assert second.returncode == 1, out[-4000:]
        errors = [line for line in out.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "Traceback" not in out, out[-4000:]
        assert errors[0].startswith(f"error: results folder {results} is in use by another")
        assert f"(host {HOST}, pid {first.pid}, user " in errors[0]
        assert "--directory " + str(tmp_path / "checkout-a") in errors[0], "names the command"
        assert processes(marker), "the first run's sandbox goes on"
    finally:
        release()
    finish(first)
    assert (results / "tables" / "runs.parquet").is_file()
    assert not (results / ".sabench.lock").exists(), "released at the end of the run"


@pytest.mark.workflow
@pytest.mark.bwrap
def test_kill_9_of_snakemake_never_leaves_two_sandboxes(sandbox_env: Path, tmp_path: Path) -> None:
    """The orphaned execute job ends with its sandbox (watchdog); the resumed run takes the stale
    results lock over with a warning and runs the one sandbox again; never two at once."""
    import threading

    marker = f"sabench-test-{os.getpid()}-kill"
    args = slow_grid(tmp_path, marker)
    results = (tmp_path / "results").resolve()
    workdir = tmp_path / "checkout"
    first = snakemake(workdir, *args)
    wait_for(lambda: processes(marker), timeout=180, what="the first run's sandbox")
    most, stop = [0], threading.Event()

    def count() -> None:
        while not stop.is_set():
            most[0] = max(most[0], len(processes(marker)))
            time.sleep(0.05)

    counter = threading.Thread(target=count, daemon=True)
    counter.start()
    job = json.loads((results / "runs" / "slow" / "ridge-gd" / "0" / ".lock-execute").read_text())
    try:
        first.kill()
        first.communicate()
        killed = time.monotonic()
        wait_for(lambda: not processes(marker), timeout=20, what="the orphan's sandbox to end")
        wait_for(lambda: not locks.alive(job["pid"]), timeout=10, what="the orphaned job to end")
        assert time.monotonic() - killed < 3 * locks.POLL_S + 10
        finish(snakemake(workdir, "--unlock", *args))
        resumed = snakemake(workdir, "--rerun-incomplete", *args)
        wait_for(lambda: processes(marker), timeout=180, what="the resumed run's sandbox")
    finally:
        release()
    out = finish(resumed)
    stop.set()
    counter.join()
    assert most[0] == 1, f"{most[0]} sandboxes of one run at once"
    assert (
        f"taking over the stale lock of a run that is no longer running (host {HOST}, "
        f"pid {first.pid}," in out
    )
    record = json.loads(
        (results / "runs" / "slow" / "ridge-gd" / "0" / "execution.json").read_text()
    )
    assert record["status"] == "ok"
