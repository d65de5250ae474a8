#!/usr/bin/env bash
# Ctrl-C during a long sweep: it stops starting plans, still ranks and writes
# the plans finished so far, marks the rest not run, and exits with 130.
# usage: sweep_interrupt.sh TRAINSIM SWEEP WORKDIR
set -u
ts=$1 sweep=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
"$ts" sweep "$sweep" -q -j 2 --json "$work/part.json" --csv "$work/part.csv" > "$work/out.txt" 2> "$work/err.txt" &
pid=$!
sleep 2
kill -INT "$pid"
wait "$pid"
status=$?
[ "$status" -eq 130 ] || { echo "expected status 130, got $status"; cat "$work/err.txt"; exit 1; }
grep -q '"interrupted": true' "$work/part.json" || { echo "not marked interrupted"; exit 1; }
grep -Eq '"status": "(ok|oom)"' "$work/part.json" || { echo "no finished plan written"; exit 1; }
grep -q ',not-run,' "$work/part.csv" || { echo "no plan left not run"; exit 1; }
grep -q "^interrupted: ranking the [0-9]* plans finished" "$work/err.txt" || { echo "no message"; exit 1; }
echo "ok: $(grep -Ec ',(ok|oom),' "$work/part.csv") plans finished and written, status 130"
