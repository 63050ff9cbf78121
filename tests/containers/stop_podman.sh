#!/bin/bash
# Stop the podman service start_podman.sh started (by its PID file); --if-unused: only when no
# test session holds a lease on it (a shared flock on $STATE/podman.users).
set -u
STATE=${SABENCH_CT_STATE:-/tmp/sabench-ct}
HERE=$(cd "$(dirname "$0")" && pwd)
[ -f "$STATE/podman.pid" ] || exit 0
if [ "${1:-}" = "--if-unused" ]; then
  [ -f "$STATE/podman.by-tests" ] || exit 0   # started by hand (not by a test session): left alone
  exec 8>"$STATE/podman.users"
  flock -n -x 8 || { echo "podman service still used by another session: left running" >&2; exit 0; }
fi
exec 9>"$STATE/podman.start.lock"
flock -x 9
rm -f "$STATE/podman.by-tests"
exec "$HERE/stop_pid.sh" "$STATE/podman.pid" 30
