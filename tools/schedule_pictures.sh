#!/usr/bin/env bash
# Draws every registered schedule on one small plan and prints a markdown table
# of the results for docs/schedules.md (its pictures linked relative to docs/).
#
# The plan: GPT 1.7B (the default example's model) on 4 GPUs of one DGX A100
# node, tp 1, pp 4, dp 1, 8 micro-batches of one sequence each. A schedule that
# takes 2 virtual stages per rank (interleaved-1f1b, breadth-first, zb-v) is
# drawn with them, the others with one stage per rank.
# Each schedule's picture goes to OUT_DIR/NAME.svg (default docs/schedules/);
# the table goes to stdout. Re-run it after adding a schedule.
#
# usage: tools/schedule_pictures.sh [OUT_DIR]   (TRAINSIM=path/to/trainsim, default build/trainsim)
set -euo pipefail
cd "$(dirname "$0")/.."
ts=${TRAINSIM:-build/trainsim}
out=${1:-docs/schedules}
config=configs/examples/gpt-1.7b-8xa100.json
plan=(--set cluster.node.gpus_per_node=4 --set parallel.tp=1 --set parallel.pp=4 --set parallel.dp=1
      --set parallel.microbatch_size=1 --set parallel.global_batch=8)

if [ ! -x "$ts" ]; then
  echo "error: $ts not found; build first (cmake --build build) or set TRAINSIM" >&2
  exit 1
fi
mkdir -p "$out"

echo "| schedule | vp | iteration time | bubble fraction | peak memory per GPU | picture |"
echo "|---|---|---|---|---|---|"
for name in $("$ts" schedules | awk '{print $1}'); do
  json=""
  for vp in 2 1; do  # virtual stages where the schedule takes them
    status=0
    json=$("$ts" run "$config" "${plan[@]}" --set parallel.schedule="$name" --set parallel.vp=$vp \
             --svg "$out/$name.svg" --json 2>/dev/null) || status=$?
    [ "$status" -eq 0 ] && break
    json=""
    [ "$status" -eq 3 ] || break  # 3: the schedule refuses this shape; anything else is a real failure
  done
  if [ -z "$json" ]; then
    echo "warning: $name did not run at pp 4 with vp 1 or 2; left out" >&2
    continue
  fi
  python3 -c '
import json, sys
s = json.load(sys.stdin)
name, vp, out = sys.argv[1], sys.argv[2], sys.argv[3]
link = out[len("docs/"):] if out.startswith("docs/") else out
print("| `{}` | {} | {:.1f} ms | {:.1f}% | {:.2f} GiB | ![{}]({}/{}.svg) |".format(
    name, vp, s["iteration_time_s"] * 1e3, s["bubble_fraction"] * 100, s["peak_memory_bytes"] / 2**30,
    name, link, name))' "$name" "$vp" "$out" <<< "$json"
done
