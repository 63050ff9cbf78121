#!/usr/bin/env bash
# Stop the daemons that tests/slurm/start.sh started, by the PIDs it recorded in
# $SABENCH_SLURM_STATE/pids/ (never by name). With arguments, only those daemons
# (e.g. `stop.sh slurmd slurmctld`); without, every recorded one.
# Order: our cluster's jobs, slurmd, slurmctld, slurmdbd, mariadbd, munged.
# SABENCH_SLURM_PURGE=1 also deletes the state folder (config, database, spool, logs).
# Idempotent: a daemon that is not running any more is only forgotten.
set -uo pipefail

STATE=${SABENCH_SLURM_STATE:-/tmp/sabench-slurm}
PIDDIR="$STATE/pids"
export SLURM_CONF="$STATE/etc/slurm.conf"
[ -d "$PIDDIR" ] || {
	echo "nothing to stop: no $PIDDIR"
	exit 0
}
ORDER=(slurmd slurmctld slurmdbd mariadbd munged)
if [ $# -gt 0 ]; then WANTED=" $* "; else WANTED=" ${ORDER[*]} "; fi

alive() { [ -s "$PIDDIR/$1.pid" ] && kill -0 "$(cat "$PIDDIR/$1.pid")" 2>/dev/null; }

# Jobs left on our cluster would leave slurmstepd and job processes behind.
if [[ "$WANTED" == *" slurmd "* ]] && alive slurmctld && [ -f "$SLURM_CONF" ]; then
	ids=$(squeue -h -o %i 2>/dev/null | tr '\n' ' ')
	if [ -n "${ids// /}" ]; then
		echo "cancelling jobs: $ids"
		# shellcheck disable=SC2086
		scancel $ids 2>/dev/null
		for _ in $(seq 1 50); do
			[ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
			sleep 0.2
		done
	fi
fi

stop_one() {
	local name=$1 f="$PIDDIR/$1.pid" pid exe
	[ -s "$f" ] || return 0
	pid=$(cat "$f")
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "$name (pid $pid) is not running"
		rm -f "$f"
		return 0
	fi
	# PID reuse guard: only signal the program we started.
	exe=$(basename "$(readlink "/proc/$pid/exe" 2>/dev/null)" 2>/dev/null)
	case "$exe" in
	"$name"*) ;;
	*)
		echo "pid $pid is '$exe', not $name: left alone"
		rm -f "$f"
		return 0
		;;
	esac
	kill -TERM "$pid"
	for _ in $(seq 1 150); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "$name (pid $pid) ignored TERM for 30 s: KILL"
		kill -KILL "$pid"
	fi
	echo "stopped $name (pid $pid)"
	rm -f "$f"
}
for d in "${ORDER[@]}"; do
	[[ "$WANTED" == *" $d "* ]] && stop_one "$d"
done
# The link start.sh made, once our slurmctld is gone.
if [ ! -s "$PIDDIR/slurmctld.pid" ] && [ "$(readlink /etc/slurm/slurm.conf 2>/dev/null)" = "$STATE/etc/slurm.conf" ]; then
	rm -f /etc/slurm/slurm.conf
	echo "removed the link /etc/slurm/slurm.conf"
fi

if [ "${SABENCH_SLURM_PURGE:-0}" = 1 ]; then
	if ls "$PIDDIR"/*.pid >/dev/null 2>&1; then
		echo "not purging $STATE: daemons still recorded in $PIDDIR"
	else
		rm -rf "$STATE"
		echo "removed $STATE"
	fi
fi
exit 0
