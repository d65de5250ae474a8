#!/usr/bin/env bash
# Runs the same config twice and checks that the JSON summary (all but the
# wall-clock key sim_wall_s) and the Chrome trace are byte-identical.
# usage: same_output.sh TRAINSIM CONFIG WORKDIR
set -eu
trainsim=$1 config=$2 work=$3
mkdir -p "$work"
for i in 1 2; do
  "$trainsim" run "$config" --json --trace "$work/trace$i.json" | grep -v '"sim_wall_s"' > "$work/summary$i.json"
done
cmp "$work/summary1.json" "$work/summary2.json"
cmp "$work/trace1.json" "$work/trace2.json"
echo "identical: $(wc -c < "$work/summary1.json") bytes of summary, $(wc -c < "$work/trace1.json") bytes of trace"
