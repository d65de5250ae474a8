#!/usr/bin/env bash
# A sharded sweep on a real Slurm cluster: starts a one-node cluster of its own
# (munged, slurmctld and slurmd, with their key, sockets, state and logs in a
# temporary folder and the controller and node on free ports), submits the
# sweep as 3 shards with tools/slurm/submit-sweep.sh, waits for the merge job,
# and checks that its merged JSON is byte-identical to one process's
# `trainsim sweep --json`. Every daemon it started is stopped on exit.
# Skipped (exit 77, saying why) where no cluster can be started: not root,
# Slurm or MUNGE not installed (tools/setup.sh --test installs them), or a
# daemon that does not come up.
# usage: slurm_sweep_test.sh TRAINSIM SWEEP.json [TIMEOUT_S]
set -u
[ $# -ge 2 ] || { echo "usage: slurm_sweep_test.sh TRAINSIM SWEEP.json [TIMEOUT_S]" >&2; exit 2; }
ts=$(realpath "$1") sweep=$(realpath "$2") timeout=${3:-120}
repo=$(cd "$(dirname "$0")/../.." && pwd)
shards=3
began=$SECONDS

skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAIL: $*"; show_state; exit 1; }

# A Slurm job or allocation around this test must not leak into its cluster.
for v in $(compgen -e | grep -E '^(SLURM|SBATCH|SALLOC|SRUN)_'); do unset "$v"; done

[ "$(id -u)" -eq 0 ] || skip "not root (slurmd must run as root to start jobs)"
for b in munged mungekey munge unmunge slurmctld slurmd sbatch squeue scontrol scancel sinfo; do
  command -v "$b" >/dev/null || skip "$b not found on PATH (bash tools/setup.sh --test installs slurm-wlm and munge)"
done
[ -x "$ts" ] || { echo "FAIL: trainsim binary $1 not found"; exit 1; }

# Under TMPDIR, not the build folder: a Unix socket's path is limited to 107
# bytes. munged wants every folder above its socket searchable by all.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/trainsim-slurm.XXXXXX") || skip "cannot make a temporary folder"
chmod 755 "$tmp"
mkdir -p "$tmp/munge" "$tmp/state" "$tmp/spool" "$tmp/log" "$tmp/sweep"
pids=() jobs_submitted=""

cleanup() {
  set +e
  if [ -n "${SLURM_CONF:-}" ]; then
    # Every job of this private cluster first, so that no slurmstepd outlives it.
    squeue -h -o %A 2>/dev/null | sort -u | xargs -r scancel 2>/dev/null
    for _ in $(seq 1 20); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.5; done
  fi
  local i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null; done
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    for _ in $(seq 1 20); do kill -0 "${pids[i]}" 2>/dev/null || break; sleep 0.25; done
    kill -9 "${pids[i]}" 2>/dev/null
    wait "${pids[i]}" 2>/dev/null
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

show_logs() {
  local f
  for f in "$tmp"/log/* "$tmp"/sweep/*.log; do
    [ -s "$f" ] || continue
    # A daemon's stderr repeats its log; it matters only when no log was written.
    case $f in *.out) [ -s "${f%.out}.log" ] && continue ;; esac
    echo "--- ${f#"$tmp"/} (last 40 lines)"
    tail -n 40 "$f"
  done
}
show_state() {
  echo "--- squeue"; squeue -a 2>&1
  echo "--- sinfo"; sinfo -N -l 2>&1
  [ -z "$jobs_submitted" ] || for j in $jobs_submitted; do echo "--- job $j"; scontrol show job "$j" 2>&1; done
  show_logs
}
# A daemon that does not come up is a reason to skip, with its log.
daemon_failed() {
  echo "SKIPPED: $1"
  show_logs
  exit 77
}

# A port nothing listens on, from a random start: another cluster on this
# machine (the default 6817/6818, or another run of this test) is left alone.
used_ports=""
free_port() {
  local p=$((20000 + RANDOM % 30000)) _
  for _ in $(seq 1 200); do
    p=$((p + 1))
    case " $used_ports " in *" $p "*) continue ;; esac
    if command -v ss >/dev/null; then
      ss -Htan "sport = :$p" 2>/dev/null | grep -q . && continue
    else
      (: <"/dev/tcp/127.0.0.1/$p") 2>/dev/null && continue
    fi
    used_ports+=" $p"; echo "$p"; return 0
  done
  return 1
}

# MUNGE, with a key and socket of its own.
mungekey --create --keyfile="$tmp/munge/munge.key" 2>"$tmp/log/mungekey.err" ||
  daemon_failed "mungekey could not create a key: $(cat "$tmp/log/mungekey.err")"
sock=$tmp/munge/munge.socket
munged --foreground --socket="$sock" --key-file="$tmp/munge/munge.key" --log-file="$tmp/log/munged.log" \
       --pid-file="$tmp/munge/munged.pid" --seed-file="$tmp/munge/munged.seed" >"$tmp/log/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 50); do [ -S "$sock" ] && break; kill -0 "${pids[0]}" 2>/dev/null || break; sleep 0.1; done
munge -S "$sock" -n 2>"$tmp/log/munge.err" | unmunge -S "$sock" >/dev/null 2>>"$tmp/log/munge.err" ||
  daemon_failed "munged did not start (no credential from $sock)"

# The cluster: this machine as its only node, as slurmd -C sees it.
node=$(hostname -s 2>/dev/null); node=${node:-localhost}
hw=$(slurmd -C 2>/dev/null | head -n 1)
cpus=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$hw")
hw=$(sed 's/^NodeName=[^ ]* //; s/ UpTime=.*//' <<<"$hw")
[ -n "$cpus" ] || daemon_failed "slurmd -C printed no CPU count: $hw"
ctld_port=$(free_port) && node_port=$(free_port) || daemon_failed "no free TCP port found for slurmctld and slurmd"
export SLURM_CONF=$tmp/slurm.conf
# No accounting, no cgroups (linuxproc tracks the jobs' processes), jobs
# sharing the node by CPU; batch_sched_delay=0 starts each job as soon as a
# CPU is free, not on the default 3 s pace, which doubled the test's time.
cat >"$SLURM_CONF" <<EOF
ClusterName=trainsimtest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$node_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SchedulerType=sched/builtin
SchedulerParameters=batch_sched_delay=0
PlugStackConfig=$tmp/plugstack.conf
NodeName=$node NodeAddr=127.0.0.1 $hw State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
: >"$tmp/plugstack.conf"

slurmctld -D -c >"$tmp/log/slurmctld.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  scontrol ping 2>/dev/null | grep -q "is UP" && break
  kill -0 "${pids[-1]}" 2>/dev/null || break
  sleep 0.2
done
scontrol ping 2>/dev/null | grep -q "is UP" || daemon_failed "slurmctld did not start (scontrol ping: $(scontrol ping 2>&1 | head -n 1))"
slurmd -D -N "$node" >"$tmp/log/slurmd.out" 2>&1 &
pids+=($!)
state=""
for _ in $(seq 1 150); do
  state=$(sinfo -h -n "$node" -o %T 2>/dev/null)
  [ "$state" = idle ] && break
  kill -0 "${pids[-1]}" 2>/dev/null || break
  sleep 0.2
done
[ "$state" = idle ] ||
  daemon_failed "slurmd did not bring node $node up (state \"$state\": $(scontrol show node "$node" 2>&1 | grep -o 'Reason=.*'))"
echo "cluster up in $((SECONDS - began)) s: node $node, $cpus CPUs, slurmctld port $ctld_port, slurmd port $node_port"

# The reference: one process, the same sweep file spelled the same way.
"$ts" sweep "$sweep" -q --json "$tmp/whole.json" >/dev/null || fail "trainsim sweep $sweep (one process): status $?"

cd "$tmp" || fail "cannot enter $tmp"
ids=$(TRAINSIM=$ts bash "$repo/tools/slurm/submit-sweep.sh" -n "$shards" "$sweep" "$tmp/sweep") ||
  fail "submit-sweep.sh: status $?"
read -r array merge <<<"$ids"
jobs_submitted="$array $merge"
[ -n "$merge" ] || fail "submit-sweep.sh printed \"$ids\", expected two job ids"

waited=$SECONDS merge_state=""
while [ $((SECONDS - waited)) -lt "$timeout" ]; do
  merge_state=$(scontrol show job "$merge" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
  case $merge_state in
    COMPLETED) break ;;
    FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE | PREEMPTED)
      fail "merge job $merge ended $merge_state" ;;
  esac
  sleep 0.5
done
[ "$merge_state" = COMPLETED ] || fail "merge job $merge not done after $timeout s (state ${merge_state:-unknown})"
for k in $(seq 1 "$shards"); do [ -s "$tmp/sweep/shard-$k.json" ] || fail "no shard-$k.json"; done
grep -q "rank  *plan" "$tmp/sweep/merge.log" || fail "merge.log holds no ranking"
cmp "$tmp/whole.json" "$tmp/sweep/merged.json" || fail "merged JSON differs from one process's"
echo "ok: $shards shards as Slurm array job $array, merged by job $merge after it (in $((SECONDS - waited)) s):" \
     "byte-identical to one process's JSON ($(wc -c <"$tmp/whole.json") bytes); $((SECONDS - began)) s in all"
