"""The cluster pre-flight (sabench.cluster): `snakemake --profile slurm` stops before any job, in
one line, when Slurm's commands are missing, do not answer, or refuse the jobs' partition or
account.

Slurm here is a folder of stand-in commands (shell scripts that answer as Slurm's do, refuse
what a site would refuse, or hang), put first on PATH; the real Slurm that tests/slurm/start.sh
starts passes the same pre-flight in tests/test_slurm.py. The workflow tests run a real
snakemake with the slurm profile.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sabench.cluster import Target, check_slurm, file_partitions

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
#: Every client command of Slurm: none of them may be found where the test says Slurm is absent.
SLURM_COMMANDS = {
    "sbatch", "scontrol", "squeue", "sinfo", "sacct", "sacctmgr", "sshare", "scancel", "srun",
    "salloc", "sstat", "sprio", "sreport", "sview", "strigger", "sattach", "sbcast", "scrontab",
    "sdiag", "sh5util",
}  # fmt: skip
#: A command that never answers; its PID (kept by exec) is logged to check that it was killed.
HANG = 'echo $$ >> "$(dirname "$0")/hung.pids"; exec sleep 600\n'


def stand_in_slurm(
    folder: Path,
    *,
    partitions: tuple[str, ...] = ("cpu", "gpu"),
    accounts: tuple[str, ...] = ("proj_a", "proj_b"),
    need_account: bool = False,
    hang: tuple[str, ...] = (),
    controller: str = "UP",
) -> Path:
    """Stand-ins for Slurm's commands in ``folder``: a cluster with ``partitions`` (the first
    the default) and the user's ``accounts``; sbatch refuses an unknown partition or account
    (and, with ``need_account``, a job without one) as Slurm does, submits nothing and logs
    every call (``calls.log``: time, command); the commands in ``hang`` never answer."""
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "calls.log"
    listing = "\n".join(f"PartitionName={p} State=UP" for p in partitions)
    sinfo = "\n".join([f"{partitions[0]}*", *partitions[1:]])
    account_cases = "|".join(accounts)
    partition_cases = "|".join(partitions)
    scripts = {
        "scontrol": f"""case "$*" in
  ping) echo "Slurmctld(primary) at head is {controller}"; [ {controller} = UP ];;
  *"show partition"*) printf '%s\\n' "{listing}";;
  "show config") echo "MaxArraySize = 1001"; echo "MinJobAge = 300 sec";;
esac
""",
        "sbatch": f"""partition= account=
for arg; do
  case "$arg" in --partition=*) partition=${{arg#*=}};; --account=*) account=${{arg#*=}};; esac
done
case "$*" in *--test-only*) ;; *) echo "sbatch: error: this stand-in submits nothing" >&2; exit 1;; esac
case "$partition" in ""|{partition_cases}) ;; *)
  echo "sbatch: error: Batch job submission failed: Invalid partition name specified" >&2; exit 1;;
esac
case "$account" in {account_cases}) ;; "") if {"true" if need_account else "false"}; then
  echo "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified" >&2; exit 1
fi;; *)
  echo "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified" >&2; exit 1;;
esac
echo "sbatch: Job 1 to start at 2026-01-01T00:00:00 using 1 processors on nodes n1 in partition ${{partition:-{partitions[0]}}}" >&2
""",
        "squeue": "",
        "sinfo": f"printf '%s\\n' '{sinfo}'\n",
        "sacct": "",
        "sacctmgr": f"printf '%s\\n' {' '.join(accounts)}\n",
        "scancel": "",
    }
    for name, body in scripts.items():
        script = folder / name
        head = f'#!/bin/sh\necho "$(date +%s.%N) {name} $*" >> {log}\n'
        script.write_text(head + (HANG if name in hang else body))
        script.chmod(0o755)
    return folder


@pytest.fixture
def on_path(monkeypatch: pytest.MonkeyPatch):
    """Put a folder first on this process's PATH (the pre-flight looks commands up there)."""

    def put(folder: Path) -> None:
        monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")

    return put


def path_without_slurm(folder: Path) -> str:
    """This PATH with Slurm's commands hidden: a folder of links to every other command on it
    (Slurm's may live in /usr/bin, beside bash)."""
    folder.mkdir(parents=True, exist_ok=True)
    for directory in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for entry in os.scandir(directory):
            link = folder / entry.name
            if entry.name in SLURM_COMMANDS or link.exists() or link.is_symlink():
                continue
            link.symlink_to(entry.path)
    return str(folder)


# ------------------------------------------------------------------ the checks, stand-in Slurm


