#!/usr/bin/env bash
# Standard output that cannot be written (here /dev/full, as on a full disk):
# every command that prints its result exits with status 5 and says so, never
# 0 with the result lost.
# usage: stdout_full.sh TRAINSIM CONFIG CASES SWEEP WORKDIR
set -u
ts=$1 config=$2 cases=$3 sweep=$4 work=$5
rm -rf "$work"; mkdir -p "$work"
[ -w /dev/full ] || { echo "skipped: no /dev/full"; exit 0; }
failed=0
check() {
  "$@" > /dev/full 2> "$work/err.txt"
  status=$?
  if [ "$status" -ne 5 ] || ! grep -q "^error: cannot write to standard output" "$work/err.txt"; then
    echo "FAIL (status $status): $*"; cat "$work/err.txt"; failed=1
  else
    echo "ok: $*"
  fi
}
check "$ts" run "$config"
check "$ts" run "$config" --json
check "$ts" validate "$cases"
check "$ts" validate "$cases" --json
check "$ts" sweep "$sweep" -q
check "$ts" schedules
check "$ts" presets
exit $failed
