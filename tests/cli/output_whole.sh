#!/usr/bin/env bash
# Output files are written whole or not at all: with the process's file size
# limit below what a trace or a CSV needs (ulimit -f, as a full disk fails a
# write), the command exits with status 5, the earlier trace is still there
# whole, and no empty or cut-short CSV is left.
# usage: output_whole.sh TRAINSIM CONFIG SWEEP WORKDIR
set -u
ts=$1 config=$2 sweep=$3 work=$4
rm -rf "$work"; mkdir -p "$work"
"$ts" run "$config" --trace "$work/trace.json" > /dev/null || { echo "first trace not written"; exit 1; }
cp "$work/trace.json" "$work/before.json"
(
  trap '' XFSZ    # past the limit a write fails (EFBIG) instead of ending the process
  ulimit -f 1     # 1 KiB: a trace or the CSV takes more
  "$ts" run "$config" --trace "$work/trace.json" > /dev/null 2> "$work/err_run.txt"
  echo $? > "$work/status_run.txt"
  "$ts" sweep "$sweep" -q --csv "$work/plans.csv" --json "$work/plans.json" > /dev/null 2> "$work/err_sweep.txt"
  echo $? > "$work/status_sweep.txt"
)
[ "$(cat "$work/status_run.txt")" = 5 ] || { echo "run: expected status 5, got $(cat "$work/status_run.txt")"; cat "$work/err_run.txt"; exit 1; }
grep -q "^error: cannot write trace to .*trace\.json: File too large$" "$work/err_run.txt" || { cat "$work/err_run.txt"; exit 1; }
cmp -s "$work/trace.json" "$work/before.json" || { echo "the earlier trace was changed"; exit 1; }
[ "$(cat "$work/status_sweep.txt")" = 5 ] || { echo "sweep: expected status 5, got $(cat "$work/status_sweep.txt")"; cat "$work/err_sweep.txt"; exit 1; }
[ ! -e "$work/plans.csv" ] || { echo "a cut-short CSV was left: $(wc -c < "$work/plans.csv") bytes"; exit 1; }
leftover=$(ls -A "$work" | grep -v -E '^(trace|before|plans)\.json$|^(err|status)_' || true)
[ -z "$leftover" ] || { echo "left behind: $leftover"; exit 1; }
echo "ok: status 5 for run and sweep; the earlier trace kept whole; no CSV left"
