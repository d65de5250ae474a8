#!/usr/bin/env bash
# Prints the speed figures: the engine's microbenchmarks (events per second)
# and the wall time of the example what-ifs. Release build, nothing asserted.
# usage: tools/bench/run.sh [BUILD_DIR]   (default: build)
set -eu
cd "$(dirname "$0")/../.."
build=${1:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRAINSIM_BUILD_BENCHMARKS=ON >/dev/null
cmake --build "$build" --target trainsim engine_bench >/dev/null

echo "== engine microbenchmarks"
"$build/tools/bench/engine_bench" --benchmark_counters_tabular=true

echo
echo "== example what-ifs (median of 5 runs; simulated wall time as the summary reports it, and the whole process)"
median() { printf '%s\n' "$@" | sort -g | sed -n 3p; }
printf '%-48s %10s %14s %14s\n' config events sim_wall_s process_s
for config in configs/examples/*.json; do
  sims=() procs=() events=0
  for _ in 1 2 3 4 5; do
    start=$(date +%s.%N)
    out=$("$build/trainsim" run "$config" --json)
    end=$(date +%s.%N)
    sims+=("$(printf '%s\n' "$out" | sed -n 's/.*"sim_wall_s": \([0-9.e-]*\).*/\1/p')")
    procs+=("$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')")
    events=$(printf '%s\n' "$out" | sed -n 's/.*"events": \([0-9]*\).*/\1/p')
  done
  printf '%-48s %10s %14.4f %14.4f\n' "$config" "$events" "$(median "${sims[@]}")" "$(median "${procs[@]}")"
done
