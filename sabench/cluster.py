"""The cluster pre-flight: before the first job of ``snakemake --profile slurm``, Slurm answers and
takes the jobs' partition and account, or the run stops with one line saying why.

snakemake-executor-plugin-slurm calls some of Slurm's commands without a timeout, from a
submission thread whose failures never reach snakemake: a missing ``sacct`` or ``sinfo``, or a
controller that does not answer, left snakemake printing "Group job runs" and waiting forever.
So ``sabench.lifecycle.on_start`` first asks Slurm what the plugin will ask it (docs/hpc.md,
"Pre-flight"): the commands the plugin calls for these jobs are on ``PATH`` and answer,
``scontrol ping`` finds the controller up, every partition the jobs or the partitions file name
exists, a named account is one of the user's, and ``sbatch --test-only`` accepts a job with the
jobs' partition and account (it submits nothing). The commands run side by side, each killed
with its process group after ``SABENCH_SLURM_TIMEOUT_S`` seconds (default 5), so the pre-flight
takes at most that long.
"""

from __future__ import annotations

import difflib
import getpass
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

#: How long each Slurm command may take before the pre-flight calls Slurm unresponsive.
TIMEOUT_ENV = "SABENCH_SLURM_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 5.0
HELP = "docs/hpc.md"


@dataclass(frozen=True)
class Target:
    """Where Slurm jobs go: their ``-p`` and ``-A`` (None: the plugin takes the default partition
    from ``sinfo`` and guesses the account with ``sacct``), and where each was set."""

    partition: str | None = None
    account: str | None = None
    partition_from: str = "slurm_partition"
    account_from: str = "slurm_account"

    def describe(self) -> str:
        """``a job with account 'a' (SBATCH_ACCOUNT) in the default partition``."""
        account = f"account '{self.account}' ({self.account_from})" if self.account else ""
        partition = f"partition '{self.partition}' ({self.partition_from})"
        return (
            f"a job with {account or 'no account'} "
            f"in {partition if self.partition else 'the default partition'}"
        )


@dataclass(frozen=True)
class Answer:
    """What one command said: its exit status (None: it did not answer in time) and output."""

    returncode: int | None
    output: str

    def reason(self) -> str:
        """Its last error line, without the command's own ``sbatch: error:`` prefix."""
        lines = [ln.strip() for ln in self.output.splitlines() if ln.strip()]
        errors = [ln for ln in lines if "error" in ln.lower()] or lines
        text = errors[-1] if errors else f"exit status {self.returncode}"
        return re.sub(r"^\w+: error: (Batch job submission failed: )?", "", text)


@dataclass(frozen=True)
class Probe:
    """One command the pre-flight runs, the name a line gives it, and, where the settings decide
    whether the plugin calls it, why it is needed."""

    command: tuple[str, ...]
    label: str
    why: str = ""


def timeout_s() -> float:
    """The per-command timeout: ``SABENCH_SLURM_TIMEOUT_S`` when a positive number, else 5 s."""
    try:
        seconds = float(os.environ.get(TIMEOUT_ENV, ""))
    except ValueError:
        return DEFAULT_TIMEOUT_S
    return seconds if seconds > 0 else DEFAULT_TIMEOUT_S


