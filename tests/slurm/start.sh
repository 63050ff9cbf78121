#!/usr/bin/env bash
# Start a real single-node Slurm on this machine (Debian's slurm-wlm + munge; optionally MariaDB +
# slurmdbd for accounting; fake GPUs as GRES), without systemd. Used by tests/test_slurm.py and by
# hand (docs/hpc.md). Must run as root.
#
#   munged -> (mariadbd -> slurmdbd) -> slurmctld -> slurmd
#
# Idempotent: missing packages are installed, daemons already started from this state folder (live
# PID file) are left running. Everything lives in a private state folder: config (rendered from the
# *.in templates next to this script), PID files, logs, spool, database. /etc/slurm is never
# written but for /etc/slurm/slurm.conf, a link to the private config (removed by stop.sh).
# Every daemon this script starts gets $STATE/pids/<name>.pid; stop.sh stops those by PID only.
#
# Environment (all optional):
#   SABENCH_SLURM_STATE=/tmp/sabench-slurm   state folder
#   SABENCH_SLURM_ACCOUNTING=1     1: MariaDB + slurmdbd (sacct has the records); 0: none
#   SABENCH_SLURM_GPUS=1           fake GPUs on the node (0: no GRES)
#   SABENCH_SLURM_GPU_TYPE=fakegpu their type, what `gpu_model` names
#   SABENCH_SLURM_PARTITION=debug  the one (default) partition
#   SABENCH_SLURM_ACCOUNT=sabench  account root is associated with (accounting only)
#   SABENCH_SLURM_PORTS=6817       slurmctld port; slurmd +1, slurmdbd +2
#   SABENCH_SLURM_DB_PORT=33061    the private MariaDB, bound to 127.0.0.1
#   SABENCH_SLURM_STARTED=FILE     append the name of each daemon started by this call to FILE
#   SABENCH_SLURM_TIMEOUT=60       seconds to wait for the node to be idle
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
STATE=${SABENCH_SLURM_STATE:-/tmp/sabench-slurm}
ACCOUNTING=${SABENCH_SLURM_ACCOUNTING:-1}
GPUS=${SABENCH_SLURM_GPUS:-1}
GPU_TYPE=${SABENCH_SLURM_GPU_TYPE:-fakegpu}
PARTITION=${SABENCH_SLURM_PARTITION:-debug}
ACCOUNT=${SABENCH_SLURM_ACCOUNT:-sabench}
CTLD_PORT=${SABENCH_SLURM_PORTS:-6817}
SLURMD_PORT=$((CTLD_PORT + 1))
DBD_PORT=$((CTLD_PORT + 2))
DB_PORT=${SABENCH_SLURM_DB_PORT:-33061}
STARTED_FILE=${SABENCH_SLURM_STARTED:-}
WAIT_S=${SABENCH_SLURM_TIMEOUT:-60}
CLUSTER=sabench
DB_PASS=sabench-local-only # the test database listens on 127.0.0.1 only
MARK="managed by sabench tests/slurm/start.sh"
ETC="$STATE/etc"
export SLURM_CONF="$ETC/slurm.conf"

