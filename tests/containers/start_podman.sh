#!/bin/bash
# Start podman's Docker-compatible API service for sabench's tests (idempotent; PID file).
#
#   tests/containers/start_podman.sh [--tests]   prints PODMAN_HOST=unix://... once it answers
#
# Rootful podman with runc and explicit ulimits (tests/containers/podman/containers.conf), storage
# under $SABENCH_IMAGE_CACHE/podman (kept between sessions), socket and PID file under
# $SABENCH_CT_STATE (default /tmp/sabench-ct). Nothing is started if the service already answers.
# --tests: a test session starts it; the last session out stops it (stop_*.sh --if-unused);
# an engine started by hand is never stopped by the tests.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
STATE=${SABENCH_CT_STATE:-/tmp/sabench-ct}
CACHE=${SABENCH_IMAGE_CACHE:-/var/cache/sabench-images}
SOCK=$STATE/podman.sock
PIDFILE=$STATE/podman.pid
mkdir -p "$STATE/podman-run" "$CACHE/podman"
if [ ${#SOCK} -ge 100 ]; then echo "socket path too long: $SOCK" >&2; exit 2; fi
command -v podman >/dev/null 2>&1 || { echo "podman not found: apt-get install podman" >&2; exit 3; }
cat >"$STATE/podman-storage.conf" <<CONF
[storage]
driver = "overlay"
graphroot = "$CACHE/podman"
runroot = "$STATE/podman-run"
CONF
export CONTAINERS_CONF=$HERE/podman/containers.conf
export CONTAINERS_STORAGE_CONF=$STATE/podman-storage.conf

answers() {
  [ -S "$SOCK" ] && python3 - "$SOCK" <<'PY' 2>/dev/null
import socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])
s.sendall(b"GET /_ping HTTP/1.0\r\nHost: d\r\n\r\n"); r = s.recv(200)
sys.exit(0 if b" 200 " in r else 1)
PY
}
alive() { [ -e "/proc/$1" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }

exec 9>"$STATE/podman.start.lock"
flock -x 9
if answers; then echo "PODMAN_HOST=unix://$SOCK"; exit 0; fi
if [ -f "$PIDFILE" ] && alive "$(cat "$PIDFILE")"; then
  for _ in $(seq 1 100); do answers && { echo "PODMAN_HOST=unix://$SOCK"; exit 0; }; sleep 0.1; done
  echo "podman service $(cat "$PIDFILE") does not answer on $SOCK; see $STATE/podman.log" >&2
  exit 4
fi
rm -f "$SOCK" "$PIDFILE"
# from the state folder: conmon writes files (e.g. "oom") into the service's cwd
cd "$STATE"
setsid podman --log-level=warn system service --time=0 "unix://$SOCK" \
  </dev/null >"$STATE/podman.log" 2>&1 9>&- &
echo $! >"$PIDFILE"
if [ "${1:-}" = "--tests" ]; then touch "$STATE/podman.by-tests"; else rm -f "$STATE/podman.by-tests"; fi
for _ in $(seq 1 300); do
  if answers; then echo "PODMAN_HOST=unix://$SOCK"; exit 0; fi
  if ! alive "$(cat "$PIDFILE")"; then
    echo "podman service died:" >&2; tail -20 "$STATE/podman.log" >&2; rm -f "$PIDFILE"; exit 1
  fi
  sleep 0.1
done
echo "podman service did not answer within 30 s; see $STATE/podman.log" >&2
exit 1
