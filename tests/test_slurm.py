"""`snakemake --profile slurm` on a real single-node Slurm cluster.

The cluster is started by tests/slurm/start.sh when `sinfo` does not answer (Debian's slurm-wlm and
munge, MariaDB + slurmdbd for accounting, one fake GPU as GRES) and stopped at the end by
tests/slurm/stop.sh, which stops only the daemons this session started. What Slurm was asked for is
read back from Slurm's own records: `sacct` (with accounting) or `scontrol show job` (without).

The profile tests at the top need no cluster: they check that the profile is found and read.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
SCRIPTS = REPO / "tests" / "slurm"
STATE = Path(os.environ.get("SABENCH_SLURM_STATE", "/tmp/sabench-slurm"))
PAPER = "ridge-gd"
GPU_AGENT, CPU_AGENT = "reference", "drifted"
# The first status check after 5 s instead of the profile's 40 s: test jobs last seconds.
FAST_STATUS = ("--slurm-init-seconds-before-status-checks", "5")
# Columns that measure time, not what was judged or scored.
#: Bookkeeping that differs between two runs of the same grid (the second finds checks cached).
TIMING = re.compile(r"latency|wall_s|peak_mem|started_at|^cached$")


def clean_env() -> dict[str, str]:
    """The environment without the outer snakemake's; group jobs sized for the test node (as a
    site sets them, docs/hpc.md)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SNAKEMAKE")}
    env.setdefault("SABENCH_GROUP_CPUS", str(os.cpu_count() or 1))
    env.setdefault("SABENCH_GROUP_MEM_MB", "16000")
    return env


