#!/usr/bin/env bash
# A sweep's files are byte-identical whatever -j; sharded runs merged give the
# same files as one run; the top K with pruning is the top K without.
# usage: sweep_files.sh TRAINSIM SWEEP WORKDIR
set -eu
ts=$1 sweep=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
"$ts" sweep "$sweep" -q -j 1 --csv "$work/j1.csv" --json "$work/j1.json" > "$work/j1.txt"
"$ts" sweep "$sweep" -q -j 3 --csv "$work/j3.csv" --json "$work/j3.json" > "$work/j3.txt"
cmp "$work/j1.csv" "$work/j3.csv"
cmp "$work/j1.json" "$work/j3.json"
diff <(grep -v "^csv \|^json " "$work/j1.txt") <(grep -v "^csv \|^json " "$work/j3.txt")
for k in 1 2 3; do "$ts" sweep "$sweep" -q -j 2 --shard "$k/3" --json "$work/shard$k.json" > /dev/null; done
"$ts" sweep-merge "$work/shard2.json" "$work/shard3.json" "$work/shard1.json" --csv "$work/merged.csv" \
  --json "$work/merged.json" > "$work/merged.txt"
cmp "$work/j1.csv" "$work/merged.csv"
cmp "$work/j1.json" "$work/merged.json"
# Pruned for the top 3: the same three plans, in the same order, and some pruned.
"$ts" sweep "$sweep" -q -j 2 --top 3 > "$work/top3.txt"
"$ts" sweep "$sweep" -q -j 2 --top 3 --no-prune > "$work/top3_all.txt"
diff <(head -4 "$work/top3.txt") <(head -4 "$work/top3_all.txt")
grep -Eq ", [1-9][0-9]* pruned," "$work/top3.txt"
grep -q ", 0 pruned," "$work/top3_all.txt"
echo "identical: $(wc -l < "$work/j1.csv") CSV lines whatever -j and merged from 3 shards; top 3 kept by pruning"
