#!/usr/bin/env bash
# Prints the speed figures: the engine's microbenchmarks (events per second),
# the wall time and memory of example what-ifs in both fidelities, and a whole
# sweep (plans per second), then the full-fidelity scaling table
# (tools/bench/scaling.sh). Release
# build, nothing asserted.
# usage: tools/bench/run.sh [BUILD_DIR]   (default: build)
set -eu
cd "$(dirname "$0")/../.."
build=${1:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRAINSIM_BUILD_BENCHMARKS=ON >/dev/null
cmake --build "$build" --target trainsim engine_bench whatif_bench sweep_bench >/dev/null

echo "== engine microbenchmarks (median of 5)"
"$build/tools/bench/engine_bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_counters_tabular=true 2>/dev/null | grep -E "median|Benchmark"

echo
echo "== what-ifs in process, costing to timeline, warm (median of 5)"
"$build/tools/bench/whatif_bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true 2>/dev/null |
  grep -E "median|Benchmark"

median() { printf '%s\n' "$@" | sort -g | sed -n "$(( ($# + 1) / 2 ))p"; }
run_case() {  # label, runs, trainsim arguments...
  local label=$1 runs=$2; shift 2
  local sims=() procs=() events=0 rss=-
  for _ in $(seq "$runs"); do
    local start end out
    start=$(date +%s.%N)
    if [ -x /usr/bin/time ]; then
      out=$(/usr/bin/time -f '%M' -o /tmp/trainsim_bench_rss "$build/trainsim" run "$@" --json)
      rss=$(( $(cat /tmp/trainsim_bench_rss) / 1024 ))
    else
      out=$("$build/trainsim" run "$@" --json)
    fi
    end=$(date +%s.%N)
    sims+=("$(printf '%s\n' "$out" | sed -n 's/.*"sim_wall_s": \([0-9.e-]*\).*/\1/p')")
    procs+=("$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')")
    events=$(printf '%s\n' "$out" | sed -n 's/.*"events": \([0-9]*\).*/\1/p')
  done
  printf '%-58s %9s %12.4f %12.4f %9s\n' "$label" "$events" "$(median "${sims[@]}")" "$(median "${procs[@]}")" "$rss"
}

echo
echo "== what-ifs (median of the runs; sim_wall_s as the summary reports it, the whole process, peak MiB)"
printf '%-58s %9s %12s %12s %9s\n' case events sim_wall_s process_s peak_MiB
for config in configs/examples/*.json; do
  case "$config" in *llama3-405b*) continue ;; esac
  run_case "$(basename "$config" .json)" 5 "$config"
done
gpt3=configs/examples/gpt3-175b-1024xa100.json
run_case "gpt3-175b-1024xa100, flow collectives" 3 "$gpt3" --set options.collectives=flow
run_case "gpt3-175b-1024xa100, full fidelity" 3 "$gpt3" --set options.fidelity=full
run_case "gpt3-175b-1024xa100, full fidelity, flow collectives" 3 "$gpt3" --set options.fidelity=full \
  --set options.collectives=flow
run_case "llama3-405b-16384xh100 (symmetric)" 3 configs/examples/llama3-405b-16384xh100.json

echo
echo "== a whole sweep in process: every valid plan of configs/sweeps/gpt3-175b-1024xa100.json, then its top 10 with pruning"
"$build/tools/bench/sweep_bench"

echo
echo "== every GPU simulated, 1,024 to 16,384 GPUs (tools/bench/scaling.sh)"
bash tools/bench/scaling.sh "$build"
