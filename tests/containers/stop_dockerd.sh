#!/bin/bash
# Stop the engine start_dockerd.sh started (by its PID file; an engine we did not start is left
# alone). With --if-unused, only when no test session holds a lease on it (a shared flock on
# $STATE/dockerd.users, which conftest.py holds for the session's lifetime).
set -u
STATE=${SABENCH_CT_STATE:-/tmp/sabench-ct}
HERE=$(cd "$(dirname "$0")" && pwd)
[ -f "$STATE/dockerd.pid" ] || exit 0
if [ "${1:-}" = "--if-unused" ]; then
  [ -f "$STATE/dockerd.by-tests" ] || exit 0   # started by hand (not by a test session): left alone
  exec 8>"$STATE/dockerd.users"
  flock -n -x 8 || { echo "dockerd still used by another session: left running" >&2; exit 0; }
fi
exec 9>"$STATE/dockerd.start.lock"
flock -x 9
rm -f "$STATE/dockerd.by-tests"
exec "$HERE/stop_pid.sh" "$STATE/dockerd.pid" 30
