#!/usr/bin/env bash
# Runs trainsim validate on a case file with --max-mape, --max-memory-mape,
# --max-layer-mape and --max-case-error set to the figures recorded in four
# files (each file's first line that is not blank or a # comment; the
# case-error file's later lines, "GROUP = PERCENT", become
# --max-case-error-for), and fails too when an ordering the sources state no
# longer holds.
# usage: run.sh TRAINSIM CASES.json MAX_MAPE.txt MAX_MEMORY_MAPE.txt MAX_LAYER_MAPE.txt MAX_CASE_ERROR.txt
set -eu
if [ $# -ne 6 ]; then
  echo "usage: run.sh TRAINSIM CASES.json MAX_MAPE.txt MAX_MEMORY_MAPE.txt MAX_LAYER_MAPE.txt MAX_CASE_ERROR.txt" >&2
  exit 2
fi
trainsim=$1 cases=$2
read_limit() {
  local limit
  limit=$(grep -v -E '^[[:space:]]*(#|$)' "$1" | head -n 1 | tr -d '[:space:]')
  if ! [[ $limit =~ ^[0-9]+([.][0-9]+)?$ ]]; then
    echo "$1: expected a percentage (e.g. 15.5) on its first line that is not a comment, got \"$limit\"" >&2
    return 1
  fi
  echo "$limit"
}
limit=$(read_limit "$3")
memory_limit=$(read_limit "$4")
layer_limit=$(read_limit "$5")
case_limit=$(read_limit "$6")
# Lines after the first of MAX_CASE_ERROR.txt: "GROUP = PERCENT", a group's own limit.
group_limits=()
while IFS= read -r line; do
  group=$(printf '%s' "${line%=*}" | sed 's/[[:space:]]*$//')
  pct=$(printf '%s' "${line##*=}" | tr -d '[:space:]')
  if [[ $line != *=* || -z $group || ! $pct =~ ^[0-9]+([.][0-9]+)?$ ]]; then
    echo "$6: expected \"GROUP = PERCENT\" after the first limit, got \"$line\"" >&2
    exit 1
  fi
  group_limits+=(--max-case-error-for "$group=$pct")
done < <(grep -v -E '^[[:space:]]*(#|$)' "$6" | tail -n +2)
status=0
out=$("$trainsim" validate "$cases" --max-mape "$limit" --max-memory-mape "$memory_limit" \
  --max-layer-mape "$layer_limit" --max-case-error "$case_limit" "${group_limits[@]}") || status=$?
printf '%s\n' "$out"
[ "$status" -eq 0 ] || exit "$status"
if printf '%s\n' "$out" | grep -E '^orderings: [0-9]+ pass, [1-9][0-9]* fail' >/dev/null; then
  echo "an ordering the sources state does not hold (see FAIL above)"
  exit 1
fi
