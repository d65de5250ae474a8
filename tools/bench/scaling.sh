#!/usr/bin/env bash
# Prints the full-fidelity scaling table of docs/tests-and-benchmarks.md: every
# GPU simulated, with analytic and with flow collectives, for the 8-layer GPT
# of tools/bench/gpt-8l-scaling.json from 1,024 to 16,384 GPUs (dp growing
# with the cluster), as a Markdown table: events, `sim_wall_s`, events per
# second and peak memory. Then the ratio the linear-cost target is about:
# events per second at 1,024 GPUs over those at 16,384.
# With --large it adds Llama 3 405B on 16,384 H100s (configs/examples) in
# both collective modes, and on 131,072 (dp 1,024) with analytic collectives
# (several minutes and some 13 GiB).
# With a second build folder, each case also runs on that build, and its
# time over this build's is printed (before / after, same run, same machine).
# Release builds; nothing asserted. Each run is cut at TIMEOUT seconds
# (default 600), shown as "> TIMEOUT s".
# usage: tools/bench/scaling.sh [--large] [BUILD_DIR [BEFORE_BUILD_DIR]]
set -eu
cd "$(dirname "$0")/../.."
large=0
if [ "${1:-}" = --large ]; then large=1; shift; fi
build=${1:-build}
before=${2:-}
limit=${TIMEOUT:-600}
for b in "$build" $before; do
  [ -x "$b/trainsim" ] || { echo "scaling.sh: no $b/trainsim (build it first: cmake --build $b)" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "scaling.sh: needs /usr/bin/time (Debian package time)" >&2; exit 2; }

# Runs one case; prints "events wall_s peak_MiB", or "- >LIMIT -" when cut.
measure() {  # binary, arguments...
  local bin=$1 out
  shift
  if ! out=$(timeout "$limit" /usr/bin/time -f '%M' -o /tmp/trainsim_scaling_rss "$bin" run "$@" --json 2>/dev/null); then
    echo "- >$limit -"
    return
  fi
  printf '%s %s %s\n' "$(printf '%s\n' "$out" | sed -n 's/.*"events": \([0-9]*\).*/\1/p')" \
    "$(printf '%s\n' "$out" | sed -n 's/.*"sim_wall_s": \([0-9.e-]*\).*/\1/p')" \
    "$(( $(cat /tmp/trainsim_scaling_rss) / 1024 ))"
}
# One table row: label, then trainsim arguments.
declare -A rate
row() {
  local label=$1
  shift
  local events wall mib per_s ratio=""
  read -r events wall mib <<<"$(measure "$build/trainsim" "$@")"
  if [ "$events" = - ]; then
    per_s=-
    wall_text="> $limit s"
  else
    per_s=$(awk -v e="$events" -v w="$wall" 'BEGIN { printf "%.2f", e / w / 1e6 }')
    wall_text=$(awk -v w="$wall" 'BEGIN { printf "%.3f s", w }')
  fi
  rate[$label]=$per_s
  if [ -n "$before" ]; then
    local b_events b_wall b_mib
    read -r b_events b_wall b_mib <<<"$(measure "$before/trainsim" "$@")"
    if [ "$b_events" = - ] || [ "$events" = - ]; then
      ratio=" | (before > $limit s)"
      [ "$events" = - ] && ratio=" | -"
    else
      ratio=$(awk -v a="$wall" -v b="$b_wall" 'BEGIN { printf " | %.3f s, %.1fx", b, b / a }')
    fi
  fi
  printf '| %s | %s | %s | %s | %s%s |\n' "$label" "$events" "$wall_text" "$per_s" "$mib" "$ratio"
}

config=tools/bench/gpt-8l-scaling.json
header="| case | events | sim_wall_s | million events/s | peak MiB |"
rule="|---|---|---|---|---|"
if [ -n "$before" ]; then header+=" before: sim_wall_s, before / after |"; rule+="---|"; fi
echo "$header"
echo "$rule"
for mode in analytic flow; do
  for gpus in 1024 2048 4096 8192 16384; do
    nodes=$((gpus / 8)) dp=$((gpus / 16))
    row "8-layer GPT, $gpus GPUs, $mode collectives" "$config" --set cluster.nodes=$nodes --set parallel.dp=$dp \
      --set parallel.global_batch=$((4 * dp)) --set options.collectives=$mode
  done
done
if [ "$large" = 1 ]; then
  llama=configs/examples/llama3-405b-16384xh100.json
  row "Llama 3 405B, 16,384 H100s, analytic collectives" "$llama" --set options.fidelity=full
  row "Llama 3 405B, 16,384 H100s, flow collectives" "$llama" --set options.fidelity=full --set options.collectives=flow
  row "Llama 3 405B, 131,072 H100s (dp 1,024), analytic collectives" "$llama" --set options.fidelity=full \
    --set cluster.nodes=16384 --set parallel.dp=1024 --set parallel.global_batch=16384
fi
echo
for mode in analytic flow; do
  small=${rate["8-layer GPT, 1024 GPUs, $mode collectives"]} big=${rate["8-layer GPT, 16384 GPUs, $mode collectives"]}
  if [ "$small" != - ] && [ "$big" != - ]; then
    echo "$mode collectives: events per second at 1,024 GPUs over those at 16,384: $(awk -v a="$small" -v b="$big" 'BEGIN { printf "%.2f", a / b }')"
  fi
done
