#!/usr/bin/env bash
# Install Debian's Slurm (slurm-wlm, munge) and run a one-node cluster on this machine: munged,
# slurmctld and slurmd, one partition holding this node with its real CPU count and memory.
# Idempotent: a second call only checks that the node answers (and rewrites the config, restarting
# the daemons, only if this machine's shape changed). Needs root (CI machines run as root).
#
# Accounting: no slurmdbd (a database server is a lot for CI); job completions go to a text file
# (JobCompType=jobcomp/filetxt), which `sacct --completion` reads.
set -euo pipefail

WAIT_S="${SLURM_WAIT_S:-60}"
PARTITION="${SLURM_PARTITION:-debug}"
CONF=/etc/slurm/slurm.conf
LOGS=/var/log/slurm
MARK="# written by .ci/install-slurm.sh"

need_install=()
for tool in slurmctld slurmd sbatch munged; do
    command -v "$tool" >/dev/null 2>&1 || { need_install=(slurm-wlm munge); break; }
done
if ((${#need_install[@]})); then
    echo "install-slurm: apt-get install ${need_install[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need_install[@]}" >/dev/null
fi

# munge: every Slurm message is signed with its key (the package made one).
install -d -o munge -g munge -m 0755 /run/munge
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    echo "install-slurm: starting munged"
    runuser -u munge -- /usr/sbin/munged
    for _ in $(seq 10); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.5; done
    munge -n | unmunge >/dev/null
fi

# The node as slurmd sees it (CPUs, sockets, cores, threads, memory), minus the uptime.
host=$(hostname -s)
node=$(slurmd -C | head -n 1)
[[ $node == NodeName=* ]] || { echo "install-slurm: slurmd -C said: $node" >&2; exit 1; }

config=$(cat <<EOF
$MARK
ClusterName=harness
SlurmctldHost=$host(127.0.0.1)
SlurmUser=slurm
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
# No cgroups (containers often cannot mount them): processes are tracked by their parent ids.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
# CPUs are the consumable: each task asks for its CPUs, and tasks share the node up to its count.
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
ReturnToService=2
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$LOGS/jobcomp.log
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=$PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
)

install -d -o slurm -g slurm /var/spool/slurmctld "$LOGS"
install -d /var/spool/slurmd
touch "$LOGS/jobcomp.log" && chown slurm:slurm "$LOGS/jobcomp.log"

stop_daemon() {  # $1: pid file
    [[ -f $1 ]] || return 0
    local pid; pid=$(cat "$1")
    kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.5; done
}

if [[ -f $CONF ]] && ! grep -qxF "$MARK" "$CONF"; then
    echo "install-slurm: $CONF was not written by this script; using it as it is"
elif [[ ! -f $CONF ]] || [[ $(cat "$CONF") != "$config" ]]; then
    echo "install-slurm: writing $CONF ($node)"
    printf '%s\n' "$config" >"$CONF"
    stop_daemon /run/slurmd.pid
    stop_daemon /run/slurmctld.pid
fi

node_state() { sinfo --noheader --nodes="$host" --format=%T 2>/dev/null | head -n 1; }

if ! scontrol ping 2>/dev/null | grep -q UP; then
    echo "install-slurm: starting slurmctld (log $LOGS/slurmctld.log)"
    slurmctld
fi
if ! { [[ -f /run/slurmd.pid ]] && kill -0 "$(cat /run/slurmd.pid)" 2>/dev/null; }; then
    echo "install-slurm: starting slurmd (log $LOGS/slurmd.log)"
    slurmd
fi

for _ in $(seq "$WAIT_S"); do
    state=$(node_state)
    case $state in
        idle|mixed|allocated) echo "install-slurm: node $host is $state (partition $PARTITION)"; exit 0 ;;
        down*|drain*) scontrol update NodeName="$host" State=RESUME 2>/dev/null || true ;;
    esac
    sleep 1
done
echo "install-slurm: node $host not idle within ${WAIT_S}s (state: ${state:-none}); last log lines:" >&2
tail -n 10 "$LOGS/slurmctld.log" "$LOGS/slurmd.log" >&2 || true
exit 1