def test_a_healthy_cluster_passes(tmp_path: Path, on_path) -> None:
    slurm = stand_in_slurm(tmp_path / "bin")
    on_path(slurm)
    targets = [Target(), Target("gpu", "proj_a")]
    assert check_slurm(targets, user="ana") == []
    calls = (slurm / "calls.log").read_text()
    assert "sbatch --test-only" in calls and "scontrol ping" in calls
    assert "sacctmgr" in calls and "sinfo" in calls  # what the plugin will call, asked first
    submitted = [ln for ln in calls.splitlines() if " sbatch " in ln and "--test-only" not in ln]
    assert submitted == []


def test_no_slurm_names_what_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing there
    (line,) = check_slurm([Target()], user="ana")
    assert line.startswith("Slurm: not on PATH: sbatch, scontrol, squeue, sinfo, sacct. ")
    assert "docs/hpc.md" in line


def test_a_command_the_plugin_needs_for_these_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sbatch is there but sacct is not, and no account is named: the plugin would guess one
    with sacct, and its submission thread would die in silence."""
    slurm = stand_in_slurm(tmp_path / "bin")
    (slurm / "sacct").unlink()
    monkeypatch.setenv("PATH", f"{slurm}{os.pathsep}{path_without_slurm(tmp_path / 'path')}")
    (line,) = check_slurm([Target("cpu")], user="ana")
    assert line.startswith(
        "Slurm: not on PATH: sacct (to guess the account; or export SBATCH_ACCOUNT). "
    ), line
    assert check_slurm([Target("cpu", "proj_a")], user="ana") == []  # named: nothing to guess


def test_commands_that_hang_are_killed_in_time(tmp_path: Path, on_path) -> None:
    slurm = stand_in_slurm(tmp_path / "bin", hang=("sbatch", "scontrol"))
    on_path(slurm)
    started = time.monotonic()
    (line,) = check_slurm([Target()], timeout=1.5, user="ana")
    assert time.monotonic() - started < 4, "the commands must run side by side, under a timeout"
    assert line.startswith(
        "Slurm does not answer: sbatch, scontrol ping, scontrol show partition gave no answer "
        "within 1.5 s"
    ), line
    assert "SABENCH_SLURM_TIMEOUT_S" in line
    hung = (slurm / "hung.pids").read_text().split()
    assert len(hung) == 3
    for pid in hung:  # killed, not left sleeping
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()


def test_an_unknown_partition_is_named_with_the_nearest(
    tmp_path: Path, on_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_path(stand_in_slurm(tmp_path / "bin"))
    monkeypatch.setenv("SBATCH_PARTITION", "gpux")
    (line,) = check_slurm([Target("gpux", partition_from="SBATCH_PARTITION")], user="ana")
    assert line == (
        "Slurm: partition 'gpux' (SBATCH_PARTITION) does not exist; did you mean 'gpu'? "
        "partitions: cpu, gpu (docs/hpc.md)"
    )


def test_a_partitions_file_names_only_partitions_that_exist(tmp_path: Path, on_path) -> None:
    on_path(stand_in_slurm(tmp_path / "bin"))
    partitions = tmp_path / "partitions.yaml"
    partitions.write_text("partitions:\n  cpu: {}\n  a100: {max_gpu: 4}\n")
    assert file_partitions(partitions) == ["cpu", "a100"]
    (line,) = check_slurm([Target()], file_partitions=file_partitions(partitions), user="ana")
    assert line.startswith("Slurm: partition 'a100' (the partitions file) does not exist; ")


def test_an_account_that_is_not_the_users(tmp_path: Path, on_path) -> None:
    on_path(stand_in_slurm(tmp_path / "bin"))
    target = Target("cpu", "proj-a", account_from="SBATCH_ACCOUNT")
    (line,) = check_slurm([target], user="ana")
    assert line == (
        "Slurm: account 'proj-a' (SBATCH_ACCOUNT) is not one of yours; did you mean 'proj_a'? "
        "accounts: proj_a, proj_b (docs/hpc.md)"
    )


def test_a_cluster_that_needs_an_account(tmp_path: Path, on_path) -> None:
    """No account named, and this cluster takes no job without one: sbatch's reason and what
    to set, before any job."""
    on_path(stand_in_slurm(tmp_path / "bin", need_account=True))
    (line,) = check_slurm([Target("cpu")], user="ana")
    assert line.startswith(
        "Slurm: sbatch refuses a job with no account in partition 'cpu' (slurm_partition): "
        "Invalid account or account/partition combination specified; export SBATCH_ACCOUNT="
    ), line
    assert check_slurm([Target("cpu", "proj_b")], user="ana") == []


def test_a_controller_that_is_down(tmp_path: Path, on_path) -> None:
    on_path(stand_in_slurm(tmp_path / "bin", controller="DOWN"))
    (line,) = check_slurm([Target("cpu", "proj_a")], user="ana")
    assert line.startswith("Slurm: the controller is not up: scontrol ping: ")
    assert "DOWN" in line


def test_a_command_that_cannot_start_is_a_line_not_a_traceback(tmp_path: Path, on_path) -> None:
    """A broken installation: scontrol is on PATH but its interpreter is not."""
    slurm = stand_in_slurm(tmp_path / "bin")
    (slurm / "scontrol").write_text("#!/nonexistent/sh\n")
    on_path(slurm)
    (line,) = check_slurm([Target("cpu", "proj_a")], user="ana")
    assert line == (
        "Slurm: the controller is not up: scontrol ping: No such file or directory (docs/hpc.md)"
    )


# ------------------------------------------------------------------ snakemake --profile slurm


def profile_run(
    tmp_path: Path, path: str, **env: str
) -> tuple[subprocess.CompletedProcess[str], float]:
    """`snakemake --profile slurm` on one paper into a fresh results folder, with this PATH."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SNAKEMAKE", "SBATCH_"))}
    started = time.monotonic()
    proc = subprocess.run(
        [SNAKEMAKE, "--profile", "slurm", "--config", "papers=ridge-gd",
         f"results={tmp_path / 'results'}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**base, "PATH": path, **env},
        timeout=300,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return proc, time.monotonic() - started


def error_lines(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")]


def assert_no_job_ran(proc: subprocess.CompletedProcess[str], results: Path) -> None:
    out = proc.stdout + proc.stderr
    assert not re.search(r"^(local)?rule \w+:|^Group job|Submitted", out, re.MULTILINE), out[-3000:]
    assert not (results / "papers").exists()  # not even the local ingest ran


@pytest.mark.workflow
def test_no_slurm_on_path_stops_in_one_line(tmp_path: Path) -> None:
    """The issue's case: no sbatch or scontrol anywhere. It printed "Group job runs" and waited
    forever; now one line names what is missing, exit 1, before any job, within 30 s."""
    proc, took = profile_run(tmp_path, path_without_slurm(tmp_path / "path"))
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert took < 30, f"took {took:.1f} s"
    (line,) = error_lines(proc)
    assert line.startswith("error: Slurm: not on PATH: sbatch, scontrol, squeue, sinfo, sacct. ")
    assert_no_job_ran(proc, tmp_path / "results")


@pytest.mark.workflow
def test_an_unknown_partition_stops_in_one_line(tmp_path: Path) -> None:
    slurm = stand_in_slurm(tmp_path / "bin")
    path = f"{slurm}{os.pathsep}{path_without_slurm(tmp_path / 'path')}"
    proc, took = profile_run(tmp_path, path, SBATCH_PARTITION="gpux", SBATCH_ACCOUNT="proj_a")
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert took < 30, f"took {took:.1f} s"
    assert error_lines(proc) == [
        "error: Slurm: partition 'gpux' (SBATCH_PARTITION) does not exist; did you mean 'gpu'? "
        "partitions: cpu, gpu (docs/hpc.md)"
    ]
    assert_no_job_ran(proc, tmp_path / "results")
    calls = (slurm / "calls.log").read_text()
    assert "--partition=gpux" in calls and "--account=proj_a" in calls  # the jobs' settings
    assert not [ln for ln in calls.splitlines() if " sbatch " in ln and "--test-only" not in ln]


@pytest.mark.workflow
def test_a_slurm_that_hangs_stops_in_one_line(tmp_path: Path) -> None:
    """sbatch and scontrol never answer: the plugin's own start-up waits on `scontrol show
    config` (5 s + 10 s, its timeouts, and 10 s more when sinfo is on PATH) before any workflow
    code runs; then the pre-flight gives up after its timeout, with one line, before any job."""
    slurm = stand_in_slurm(tmp_path / "bin", hang=("sbatch", "scontrol"))
    path = f"{slurm}{os.pathsep}{path_without_slurm(tmp_path / 'path')}"
    proc, took = profile_run(tmp_path, path, SABENCH_SLURM_TIMEOUT_S="3")
    assert proc.returncode == 1, proc.stderr[-3000:]
    (line,) = error_lines(proc)
    assert line.startswith("error: Slurm does not answer: sbatch, scontrol ping, scontrol show ")
    assert "within 3 s" in line
    assert_no_job_ran(proc, tmp_path / "results")
    ended = time.time()
    calls = [ln.split(" ", 2) for ln in (slurm / "calls.log").read_text().splitlines()]
    first_probe = min(float(t) for t, name, args in calls if args.startswith("ping"))
    assert ended - first_probe < 3 + 5, "the pre-flight took longer than its timeout"
    # before the pre-flight: the plugin's own `scontrol show config` calls, under its timeouts
    assert took < 60, f"took {took:.1f} s"