T0=$(date +%s%N)
log() {
	local ms=$((($(date +%s%N) - T0) / 1000000))
	printf '[sabench-slurm %3d.%03ds] %s\n' $((ms / 1000)) $((ms % 1000)) "$*" >&2
}
die() {
	log "ERROR: $*"
	exit 1
}
[ "$(id -u)" = 0 ] || die "must run as root (the daemons run as root and munge)"
case "$STATE" in /*) ;; *) die "SABENCH_SLURM_STATE must be an absolute path" ;; esac

# ------------------------------------------------------------------ packages
PKGS=(munge slurm-client slurmctld slurmd)
[ "$ACCOUNTING" = 1 ] && PKGS+=(slurmdbd mariadb-server)
missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	log "installing: ${missing[*]}"
	# Keep the packages' maintainer scripts from starting daemons with their default configs.
	own_policy=0
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		own_policy=1
	fi
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >"/tmp/sabench-slurm-apt.log" 2>&1; then
		apt-get update -qq >/dev/null 2>&1 || true
		apt-get install -y -qq --no-install-recommends "${missing[@]}" >"/tmp/sabench-slurm-apt.log" 2>&1 ||
			{
				[ "$own_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
				die "apt-get install ${missing[*]} failed, see /tmp/sabench-slurm-apt.log"
			}
	fi
	[ "$own_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
	log "installed"
fi

# ------------------------------------------------------------------ helpers
mkdir -p "$STATE"/{pids,log,ctld,spool,run} "$ETC"
chmod 755 "$STATE"
pid_alive() { # $1 = name: our recorded PID is alive
	local f="$STATE/pids/$1.pid"
	[ -s "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null
}
record_pid() { # $1 = name, $2 = the daemon's own PID file
	local i
	for i in $(seq 1 100); do
		[ -s "$2" ] && break
		sleep 0.1
	done
	[ -s "$2" ] || die "$1 did not write $2 (see $STATE/log/)"
	cp "$2" "$STATE/pids/$1.pid"
	[ -n "$STARTED_FILE" ] && echo "$1" >>"$STARTED_FILE"
	log "$1 started (pid $(cat "$STATE/pids/$1.pid"))"
}
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
render() { # template -> file, @VAR@ replaced by the variables below
	sed -e "s|@MARK@|$MARK|g" -e "s|@STATE@|$STATE|g" -e "s|@CLUSTER@|$CLUSTER|g" \
		-e "s|@NODE@|$NODE|g" -e "s|@CPUS@|$CPUS|g" -e "s|@SOCKETS@|$SOCKETS|g" \
		-e "s|@CORES@|$CORES|g" -e "s|@THREADS@|$THREADS|g" -e "s|@REALMEM@|$REALMEM|g" \
		-e "s|@PARTITION@|$PARTITION|g" -e "s|@CTLD_PORT@|$CTLD_PORT|g" \
		-e "s|@SLURMD_PORT@|$SLURMD_PORT|g" -e "s|@DBD_PORT@|$DBD_PORT|g" \
		-e "s|@DB_PORT@|$DB_PORT|g" -e "s|@DB_PASS@|$DB_PASS|g" -e "s|@GPU_TYPE@|$GPU_TYPE|g" \
		-e "s|@GRES_TYPES@|$GRES_TYPES|g" -e "s|@GRES_NODE@|$GRES_NODE|g" \
		-e "s|@ACCOUNTING@|$ACCOUNTING_CONF|g" "$1" >"$2"
}

# ------------------------------------------------------------------ config
NODE=$(hostname -s)
read -r CPUS SOCKETS CORES THREADS MEM < <(slurmd -C | awk '/^NodeName/{
  for(i=1;i<=NF;i++){split($i,a,"="); v[a[1]]=a[2]}
  print v["CPUs"], v["SocketsPerBoard"], v["CoresPerSocket"], v["ThreadsPerCore"], v["RealMemory"]}')
REALMEM=$((MEM * 90 / 100)) # configured above the real memory, the node would drain
GRES_TYPES="" GRES_NODE=""
if [ "$GPUS" -gt 0 ]; then
	GRES_TYPES="GresTypes=gpu"
	GRES_NODE="Gres=gpu:$GPU_TYPE:$GPUS"
fi
if [ "$ACCOUNTING" = 1 ]; then
	# \n: sed turns it into line breaks in the rendered file
	ACCOUNTING_CONF="AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageHost=localhost\nAccountingStoragePort=$DBD_PORT\nAccountingStorageTRES=gres/gpu\nAccountingStoreFlags=job_comment\nJobAcctGatherType=jobacct_gather/linux\nJobAcctGatherFrequency=30"
else
	# (AccountingStorageTRES=gres/gpu would need slurmdbd: slurmctld refuses to start)
	ACCOUNTING_CONF="AccountingStorageType=accounting_storage/none\nJobAcctGatherType=jobacct_gather/none"
fi
render "$HERE/slurm.conf.in" "$ETC/slurm.conf"
render "$HERE/gres.conf.in" "$ETC/gres.conf"
for i in $(seq 1 "$GPUS"); do
	echo "NodeName=$NODE Name=gpu Type=$GPU_TYPE File=/dev/null" >>"$ETC/gres.conf"
done
if [ "$ACCOUNTING" = 1 ]; then
	render "$HERE/slurmdbd.conf.in" "$ETC/slurmdbd.conf"
	chmod 600 "$ETC/slurmdbd.conf"
else
	rm -f "$ETC/slurmdbd.conf"
fi
# Clients read /etc/slurm/slurm.conf: SLURM_CONF alone is not enough, because the slurm executor's
# job step drops every SLURM_* variable before its srun. The link goes where no foreign config is.
if [ -e /etc/slurm/slurm.conf ]; then # (a dangling link is replaced)
	if [ "$(readlink /etc/slurm/slurm.conf)" != "$ETC/slurm.conf" ] && ! grep -q "$MARK" /etc/slurm/slurm.conf 2>/dev/null; then
		die "/etc/slurm/slurm.conf belongs to another cluster; not replacing it"
	fi
fi
mkdir -p /etc/slurm
ln -sfn "$ETC/slurm.conf" /etc/slurm/slurm.conf
log "config in $ETC (node $NODE, CPUs=$CPUS, RealMemory=$REALMEM, gpus=$GPUS:$GPU_TYPE, accounting=$ACCOUNTING)"

# ------------------------------------------------------------------ munge
if pid_alive munged; then
	log "munged already running (ours)"
elif munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
	log "munged already answers on the default socket (not ours: left alone)"
else
	[ -s /etc/munge/munge.key ] || mungekey --create --keyfile=/etc/munge/munge.key
	chown munge:munge /etc/munge/munge.key
	chmod 600 /etc/munge/munge.key
	install -d -o munge -g munge -m 755 /run/munge
	install -d -o munge -g munge -m 700 /var/log/munge /var/lib/munge
	rm -f /run/munge/munged.pid
	runuser -u munge -- /usr/sbin/munged
	record_pid munged /run/munge/munged.pid
	munge -n </dev/null | unmunge >/dev/null || die "munge self-test failed"
fi

# ------------------------------------------------------------------ accounting
if [ "$ACCOUNTING" = 1 ]; then
	DB="$STATE/mysql"
	SOCK="$STATE/mysqlrun/mysqld.sock"
	install -d -o mysql -g mysql -m 755 "$STATE/mysqlrun"
	if pid_alive mariadbd; then
		log "mariadbd already running (ours)"
	else
		port_busy "$DB_PORT" && die "port $DB_PORT is taken; set SABENCH_SLURM_DB_PORT"
		if [ ! -d "$DB/mysql" ]; then
			install -d -o mysql -g mysql -m 750 "$DB"
			mariadb-install-db --no-defaults --user=mysql --datadir="$DB" \
				--auth-root-authentication-method=socket --skip-test-db \
				--innodb-log-file-size=16M >"$STATE/log/mariadb-install.log" 2>&1 ||
				die "mariadb-install-db failed, see $STATE/log/mariadb-install.log"
		fi
		rm -f "$STATE/mysqlrun/mysqld.pid"
		setsid mariadbd --no-defaults --user=mysql --datadir="$DB" \
			--socket="$SOCK" --pid-file="$STATE/mysqlrun/mysqld.pid" \
			--bind-address=127.0.0.1 --port="$DB_PORT" --skip-name-resolve \
			--log-error="$STATE/log/mariadb.err" --innodb-buffer-pool-size=64M \
			--innodb-log-file-size=16M --innodb-lock-wait-timeout=900 \
			</dev/null >/dev/null 2>&1 &
		for i in $(seq 1 150); do
			mariadb-admin --socket="$SOCK" ping >/dev/null 2>&1 && break
			sleep 0.2
		done
		mariadb-admin --socket="$SOCK" ping >/dev/null 2>&1 || die "mariadbd did not start, see $STATE/log/mariadb.err"
		record_pid mariadbd "$STATE/mysqlrun/mysqld.pid"
	fi
	mariadb --socket="$SOCK" -e "
    CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
    CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
    FLUSH PRIVILEGES;"
	if pid_alive slurmdbd; then
		log "slurmdbd already running (ours)"
	else
		port_busy "$DBD_PORT" && die "port $DBD_PORT is taken (another slurmdbd?); set SABENCH_SLURM_PORTS"
		rm -f "$STATE/run/slurmdbd.pid"
		/usr/sbin/slurmdbd
		record_pid slurmdbd "$STATE/run/slurmdbd.pid"
		for i in $(seq 1 100); do
			sacctmgr -n -P show cluster >/dev/null 2>&1 && break
			sleep 0.2
		done
		sacctmgr -n -P show cluster >/dev/null 2>&1 || die "slurmdbd does not answer, see $STATE/log/slurmdbd.log"
	fi
	sacctmgr -n -P show cluster format=cluster | grep -qx "$CLUSTER" ||
		sacctmgr -i add cluster "$CLUSTER" >/dev/null
	sacctmgr -n -P show account format=account | grep -qx "$ACCOUNT" ||
		sacctmgr -i add account "$ACCOUNT" Description=sabench-tests Organization=local >/dev/null
	sacctmgr -n -P show assoc user=root account="$ACCOUNT" format=user | grep -qx root ||
		sacctmgr -i add user root Account="$ACCOUNT" DefaultAccount="$ACCOUNT" >/dev/null
	log "accounting ready (cluster $CLUSTER, account $ACCOUNT for root)"
fi

# ------------------------------------------------------------------ slurmctld, slurmd
if pid_alive slurmctld; then
	log "slurmctld already running (ours): reconfigure"
	scontrol reconfigure || true
else
	port_busy "$CTLD_PORT" && die "port $CTLD_PORT is taken (another slurmctld?); set SABENCH_SLURM_PORTS"
	rm -f "$STATE/run/slurmctld.pid"
	/usr/sbin/slurmctld
	record_pid slurmctld "$STATE/run/slurmctld.pid"
fi
if pid_alive slurmd; then
	log "slurmd already running (ours)"
else
	port_busy "$SLURMD_PORT" && die "port $SLURMD_PORT is taken (another slurmd?); set SABENCH_SLURM_PORTS"
	rm -f "$STATE/run/slurmd.pid"
	/usr/sbin/slurmd
	record_pid slurmd "$STATE/run/slurmd.pid"
fi

# ------------------------------------------------------------------ wait for the node
st=""
deadline=$(($(date +%s) + WAIT_S))
while [ "$(date +%s)" -lt "$deadline" ]; do
	for d in slurmctld slurmd; do
		pid_alive "$d" || die "$d exited: $(tail -n 3 "$STATE/log/$d.log" 2>/dev/null | tr '\n' ' ')"
	done
	st=$(timeout 10 sinfo -h -n "$NODE" -o %t 2>/dev/null || true)
	case "$st" in
	idle | mix | alloc) break ;;
	drain* | down*) timeout 10 scontrol update nodename="$NODE" state=resume 2>/dev/null || true ;;
	esac
	sleep 0.2
done
case "$st" in idle | mix | alloc) ;; *) die "node $NODE is '$st' after ${WAIT_S}s; see $STATE/log/" ;; esac
log "cluster up: node $NODE is $st, partition $PARTITION, gres $(sinfo -h -o %G)"
log "stop with: SABENCH_SLURM_STATE=$STATE $HERE/stop.sh"
echo "export SLURM_CONF=$SLURM_CONF"
