#!/usr/bin/env bash
# A real one-node Slurm cluster on this machine, for the Slurm launcher's tests (docs/launchers.md):
#   scripts/slurm_local.sh up      start munged, slurmctld and slurmd (idempotent)
#   scripts/slurm_local.sh down    stop them
#   scripts/slurm_local.sh status  say whether the cluster answers (exit 0) or not (exit 1)
# Needs root and Debian's packages: apt-get install -y slurmctld slurmd munge slurm-client.
# No systemd and no cgroups: proctrack/linuxproc, task/none, no accounting (sacct does not work;
# scontrol and squeue do). One node named after this host, with all its CPUs, partition `debug`.
set -euo pipefail

CONF_DIR=/etc/slurm
CONF="$CONF_DIR/slurm.conf"
STATE=/var/lib/slurm-llmprof
LOGS=/var/log/slurm-llmprof
MARK="# written by llmprof scripts/slurm_local.sh"

die() {
  echo "slurm_local.sh: $*" >&2
  exit 1
}

need_tools() {
  local missing=()
  for t in munged slurmctld slurmd sinfo sbatch scontrol; do
    command -v "$t" >/dev/null 2>&1 || missing+=("$t")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    die "missing ${missing[*]}
  fix: apt-get install -y slurmctld slurmd munge slurm-client   (Debian/Ubuntu, as root)"
  fi
  [ "$(id -u)" = 0 ] || die "must run as root (it starts munged, slurmctld and slurmd)
  fix: sudo scripts/slurm_local.sh $1"
}

running() { pgrep -x "$1" >/dev/null 2>&1; }

answers() { timeout 10 sinfo -h -o '%t' 2>/dev/null | grep -qE '^(idle|mix|alloc|comp)'; }

write_conf() {
  local host cpus mem_mb
  host=$(hostname -s)
  cpus=$(nproc)
  mem_mb=$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
  if [ -f "$CONF" ] && ! grep -qF "$MARK" "$CONF"; then
    die "$CONF exists and was not written by this script: refusing to replace a real cluster's config
  fix: use that cluster as it is (the launcher only needs sbatch/squeue/scontrol), or move the file away"
  fi
  mkdir -p "$CONF_DIR" "$STATE/ctld" "$STATE/d" "$LOGS"
  cat >"$CONF" <<EOF
$MARK
ClusterName=llmprof
SlurmctldHost=$host
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$LOGS/jobcomp.txt
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
MinJobAge=300
KillWait=10
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$host CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
}

up() {
  need_tools up
  if running slurmctld && running slurmd && answers; then
    echo "slurm_local.sh: already up"
    sinfo
    return 0
  fi
  write_conf
  if ! running munged; then
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge 2>/dev/null || true
    [ -f /etc/munge/munge.key ] || mungekey --create 2>/dev/null || die "no /etc/munge/munge.key and mungekey could not make one
  fix: apt-get install --reinstall munge"
    # Run as the munge user when it exists (munged refuses some root setups), else --force.
    if id munge >/dev/null 2>&1; then
      su -s /bin/sh munge -c munged || munged --force || die "munged did not start (see /var/log/munge/munged.log)"
    else
      munged --force || die "munged did not start (see /var/log/munge/munged.log)"
    fi
  fi
  running slurmctld || slurmctld -i || die "slurmctld did not start (see $LOGS/slurmctld.log)"
  running slurmd || slurmd || die "slurmd did not start (see $LOGS/slurmd.log)"
  for _ in $(seq 1 30); do
    if answers; then
      echo "slurm_local.sh: up"
      sinfo
      return 0
    fi
    # A node that was down before (a previous `down`) comes back on its own with
    # ReturnToService=2; nudge it in case.
    scontrol update nodename="$(hostname -s)" state=resume >/dev/null 2>&1 || true
    sleep 1
  done
  die "the cluster did not answer within 30 s
  see: $LOGS/slurmctld.log and $LOGS/slurmd.log; sinfo says: $(sinfo 2>&1 | tail -n 3)"
}

down() {
  # Stop each daemon by the pid it recorded (never by name: other programs may share it).
  local any=0 pid
  for f in "$STATE/slurmd.pid" "$STATE/slurmctld.pid" /run/munge/munged.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      any=1
      kill "$pid" || true
      for _ in $(seq 1 20); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
      done
    fi
  done
  if [ "$any" = 0 ]; then echo "slurm_local.sh: already down"; else echo "slurm_local.sh: down"; fi
}

status() {
  if command -v sinfo >/dev/null 2>&1 && answers; then
    echo "slurm_local.sh: up"
    sinfo
    return 0
  fi
  local which=""
  for d in munged slurmctld slurmd; do running "$d" && which="$which $d"; done
  echo "slurm_local.sh: down (running:${which:- nothing})"
  return 1
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *)
    echo "usage: scripts/slurm_local.sh up|down|status" >&2
    exit 2
    ;;
esac
