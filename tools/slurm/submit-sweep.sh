#!/usr/bin/env bash
# Submits a sharded trainsim sweep to Slurm: a job array of N shards
# (tools/slurm/sweep.sbatch), then a job that runs once every shard has
# succeeded (afterok) and merges them with `trainsim sweep-merge` into
# OUTDIR/merged.json, its ranking in OUTDIR/merge.log. A shard that fails
# cancels the merge job instead of leaving it pending.
# usage: tools/slurm/submit-sweep.sh [-n N] SWEEP.json OUTDIR [-- SBATCH_OPTIONS...]
#   -n N              shards (default 4)
#   SBATCH_OPTIONS    for the array only, e.g. --cpus-per-task=32 --time=01:00:00
#   TRAINSIM          the binary (default this checkout's build/trainsim, else trainsim on PATH)
# sbatch's own SBATCH_PARTITION, SBATCH_ACCOUNT, ... apply to both jobs.
# Prints "ARRAY_JOB_ID MERGE_JOB_ID" on stdout, what goes where on stderr.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
usage() {
  echo "usage: tools/slurm/submit-sweep.sh [-n N] SWEEP.json OUTDIR [-- SBATCH_OPTIONS...]" >&2
  [ -z "${1:-}" ] || echo "submit-sweep: $1" >&2
  exit 2
}
n=4
while [ $# -gt 0 ]; do
  case $1 in
    -n) [ $# -ge 2 ] || usage "-n needs a shard count"; n=$2; shift 2 ;;
    -h | --help) usage ;;
    -*) usage "unknown option $1" ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || usage "expected a sweep file and an output folder"
sweep=$1 out=$2
shift 2
if [ $# -gt 0 ]; then
  [ "$1" = -- ] || usage "unexpected argument $1 (sbatch options go after --)"
  shift
fi
case $n in '' | *[!0-9]* | 0) usage "-n $n: expected a shard count of 1 or more" ;; esac
[ -r "$sweep" ] && [ -f "$sweep" ] || usage "cannot read sweep file $sweep"
command -v sbatch >/dev/null || usage "sbatch not found on PATH"

ts=${TRAINSIM:-}
if [ -z "$ts" ]; then
  if [ -x "$here/../../build/trainsim" ]; then ts=$here/../../build/trainsim; else ts=$(command -v trainsim || true); fi
fi
[ -n "$ts" ] && [ -x "$ts" ] || usage "trainsim binary \"$ts\" not found (set TRAINSIM)"
# Absolute paths: the jobs may start elsewhere, and every shard then names
# the sweep file alike, as one run would in its JSON.
ts=$(realpath "$ts") sweep=$(realpath "$sweep")
mkdir -p "$out"
out=$(realpath "$out")
# Results of an earlier sweep in OUTDIR would be overwritten shard by shard,
# or merged with this one's: refused.
for f in "$out"/shard-*.json "$out/merged.json"; do
  [ ! -e "$f" ] || usage "$f exists: choose another folder or remove the earlier results"
done

export TRAINSIM=$ts
array=$(sbatch --parsable --array="1-$n" --output="$out/shard-%a.log" "$@" \
               "$here/sweep.sbatch" "$sweep" "$out" "$n") ||
  { echo "submit-sweep: sbatch refused the shards' array job (its message above)" >&2; exit 1; }
array=${array%%;*}
echo "submit-sweep: shards 1-$n of $sweep: array job $array, logs $out/shard-K.log" >&2

# The merge runs under /bin/sh: single-quote each path for it.
q() { printf "'%s'" "$(printf %s "$1" | sed "s/'/'\\\\''/g")"; }
merge="$(q "$ts") sweep-merge"
for k in $(seq 1 "$n"); do merge+=" $(q "$out/shard-$k.json")"; done
merge+=" --json $(q "$out/merged.json")"
if ! job=$(sbatch --parsable --job-name=trainsim-sweep-merge --ntasks=1 --dependency="afterok:$array" \
                  --kill-on-invalid-dep=yes --output="$out/merge.log" --wrap "$merge"); then
  echo "submit-sweep: the merge job was not submitted; once array job $array has finished, run: $merge" >&2
  exit 1
fi
job=${job%%;*}
echo "submit-sweep: merge: job $job, after every shard succeeded: $out/merged.json, ranking in $out/merge.log" >&2
echo "$array $job"
