#!/bin/bash
# stop_pid.sh PIDFILE [TIMEOUT_S]: SIGTERM the process named in PIDFILE, wait for it (a zombie
# counts as gone), SIGKILL after TIMEOUT_S; remove the PID file. Only ever the one PID in the file.
set -u
F=$1; T=${2:-30}
P=$(cat "$F" 2>/dev/null) || { echo "no pid file $F" >&2; exit 0; }
alive() { [ -e "/proc/$1" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
if ! alive "$P"; then rm -f "$F"; exit 0; fi
kill -TERM "$P"
for _ in $(seq 1 $((T * 10))); do
  alive "$P" || { rm -f "$F"; echo "stopped pid $P" >&2; exit 0; }
  sleep 0.1
done
echo "pid $P still alive after ${T}s: SIGKILL" >&2
kill -KILL "$P"; rm -f "$F"
