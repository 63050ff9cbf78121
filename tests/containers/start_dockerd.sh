#!/bin/bash
# Start a private Docker engine for sabench's tests (idempotent; PID file; no systemd needed).
#
#   tests/containers/start_dockerd.sh [--tests]   prints DOCKER_HOST=unix://... once the engine answers
#
# dockerd from Debian's docker.io on its own socket, with no iptables, no bridge and no masquerade
# (containers get --network none anyway) and storage overlay2. State (socket, PID file, log) lives
# under $SABENCH_CT_STATE (default /tmp/sabench-ct: unix socket paths must stay < 108 chars); the
# images persist under $SABENCH_IMAGE_CACHE/docker (default /var/cache/sabench-images), so a warm
# machine keeps them between sessions. If the engine already answers, nothing is started.
# --tests: a test session starts it; the last session out stops it (stop_*.sh --if-unused);
# an engine started by hand is never stopped by the tests.
set -euo pipefail
STATE=${SABENCH_CT_STATE:-/tmp/sabench-ct}
CACHE=${SABENCH_IMAGE_CACHE:-/var/cache/sabench-images}
DRIVER=${SABENCH_DOCKER_STORAGE:-overlay2}
SOCK=$STATE/docker.sock
PIDFILE=$STATE/dockerd.pid
DOCKER=/usr/bin/docker
[ -x $DOCKER ] || DOCKER=$(command -v docker || true)
mkdir -p "$STATE" "$CACHE/docker"
if [ ${#SOCK} -ge 100 ]; then echo "socket path too long (${#SOCK}): $SOCK" >&2; exit 2; fi

answers() { [ -S "$SOCK" ] && DOCKER_HOST=unix://$SOCK timeout 5 "$DOCKER" version >/dev/null 2>&1; }
alive() { [ -e "/proc/$1" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }

exec 9>"$STATE/dockerd.start.lock"
flock -x 9                       # one starter at a time; the others find it answering
if answers; then echo "DOCKER_HOST=unix://$SOCK"; exit 0; fi
if ! command -v dockerd >/dev/null 2>&1 && [ ! -x /usr/sbin/dockerd ]; then
  echo "dockerd not found: apt-get install docker.io" >&2; exit 3
fi
if [ -f "$PIDFILE" ] && alive "$(cat "$PIDFILE")"; then
  # ours but not answering (still starting, or wedged): wait a little before giving up on it
  for _ in $(seq 1 100); do answers && { echo "DOCKER_HOST=unix://$SOCK"; exit 0; }; sleep 0.1; done
  echo "dockerd $(cat "$PIDFILE") runs but does not answer on $SOCK; see $STATE/dockerd.log" >&2
  exit 4
fi
rm -f "$SOCK" "$PIDFILE"
t0=$(date +%s.%N)
# setsid: the engine outlives the shell that started it and is not in its process group
cd "$STATE"
setsid /usr/sbin/dockerd \
  --host "unix://$SOCK" \
  --data-root "$CACHE/docker" \
  --exec-root "$STATE/exec" \
  --pidfile "$STATE/dockerd.own.pid" \
  --storage-driver "$DRIVER" \
  --iptables=false --ip6tables=false --ip-masq=false --bridge=none \
  </dev/null >"$STATE/dockerd.log" 2>&1 9>&- &
echo $! >"$PIDFILE"
if [ "${1:-}" = "--tests" ]; then touch "$STATE/dockerd.by-tests"; else rm -f "$STATE/dockerd.by-tests"; fi
for _ in $(seq 1 600); do
  if answers; then
    printf 'dockerd pid %s ready in %.1f s\n' "$(cat "$PIDFILE")" "$(echo "$(date +%s.%N) - $t0" | bc)" >&2
    echo "DOCKER_HOST=unix://$SOCK"
    exit 0
  fi
  if ! alive "$(cat "$PIDFILE")"; then
    echo "dockerd died; last lines of $STATE/dockerd.log:" >&2; tail -20 "$STATE/dockerd.log" >&2
    rm -f "$PIDFILE"; exit 1
  fi
  sleep 0.1
done
echo "dockerd did not answer within 60 s; see $STATE/dockerd.log" >&2
exit 1