def run(command: Sequence[str], timeout: float) -> Answer:
    """Run a Slurm command (the one on PATH that was checked, never a later one) with stdin
    closed; past ``timeout`` kill its process group (a wrapper script's children too) and return
    ``returncode=None``."""
    try:
        proc = subprocess.Popen(
            [shutil.which(command[0]) or command[0], *command[1:]],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
    except OSError as exc:  # found on PATH but not runnable
        return Answer(126, f"{command[0]}: error: {exc.strerror}")
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return Answer(None, "")
    return Answer(proc.returncode, out or "")


def probes(
    targets: Sequence[Target], status_command: str, partitions_file: bool, user: str
) -> dict[Any, Probe]:
    """What to ask Slurm: the controller, its partitions, a test job per target, and the
    commands the plugin itself calls without a timeout for these settings."""
    plan: dict[Any, Probe] = {
        "ping": Probe(("scontrol", "ping"), "scontrol ping"),
        "partitions": Probe(
            ("scontrol", "--all", "--oneliner", "show", "partition"), "scontrol show partition"
        ),
    }
    if status_command == "sacct":  # the plugin's status checks (slurm-status-command)
        plan["status"] = Probe(("sacct", "-n", "-X", "-u", user, "-o", "JobID"), "sacct")
    else:
        plan["status"] = Probe(("squeue", "-h", "-u", user, "-o", "%i"), "squeue")
    if any(t.partition is None for t in targets) and not partitions_file:
        why = "to find the default partition; or export SBATCH_PARTITION"
        plan["sinfo"] = Probe(("sinfo", "-h", "-o", "%P"), "sinfo", why)
    if any(t.account is None for t in targets):
        why = "to guess the account; or export SBATCH_ACCOUNT"
        plan["sacct"] = Probe(("sacct", "-n", "-u", user, "-o", "Account%256"), "sacct", why)
    if any(t.account for t in targets):
        command = ("sacctmgr", "-n", "-s", "list", "user", user, "format=account%256")
        plan["accounts"] = Probe(command, "sacctmgr", "to check the account")
    for target in targets:
        plan[target] = Probe(probe_job(target), "sbatch")
    return plan


def probe_job(target: Target) -> tuple[str, ...]:
    """``sbatch --test-only`` of a one-line job with the target's partition and account: Slurm
    checks both (and their combination) and submits nothing."""
    command = ["sbatch", "--test-only", "--job-name=sabench-preflight", "--output=/dev/null"]
    if target.partition:
        command.append(f"--partition={target.partition}")
    if target.account:
        command.append(f"--account={target.account}")
    return (*command, "--wrap=true")


def missing_commands_line(plan: dict[Any, Probe]) -> str | None:
    """One line naming the Slurm commands not on PATH, or None when all are there."""
    why = {probe.command[0]: probe.why for probe in plan.values()}
    missing = sorted((n for n in why if shutil.which(n) is None), key=lambda n: n != "sbatch")
    if not missing:
        return None
    if "sbatch" in missing:  # no Slurm here at all: why each one is needed says nothing
        names = ", ".join(missing)
    else:
        names = ", ".join(f"{n} ({why[n]})" if why[n] else n for n in missing)
    return (
        f"Slurm: not on PATH: {names}. Run snakemake where Slurm's commands are (a login node of "
        f"the cluster; on some sites `module load slurm` first), or without --profile slurm ({HELP})"
    )


def unknown_line(what: str, name: str, source: str, verdict: str, known: Sequence[str]) -> str:
    """A partition or account Slurm does not know, the nearest one it does, and all it does."""
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    listed = ", ".join(known) if known else "none"
    return f"Slurm: {what} '{name}' ({source}) {verdict}; {hint}{what}s: {listed} ({HELP})"


def refused_line(target: Target, answer: Answer) -> str:
    """sbatch refused the test job: what it refused, sbatch's reason, and what to set."""
    reason = answer.reason()
    fix = ""
    if "account" in reason.lower():
        fix = "; export SBATCH_ACCOUNT=<one of `sacctmgr show assoc user=$USER`>"
    elif "partition" in reason.lower():
        fix = "; export SBATCH_PARTITION=<one of `sinfo -s`>"
    return f"Slurm: sbatch refuses {target.describe()}: {reason}{fix} ({HELP})"


def check_slurm(
    targets: Iterable[Target],
    *,
    status_command: str = "squeue",
    file_partitions: Sequence[str] = (),
    timeout: float = DEFAULT_TIMEOUT_S,
    user: str | None = None,
) -> list[str]:
    """Every reason the jobs cannot reach Slurm, one line each (none: go ahead). The commands
    run side by side, so this takes at most ``timeout`` seconds."""
    targets = sorted(set(targets), key=lambda t: (t.partition or "", t.account or ""))
    plan = probes(targets, status_command, bool(file_partitions), user or getpass.getuser())
    missing = missing_commands_line(plan)
    if missing:
        return [missing]
    with ThreadPoolExecutor(max_workers=len(plan)) as pool:
        futures = {key: pool.submit(run, probe.command, timeout) for key, probe in plan.items()}
        answers = {key: future.result() for key, future in futures.items()}

    silent = sorted({plan[key].label for key, a in answers.items() if a.returncode is None})
    if silent:
        return [
            f"Slurm does not answer: {', '.join(silent)} gave no answer within {timeout:g} s "
            f"(is slurmctld up? `scontrol ping`; a slow controller: export {TIMEOUT_ENV}=30) "
            f"({HELP})"
        ]
    ping = answers["ping"]
    if ping.returncode != 0 or re.search(r"\bDOWN\b", ping.output):
        return [f"Slurm: the controller is not up: scontrol ping: {ping.reason()} ({HELP})"]

    problems = []
    known = re.findall(r"^PartitionName=(\S+)", answers["partitions"].output, re.MULTILINE)
    named = {p: "the partitions file" for p in file_partitions}
    named |= {t.partition: t.partition_from for t in targets if t.partition}
    unknown = sorted(p for p in named if p not in known)
    for name in unknown:
        problems.append(unknown_line("partition", name, named[name], "does not exist", known))
    mine = answers.get("accounts")
    accounts = sorted({a.strip() for a in mine.output.split()}) if mine else []
    if mine and mine.returncode == 0 and accounts:  # else: no accounting to ask, sbatch decides
        lower = {a.lower() for a in accounts}
        for target in targets:
            if target.account and target.account.lower() not in lower:
                source, verdict = target.account_from, "is not one of yours"
                problems.append(unknown_line("account", target.account, source, verdict, accounts))
    if not problems:  # what sbatch says is wrong with the jobs as they will be submitted
        problems = [refused_line(t, answers[t]) for t in targets if answers[t].returncode != 0]
    return problems


def _source(value: str | None, env_var: str, resource: str) -> str:
    """Where a job's partition or account was set: the profile's environment variable when it
    holds that value, else the resource."""
    return env_var if value and os.environ.get(env_var) == value else resource


def job_targets(jobs: Iterable[Any]) -> set[Target]:
    """The partitions and accounts of the jobs that go to Slurm, one job per rule (they come
    from default resources, the profile's, not from a job's wildcards)."""
    targets = set()
    rules = set()
    for job in jobs:
        if job.is_local or job.rule.name in rules:
            continue
        rules.add(job.rule.name)
        partition = str(job.resources.get("slurm_partition") or "") or None
        account = str(job.resources.get("slurm_account") or "") or None
        targets.add(
            Target(
                partition,
                account,
                _source(partition, "SBATCH_PARTITION", "slurm_partition"),
                _source(account, "SBATCH_ACCOUNT", "slurm_account"),
            )
        )
    return targets


def file_partitions(path: str | Path | None) -> list[str]:
    """The partition names of the plugin's partitions file (``SNAKEMAKE_SLURM_PARTITIONS`` or
    ``--slurm-partition-config``); an unreadable file is the plugin's to report."""
    if not path:
        return []
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError):
        return []
    partitions = data.get("partitions") if isinstance(data, dict) else None
    return [str(name) for name in partitions] if isinstance(partitions, dict) else []


def preflight(workflow: Any) -> list[str]:
    """The pre-flight of a workflow about to run jobs under the slurm executor (nothing under any
    other executor, or when every job runs locally): one line per reason its jobs cannot reach
    Slurm."""
    plugin = workflow.executor_plugin
    if plugin is None or plugin.name != "slurm":
        return []
    targets = job_targets(workflow.dag.needrun_jobs())
    if not targets:
        return []
    settings = workflow.executor_settings
    partitions_file = getattr(settings, "partition_config", None) or os.environ.get(
        "SNAKEMAKE_SLURM_PARTITIONS"
    )
    return check_slurm(
        targets,
        status_command=getattr(settings, "status_command", None) or "squeue",
        file_partitions=file_partitions(partitions_file),
        timeout=timeout_s(),
    )