def snakemake(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SNAKEMAKE, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def ok(proc: subprocess.CompletedProcess[str], what: str) -> str:
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        pytest.fail(f"{what} failed ({proc.returncode}):\n{out[-6000:]}")
    return out


# ------------------------------------------------------------------ the profile, no cluster needed


def test_slurm_link_is_the_profile() -> None:
    link = REPO / "slurm"
    assert link.is_symlink() and os.readlink(link) == "profiles/slurm"
    assert (link / "config.yaml").samefile(REPO / "profiles" / "slurm" / "config.yaml")


@pytest.mark.parametrize("profile", ["slurm", "profiles/slurm"])
def test_profile_is_found_from_the_repo_root(profile: str) -> None:
    out = ok(snakemake("--profile", profile, "-n", "-p", "--config", f"papers={PAPER}"), "dry run")
    assert f"Using profiles {profile} and workflow specific profile profiles/default" in out
    assert "sabench.yaml" in out  # the profile's configfile is read ...
    assert '"backend": ["apptainer", "bwrap"]' in out  # ... and merged into runtime
    assert "/.cache/images" in out  # the image cache, under the repository: a shared path
    # --config on the command line keeps the profile's settings it does not name
    out = ok(
        snakemake(
            "--profile",
            profile,
            "-n",
            "-p",
            "--config",
            f"papers={PAPER}",
            "runtime={backend: bwrap}",
        ),
        "dry run with --config",
    )
    assert '"backend": "bwrap"' in out and "/.cache/images" in out


def dry_run_jobs(tmp_path: Path, *extra: str) -> tuple[list[str], set[str]]:
    """A dry run under the slurm profile: its group jobs' groups, and the jobs that go alone."""
    dry = ok(
        snakemake(
            "--profile",
            "slurm",
            "-n",
            "--config",
            f"results={tmp_path / 'results'}",
            f"agents_file={tmp_path / 'agents.yaml'}",
            *extra,
        ),
        "dry run",
    )
    alone = {c for c in declared_jobs(dry) if rule_of(c) in ("reproduce", "execute")}
    return re.findall(r"Group job (\w+) \(jobs", dry), alone


def test_a_grid_reaches_slurm_as_few_jobs(tmp_path: Path) -> None:
    """36 runs (3 papers x 12 agents, one with a GPU): Slurm gets the GPU agent's reproduce and
    execute per run, the CPU-only jobs of up to 20 runs per job and, without executions, the
    batched judges of up to 10 papers per job (profiles/slurm)."""
    papers = sorted(p.name for p in (REPO / "resources" / "papers").iterdir() if p.is_dir())
    agents = {
        f"cpu{i:02d}": {"kind": "replay", "path": "resources/submissions/reference/{paper}"}
        for i in range(11)
    }
    agents["gpu"] = {**agents["cpu00"], "gpus": 1}
    (tmp_path / "agents.yaml").write_text(yaml.safe_dump(agents))
    n_judges = 2  # static and exec, config/config.yaml
    groups, alone = dry_run_jobs(tmp_path)
    # components: each CPU agent's run (reproduce, execute, judges), each judge of the GPU runs
    n_components = len(papers) * (len(agents) - 1 + n_judges)
    assert groups == ["runs"] * -(-n_components // 20), groups
    assert len(alone) == 2 * len(papers) and all("_wildcards_gpu_" in c for c in alone), alone
    # no execution, the static judge: a paper's runs judged in one job, 10 papers per Slurm job;
    # replays run locally, except the GPU agent's
    groups, alone = dry_run_jobs(tmp_path, "runtime={execute: false}", "judges=[static]")
    assert groups == ["papers"] * -(-len(papers) // 10), groups
    assert len(alone) == len(papers) and all("rule_reproduce_wildcards_gpu_" in c for c in alone)


def test_an_empty_gpu_model_is_never_declared(tmp_path: Path) -> None:
    """No agent names a GPU model: no job carries a gpu_model resource (it showed as an empty
    `gpu_model=` in every Slurm job); an agent that names one gets it on its GPU jobs."""
    agents = {"cpu": {"kind": "replay", "path": "resources/submissions/reference/{paper}"}}
    (tmp_path / "agents.yaml").write_text(yaml.safe_dump(agents))
    args = ["--profile", "slurm", "-n", "--config", f"papers={PAPER}"]
    args += [f"results={tmp_path / 'results'}", f"agents_file={tmp_path / 'agents.yaml'}"]
    resources = [ln for ln in ok(snakemake(*args), "dry run").splitlines() if "resources:" in ln]
    assert any("cpus_per_task=" in ln for ln in resources)
    assert not any("gpu_model" in ln for ln in resources), resources
    agents["gpu"] = {**agents["cpu"], "gpus": 1, "gpu_model": "a100"}
    (tmp_path / "agents.yaml").write_text(yaml.safe_dump(agents))
    dry = ok(snakemake(*args), "dry run with a GPU model")
    assert "gpu_model=a100" in dry


def test_local_profile_is_read() -> None:
    out = ok(snakemake("--profile", "profiles/local", "-n", "-p"), "dry run")
    assert '"backend": "docker"' in out


def test_profile_settings() -> None:
    profile = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    assert profile["executor"] == "slurm"
    # works with and without accounting (the plugin's sacct default hangs without it)
    assert profile["slurm-status-command"] == "squeue"
    assert "retries" not in profile  # a failed agent is never re-rolled
    # the workflow profile must not set default-resources: it would hide the slurm profile's
    default = yaml.safe_load((REPO / "profiles" / "default" / "config.yaml").read_text())
    assert "default-resources" not in default


@pytest.mark.parametrize(
    "site",
    [{}, {"SBATCH_ACCOUNT": "proj_x"}, {"SBATCH_ACCOUNT": "proj_x", "SBATCH_PARTITION": "part_y"}],
)
def test_site_settings_come_from_the_environment(site: dict[str, str]) -> None:
    """sbatch's own variables reach every job as resources (the plugin's guessed -A and default
    -p would beat the variables), with no tracked file edited; unset, nothing is asked for."""
    env = {k: v for k, v in clean_env().items() if not k.startswith("SBATCH_")}
    proc = subprocess.run(
        [SNAKEMAKE, "--profile", "slurm", "-n", "--config", f"papers={PAPER}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**env, **site},
        timeout=600,
    )
    out = ok(proc, "dry run")
    jobs = [line for line in out.splitlines() if line.strip().startswith("resources:")]
    assert jobs
    for line in jobs:
        assert ("slurm_account=proj_x" in line) == ("SBATCH_ACCOUNT" in site), line
        assert ("slurm_partition=part_y" in line) == ("SBATCH_PARTITION" in site), line


# ------------------------------------------------------------------ the cluster


@dataclass
class Cluster:
    gpu_model: str | None  # the GRES type of the node's GPUs
    accounting: bool  # sacct has the records; else scontrol (MinJobAge keeps them)


def _sinfo_answers() -> bool:
    if shutil.which("sinfo") is None:
        return False
    try:
        proc = subprocess.run(
            ["sinfo", "-h", "-o", "%P"], capture_output=True, text=True, timeout=20
        )
    except subprocess.TimeoutExpired:
        return False
    return proc.returncode == 0 and bool(proc.stdout.strip())


def _stop_what_we_started() -> None:
    started = STATE / "fixture-started"
    if started.is_file():
        names = sorted(set(started.read_text().split()))
        subprocess.run(
            ["bash", str(SCRIPTS / "stop.sh"), *names],
            env={**os.environ, "SABENCH_SLURM_STATE": str(STATE)},
            timeout=300,
            check=False,
        )
        started.unlink()


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[Cluster]:
    """A Slurm that answers: the one already running, or ours (started here, stopped at the end).

    A lock file shared by concurrent test sessions: the start is serialised, and only the last
    session out stops the daemons a session started (listed in $STATE/fixture-started).
    """
    STATE.parent.mkdir(parents=True, exist_ok=True)
    lock = open(STATE.parent / f"{STATE.name}.lock", "a+")  # noqa: SIM115 (held for the session)
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        if not _sinfo_answers():
            if os.geteuid() != 0:
                pytest.skip("no Slurm answers and starting one needs root")
            STATE.mkdir(parents=True, exist_ok=True)
            env = {**os.environ, "SABENCH_SLURM_STARTED": str(STATE / "fixture-started")}
            try:
                start = subprocess.run(
                    ["bash", str(SCRIPTS / "start.sh")],
                    capture_output=True,
                    text=True,
                    env=env,
                    timeout=900,
                    stdin=subprocess.DEVNULL,
                )
                started = start.returncode == 0 and _sinfo_answers()
            except BaseException:
                _stop_what_we_started()
                raise
            if not started:
                _stop_what_we_started()
                pytest.fail(f"could not start a local Slurm:\n{start.stdout}\n{start.stderr}")
        gres = subprocess.run(["sinfo", "-h", "-o", "%G"], capture_output=True, text=True).stdout
        config = subprocess.run(
            ["scontrol", "show", "config"], capture_output=True, text=True
        ).stdout
    finally:
        fcntl.flock(lock, fcntl.LOCK_SH)  # others may use the cluster now
    gpu = re.search(r"\bgpu(?::([A-Za-z0-9_.]+))?:\d+", gres)
    if gpu is None:
        lock.close()
        pytest.skip(f"the running Slurm has no GPU GRES ({gres.strip()!r})")
    accounting = not re.search(r"AccountingStorageType\s*=\s*accounting_storage/none", config)
    try:
        yield Cluster(gpu_model=gpu.group(1), accounting=accounting)
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print("local Slurm left running: another test session uses it")
        else:
            _stop_what_we_started()
        lock.close()


# ------------------------------------------------------------------ the grid


#: The node's GPU is a GRES without a device; this nvidia-smi lists it, so that the GPU agent's
#: execution gets its GPU (bwrap records it and exposes no device) instead of a sandbox fault.
FAKE_SMI = """#!/bin/sh
case "$*" in
  *--query-gpu=index,uuid*) printf '0, GPU-fake-0, Fake GPU, 1024\\n';;
esac
"""


@pytest.fixture(scope="module", autouse=True)
def fake_gpu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    smi = tmp_path_factory.mktemp("fake-gpu") / "nvidia-smi"
    smi.write_text(FAKE_SMI)
    smi.chmod(0o755)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SABENCH_NVIDIA_SMI", str(smi))
        yield


@pytest.fixture(scope="module")
def grid(slurm_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A test agents file: the reference agent asks for a GPU (of the node's model), drifted not."""
    gpu_agent = {
        "kind": "replay",
        "path": f"resources/submissions/{GPU_AGENT}/{{paper}}",
        "gpus": 1,
    }
    if slurm_cluster.gpu_model:
        gpu_agent["gpu_model"] = slurm_cluster.gpu_model
    agents = {
        GPU_AGENT: gpu_agent,
        CPU_AGENT: {"kind": "replay", "path": f"resources/submissions/{CPU_AGENT}/{{paper}}"},
    }
    path = tmp_path_factory.mktemp("slurm-grid") / "agents.yaml"
    path.write_text(yaml.safe_dump(agents))
    return path


def config(results: Path, agents_file: Path, *extra: str) -> list[str]:
    """The slurm runs take the profile's sandbox as it stands: apptainer where the node has it,
    else bwrap (apptainer cannot be installed here)."""
    return [
        "--config",
        f"results={results}",
        f"papers={PAPER}",
        f"agents={GPU_AGENT},{CPU_AGENT}",
        f"agents_file={agents_file}",
        *extra,
    ]


@pytest.fixture(scope="module")
def local_run(grid: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("slurm-local") / "results"
    profile = yaml.safe_load((REPO / "profiles" / "slurm" / "sabench.yaml").read_text())
    backend = json.dumps(profile["runtime"]["backend"])  # the same sandbox as the Slurm runs
    local = config(results, grid, f"runtime={{backend: {backend}}}")
    ok(snakemake("--cores", "2", *local), "local run")
    return results


def tables(results: Path) -> dict[str, pd.DataFrame]:
    out = {}
    for path in sorted((results / "tables").glob("*.parquet")):
        frame = pd.read_parquet(path)
        frame = frame.drop(columns=[c for c in frame.columns if TIMING.search(c)])
        keys = [c for c in ("agent", "paper", "seed", "judge", "sau_id", "dimension") if c in frame]
        out[path.stem] = frame.sort_values(keys).reset_index(drop=True) if keys else frame
    return out


def assert_same_tables(results: Path, reference: Path) -> None:
    got, want = tables(results), tables(reference)
    assert sorted(got) == sorted(want)
    assert {"judgments", "scores_by_agent", "runs"} <= set(got)
    for name, frame in want.items():
        pd.testing.assert_frame_equal(got[name], frame, obj=name)


# ------------------------------------------------------------------ Slurm's records


@dataclass
class SlurmJob:
    job_id: str
    comment: str  # rule_<rule>_wildcards_<values joined by _>
    tres: str  # what was requested: cpu=1,mem=4G,node=1[,gres/gpu=1]
    gpu_spec: str  # how GPUs were asked for: the sbatch line (sacct) or TresPerJob (scontrol)
    gpus: int
    timelimit: str  # [D-]HH:MM:SS
    state: str


def run_id(log: str) -> str:
    match = re.search(r"SLURM run ID: (\S+)", log)
    assert match, "the slurm executor did not log its run ID"
    return match.group(1)


def slurm_jobs(name: str, cluster: Cluster) -> list[SlurmJob]:
    """Every job of one snakemake run (job name = run ID), as Slurm recorded it."""
    if cluster.accounting:
        fields = "JobID,Comment,ReqTRES,Timelimit,State,SubmitLine"
        out = subprocess.run(
            ["sacct", "-X", "-n", "-P", "-S", "now-1days", "--name", name, "-o", fields],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        jobs = []
        for line in out.splitlines():
            job_id, comment, tres, limit, state, submit = line.split("|", 5)
            gpus = int(tres_value(tres, "gres/gpu") or 0)
            jobs.append(SlurmJob(job_id, comment, tres, submit, gpus, limit, state.split()[0]))
        return jobs
    out = subprocess.run(
        ["scontrol", "show", "job", "-o"], capture_output=True, text=True, check=True
    ).stdout
    jobs = []
    for line in out.splitlines():
        rec = dict(re.findall(r"(\w+)=(\S*)", line))
        if rec.get("JobName") == name:
            # without accounting TRES leaves GRES out; TresPerJob is gres:gpu[:<model>]:<n>
            per_job = rec.get("TresPerJob", "")
            gpus = re.search(r"gpu(?:[:/][A-Za-z0-9_.]+)?[:=](\d+)$", per_job)
            jobs.append(
                SlurmJob(
                    rec["JobId"],
                    rec.get("Comment", ""),
                    rec.get("TRES", ""),
                    per_job,
                    int(gpus.group(1)) if gpus else 0,
                    rec.get("TimeLimit", ""),
                    rec.get("JobState", ""),
                )
            )
    return jobs


def running_jobs(name: str) -> list[str]:
    """The comments of the run's running jobs (sacct learns a comment only when the job ends)."""
    out = subprocess.run(
        ["squeue", "-h", "--name", name, "-t", "RUNNING", "-o", "%k"],
        capture_output=True,
        text=True,
    ).stdout
    return out.split()


def declared_jobs(dry_run: str) -> dict[str, dict[str, str]]:
    """Slurm comment (rule_<rule>[_wildcards_<values>]) -> resources, for every job of a dry run."""
    jobs = {}
    for block in re.split(r"\n(?=\[.*\]\n(?:local)?rule \w+:)", dry_run):
        head = re.search(r"^(?:local)?rule (\w+):", block, re.MULTILINE)
        if head is None or head.group(1) == "all":
            continue
        comment = f"rule_{head.group(1)}"
        wildcards = re.search(r"^\s+wildcards: (.*)$", block, re.MULTILINE)
        if wildcards:
            values = [kv.split("=", 1)[1] for kv in wildcards.group(1).split(", ")]
            comment += f"_wildcards_{'_'.join(values)}"
        resources = re.search(r"^\s+resources: (.*)$", block, re.MULTILINE).group(1)
        jobs[comment] = dict(kv.split("=", 1) for kv in resources.split(", "))
    return jobs


def rule_of(comment: str) -> str:
    return comment.removeprefix("rule_").split("_wildcards_")[0]


#: The rules that reach Slurm; a group job's comment is rule_<group id>_<its rules joined by _>.
RULES = ("reproduce", "execute", "judge", "judge_batch")


def is_group(comment: str) -> bool:
    return rule_of(comment) not in RULES


def group_rules(comment: str) -> list[str]:
    """The rules a group job ran, read from its comment."""
    names = f"_{rule_of(comment)}_"
    found = [r for r in ("reproduce", "execute", "judge_batch") if f"_{r}_" in names]
    if "_judge_" in names.replace("_judge_batch_", "_"):
        found.append("judge")
    return sorted(found)


def minutes(limit: str) -> int:
    days, _, hms = limit.rpartition("-")
    h, m, s = (int(x) for x in hms.split(":"))
    return int(days or 0) * 1440 + h * 60 + m + (s > 0)


def tres_value(tres: str, key: str) -> str | None:
    match = re.search(rf"(?:^|,){re.escape(key)}=([^,]+)", tres)
    return match.group(1) if match else None


def mem_mb(value: str) -> int:
    number, unit = re.fullmatch(r"([\d.]+)([KMGT]?)", value).groups()
    scale = {"K": 1 / 1024, "M": 1, "": 1, "G": 1024, "T": 1024 * 1024}[unit]
    return round(float(number) * scale)


# ------------------------------------------------------------------ the tests with a cluster


@pytest.mark.slurm
def test_the_local_cluster_passes_the_preflight(slurm_cluster: Cluster) -> None:
    """The pre-flight (sabench.cluster) against a real Slurm: the default partition, the one
    partition by name and, with accounting, root's account pass; a partition or account the
    cluster lacks is named by what Slurm itself lists."""
    from sabench.cluster import Target, check_slurm

    partition = (
        subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, text=True, check=True)
        .stdout.split()[0]
        .rstrip("*")
    )
    assert check_slurm([Target(), Target(partition)], timeout=20) == []
    (line,) = check_slurm([Target(f"{partition}x")], timeout=20)
    assert line.startswith(f"Slurm: partition '{partition}x' (slurm_partition) does not exist; ")
    assert f"did you mean '{partition}'?" in line
    if slurm_cluster.accounting:
        account = os.environ.get("SABENCH_SLURM_ACCOUNT", "sabench")
        assert check_slurm([Target(partition, account)], timeout=20) == []
        (line,) = check_slurm([Target(partition, f"{account}x")], timeout=20)
        assert line.startswith(f"Slurm: account '{account}x' (slurm_account) is not one of yours")


@pytest.mark.slurm
@pytest.mark.bwrap
def test_slurm_run(
    slurm_cluster: Cluster, grid: Path, local_run: Path, tmp_path: Path, sandbox_env: Path
) -> None:
    """The demo grid through `snakemake --profile slurm`: GPU rules ask Slurm for the agent's GPU,
    everything else for none; runtime and memory are the rules'; aggregation stays local; the
    tables equal those of a local run."""
    results = tmp_path / "results"
    args = ["--profile", "slurm", *FAST_STATUS, *config(results, grid)]
    declared = declared_jobs(ok(snakemake(*args, "-n"), "dry run"))
    log = ok(snakemake(*args), "snakemake --profile slurm")

    recorded = slurm_jobs(run_id(log), slurm_cluster)
    local = set(re.findall(r"^localrule (\w+):", log, re.MULTILINE))
    assert {"judgments", "aggregate", "report"} <= local, "the aggregation must stay local"
    # Few jobs: the GPU agent's reproduce and execute alone, each with its GPU; every CPU-only
    # job (the CPU agent's reproduce, execute and judges, the GPU agent's judges) in one group
    # job of up to 20 runs.
    groups = [job for job in recorded if is_group(job.comment)]
    jobs = {job.comment: job for job in recorded if not is_group(job.comment)}
    assert len(recorded) == 3, [job.comment for job in recorded]
    assert [group_rules(job.comment) for job in groups] == [["execute", "judge", "reproduce"]]
    for job in groups:
        assert job.state == "COMPLETED" and job.gpus == 0, (job.comment, job.state, job.tres)
    assert {rule_of(c) for c in jobs} == {"reproduce", "execute"}
    assert all(f"_wildcards_{GPU_AGENT}_" in c for c in jobs), sorted(jobs)
    remote = sorted(c for c in declared if c.startswith(("rule_reproduce_", "rule_execute_")))
    remote = [c for c in remote if f"_wildcards_{GPU_AGENT}_" in c]
    assert sorted(jobs) == remote, "Slurm got other jobs than the rules declare"
    for comment, job in jobs.items():
        want = declared[comment]
        assert job.state == "COMPLETED", (comment, job.state)
        assert minutes(job.timelimit) == int(want["runtime"]), (comment, job.timelimit)
        assert mem_mb(tres_value(job.tres, "mem")) == int(want["mem_mb"]), (comment, job.tres)
        assert tres_value(job.tres, "cpu") == want.get("cpus_per_task", "1"), (comment, job.tres)
        is_gpu_rule = comment.startswith(("rule_reproduce_", "rule_execute_"))
        if is_gpu_rule and f"_wildcards_{GPU_AGENT}_" in comment:
            assert job.gpus == 1, (comment, job.tres, job.gpu_spec)
            if slurm_cluster.gpu_model:
                assert slurm_cluster.gpu_model in job.gpu_spec, (comment, job.gpu_spec)
        else:
            assert job.gpus == 0, (comment, job.tres, job.gpu_spec)
            assert "gpu" not in job.tres and "gpu" not in job.gpu_spec, (comment, job.gpu_spec)
    # The GPU reaches the GPU agent's sandbox (bwrap records it; it exposes no device).
    records = [
        json.loads(p.read_text()) for p in (results / "runs" / GPU_AGENT).rglob("execution.json")
    ]
    assert records
    for record in records:
        assert record["status"] == "ok" and record["gpus"] == 1, record
        assert record["gpu_usage"]["ids"] == ["0"], record
    assert_same_tables(results, local_run)


@pytest.mark.slurm
@pytest.mark.bwrap
def test_killed_run_resumes(
    slurm_cluster: Cluster, grid: Path, local_run: Path, tmp_path: Path, sandbox_env: Path
) -> None:
    """snakemake killed (SIGKILL) while a Slurm job runs, that job cancelled too: the rerun with
    --rerun-incomplete finishes with the same tables and redoes nothing that had finished."""
    results = tmp_path / "results"
    args = ["--profile", "slurm", *FAST_STATUS, *config(results, grid)]
    log_path = tmp_path / "first.log"
    with log_path.open("w") as log_file:
        proc = subprocess.Popen(
            [SNAKEMAKE, *args],
            cwd=REPO,
            env=clean_env(),
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        name = None
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            log = log_path.read_text()
            if name is None and "SLURM run ID" in log:
                name = run_id(log)
            # the GPU agent's reproduce is a job of its own (the CPU agent's is in a group job)
            reproduced = len(re.findall(r"Finished jobid: \d+ \(Rule: reproduce\)", log))
            running = running_jobs(name) if name else []
            if reproduced >= 1 and any(c.startswith("rule_execute_") for c in running):
                break
            time.sleep(0.5)
        else:
            pytest.fail(
                f"no execute job ran while snakemake lived:\n{log_path.read_text()[-4000:]}"
            )
        finished = {
            p: p.stat().st_mtime_ns
            for p in (results / "runs" / GPU_AGENT / PAPER / "0").glob("agent.json")
        } | {p: p.stat().st_mtime_ns for p in (results / "papers" / PAPER).glob("*.*")}
        assert len(finished) >= 3
        proc.send_signal(signal.SIGKILL)  # the snakemake process dies: no clean-up at all
        proc.wait(timeout=30)
        # ... and its Slurm jobs are killed too (time limit, preemption, scancel)
        subprocess.run(["scancel", "--name", name], check=True)
        for _ in range(120):
            if not subprocess.run(
                ["squeue", "-h", "--name", name, "-t", "PENDING,RUNNING,COMPLETING"],
                capture_output=True,
                text=True,
            ).stdout.strip():
                break
            time.sleep(0.5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    # A killed snakemake leaves its lock. A user runs `snakemake --profile slurm --unlock`; that
    # removes every lock of the working directory, including other runs' in this shared tree, so
    # the test removes only the lock files naming this run's results.
    for lock in (REPO / ".snakemake" / "locks").glob("*.lock"):
        if str(results) in lock.read_text():
            lock.unlink()
    rerun = ok(snakemake(*args, "--rerun-incomplete"), "rerun with --rerun-incomplete")
    stats = rerun.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    rules = set(re.findall(r"^(\w+)\s+\d+$", stats, re.MULTILINE))
    assert "execute" in rules, stats
    assert not rules & {"ingest", "saus"}, f"finished jobs ran again:\n{stats}"
    for path, mtime in finished.items():
        assert path.stat().st_mtime_ns == mtime, f"{path} was rewritten"
    assert_same_tables(results, local_run)
