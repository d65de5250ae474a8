#!/usr/bin/env bash
# The regression gate: a sweep against its own output passes; against a
# baseline whose best ran 10% faster it fails (status 8) beyond 2% but not
# within 15%; against a baseline whose best plan is no longer valid it fails.
# usage: sweep_baseline.sh TRAINSIM SWEEP WORKDIR
set -u
ts=$1 sweep=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
"$ts" sweep "$sweep" -q --json "$work/base.json" > /dev/null || fail "first run"
out=$("$ts" sweep "$sweep" -q --baseline "$work/base.json") || fail "same sweep as its own baseline: $?"
grep -q "baseline: best iteration time .* +0.00%, within the tolerance of 2%" <<< "$out" || fail "message: $out"
# The baseline's best 10% faster: iteration_time_s of the first result / 1.1.
python3 - "$work/base.json" "$work/fast.json" "$work/gone.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["results"][0]["iteration_time_s"] /= 1.1
json.dump(doc, open(sys.argv[2], "w"))
doc["results"][0]["plan"] = "tp=3 pp=1 dp=1 vp=1 mbs=1 1f1b zero=0 sp=off rc=none"
json.dump(doc, open(sys.argv[3], "w"))
PY
err=$("$ts" sweep "$sweep" -q --baseline "$work/fast.json" 2>&1 >/dev/null); status=$?
[ $status -eq 8 ] || fail "10% slower: status $status"
grep -Eq "^error: regression against the baseline: best iteration time .* \+10\.00%, worse than the tolerance of 2%$" <<< "$err" ||
  fail "message: $err"
"$ts" sweep "$sweep" -q --baseline "$work/fast.json" --tolerance 15% > /dev/null || fail "within 15%: $?"
err=$("$ts" sweep "$sweep" -q --baseline "$work/gone.json" 2>&1 >/dev/null); status=$?
[ $status -eq 8 ] || fail "best plan gone: status $status"
grep -q "the baseline's best plan (tp=3 pp=1 dp=1 vp=1 mbs=1 1f1b zero=0 sp=off rc=none) is no longer a valid plan" <<< "$err" ||
  fail "message: $err"
echo "ok: gate passes on itself and within tolerance, fails on +10% and on a vanished best plan"
