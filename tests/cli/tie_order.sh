#!/usr/bin/env bash
# Runs configs and a sweep twice, the second time with --reverse-ties (events
# of one picosecond delivered last scheduled first), and checks that every
# figure is the same: the JSON summaries (all but the wall-clock key
# sim_wall_s) and the sweep's CSV byte for byte.
# usage: tie_order.sh TRAINSIM SOURCE_DIR WORKDIR
set -eu
trainsim=$1 src=$2 work=$3
mkdir -p "$work"
examples=$src/configs/examples
runs=0
compare_run() {
  "$trainsim" run "$@" --json | grep -v '"sim_wall_s"' > "$work/first.json"
  "$trainsim" run "$@" --json --reverse-ties | grep -v '"sim_wall_s"' > "$work/reversed.json"
  if ! cmp -s "$work/first.json" "$work/reversed.json"; then
    echo "run $* differs with --reverse-ties:"
    diff "$work/first.json" "$work/reversed.json" | head -20
    exit 1
  fi
  runs=$((runs + 1))
}
for mode in "" "--set options.fidelity=full" "--set options.collectives=flow"; do
  # shellcheck disable=SC2086 # the mode is two words or none
  compare_run "$examples/gpt-1.7b-8xa100.json" $mode
  # shellcheck disable=SC2086
  compare_run "$examples/gpt-52b-64xa100-breadth-first.json" $mode
  # shellcheck disable=SC2086
  compare_run "$examples/mixtral-8x7b-64xh100.json" $mode
done
compare_run "$examples/gpt3-175b-1024xa100.json"
compare_run "$examples/llama3.1-70b-256xh100-fsdp.json"
compare_run "$examples/qwen3-235b-256xh100.json"
compare_run "$examples/llama3-8b-128k-cp8-8xh100.json"
compare_run "$examples/vgg16-burst-16xa100.json"
"$trainsim" sweep "$src/configs/sweeps/gpt-1.7b-8xa100.json" -j 2 --no-prune -q --csv "$work/first.csv" > /dev/null
"$trainsim" sweep "$src/configs/sweeps/gpt-1.7b-8xa100.json" -j 2 --no-prune -q --csv "$work/reversed.csv" --reverse-ties > /dev/null
cmp "$work/first.csv" "$work/reversed.csv"
echo "the same with ties reversed: $runs runs and a sweep of $(($(wc -l < "$work/first.csv") - 1)) plans"
