"""The Docker backend (the docker SDK); podman's API service is driven by the same code (podman.py).

One container per run, from the project's image (``images/python``, built when missing; see
``images.py``) or ``runtime.image``. Isolation by default (each relaxable in
``runtime.isolation``, with a warning): no network, user 1000 (never root), every capability
dropped, no-new-privileges, read-only root filesystem, the paper bound read-only at /paper, only
/submission writable, a private /tmp; memory (no swap), pids, time and output-size limits. The
container sees nothing else of the host: not the repo, not results/, not the SAUs, not the host's
environment (only HOME, TMPDIR, LANG, USER, LOGNAME and what the caller puts in ``spec.env``).

How each limit is enforced:
- output: /submission is a folder on a size-limited filesystem mounted on the host for this run
  (an ext4 image on a loop device, else a sized tmpfs; both need root) and bind-mounted in; the
  files are copied in before and back out after the run, links never followed and links pointing
  outside removed (``staging.sanitize``). Without root: the workdir itself, a file-size ulimit and
  a size check afterwards.
- time: the engine's wait with a timeout, then SIGTERM of the run's processes (``kill -TERM -1``
  inside the container: its pid 1 ignores a signal it has no handler for), TERM_GRACE_S for them
  to end as they would, then SIGKILL of the container (its pid 1: the kernel ends every process
  of its pid namespace).
- memory / pids: the engine's cgroup limits; OOM from the engine's OOMKilled flag or the cgroup's
  oom_kill counter, read beside the run with the peak memory and pids-limit hits.
- a dying job: every container carries labels (the run, the owner ``host:pid:start``); a watchdog
  process kills the container if the job dies without finishing (SIGKILL included), SIGTERM is
  turned into a clean kill, and every run first reaps containers and mounts of dead owners.

Modules: ``backend`` (the DockerSandbox class), ``options`` (labels, isolation, GPU requests),
``output`` (/submission's sized filesystem, copy in and out), ``container`` (attach, start, poll,
wait, kill), ``outcome`` (status, notes, log footer), ``watchdog`` (clean-up when the job dies),
``__main__`` (``python -m sabench.sandbox.docker reap|check``).
"""

from sabench.sandbox.common import SANDBOX_UID
from sabench.sandbox.docker.backend import DockerSandbox
from sabench.sandbox.docker.options import LABEL_OWNER, LABEL_RUN, device_requests

__all__ = ["LABEL_OWNER", "LABEL_RUN", "SANDBOX_UID", "DockerSandbox", "device_requests"]
