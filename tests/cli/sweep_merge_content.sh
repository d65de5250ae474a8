#!/usr/bin/env bash
# sweep-merge knows a sweep by its content: shards run with the sweep file's
# path spelled three ways (relative, ./relative, absolute) merge into what one
# run writes; shards of one path whose content changed between them (global
# batch 64, then 128) are refused with status 2, naming both files.
# usage: sweep_merge_content.sh TRAINSIM WORKDIR
set -u
ts=$1 work=$2
rm -rf "$work"; mkdir -p "$work/sub"
fail() { echo "FAIL: $*"; exit 1; }
sweep() {
  printf '{"model": "gpt-1.7b", "cluster": {"node": "dgx-a100", "nodes": 1}, "global_batch": %s,
           "axes": {"tp": [2, 4], "pp": [1, 2], "microbatch_size": [1, 2]}}\n' "$1" > "$work/sub/s.json"
}
sweep 64
"$ts" sweep "$work/sub/s.json" -q --json "$work/whole.json" > /dev/null || fail "whole run"
(cd "$work" && "$ts" sweep sub/s.json -q --shard 1/3 --json shard1.json > /dev/null) || fail "shard 1"
(cd "$work" && "$ts" sweep ./sub/s.json -q --shard 2/3 --json shard2.json > /dev/null) || fail "shard 2"
"$ts" sweep "$work/sub/s.json" -q --shard 3/3 --json "$work/shard3.json" > /dev/null || fail "shard 3"
"$ts" sweep-merge "$work/shard3.json" "$work/shard2.json" "$work/shard1.json" --json "$work/merged.json" > /dev/null ||
  fail "merging the three spellings: status $?"
# The merged file names the sweep as the first file given did; the rest is the whole run's.
diff <(grep -v '"sweep":' "$work/whole.json") <(grep -v '"sweep":' "$work/merged.json") || fail "merged differs"
# Shard 2 again after the file changed: the same path, another sweep.
sweep 128
"$ts" sweep "$work/sub/s.json" -q --shard 2/3 --json "$work/shard2_128.json" > /dev/null || fail "shard 2 at 128"
err=$("$ts" sweep-merge "$work/shard1.json" "$work/shard2_128.json" "$work/shard3.json" 2>&1 >/dev/null); status=$?
[ $status -eq 2 ] || fail "changed content merged: status $status"
grep -Eq "^error: .*shard2_128\.json: sweep_hash: [0-9a-f]{16} \(sweep file \".*sub/s\.json\"\) differs from .*shard1\.json's [0-9a-f]{16} \(sweep file \"sub/s\.json\"\): the shards come from sweep files whose model, cluster, global_batch, options or axes differ$" <<< "$err" ||
  fail "message: $err"
echo "ok: three spellings of one sweep merge; a changed sweep file is refused"
