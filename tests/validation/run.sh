#!/usr/bin/env bash
# Runs trainsim validate on a case file with --max-mape set to the figure
# recorded in a file (its first line that is not blank or a # comment), and
# fails too when an ordering the sources state no longer holds.
# usage: run.sh TRAINSIM CASES.json MAX_MAPE.txt
set -eu
trainsim=$1 cases=$2 limit_file=$3
limit=$(grep -v -E '^[[:space:]]*(#|$)' "$limit_file" | head -n 1 | tr -d '[:space:]')
if ! [[ $limit =~ ^[0-9]+([.][0-9]+)?$ ]]; then
  echo "$limit_file: expected a percentage (e.g. 15.5) on its first line that is not a comment, got \"$limit\""
  exit 1
fi
status=0
out=$("$trainsim" validate "$cases" --max-mape "$limit") || status=$?
printf '%s\n' "$out"
[ "$status" -eq 0 ] || exit "$status"
if printf '%s\n' "$out" | grep -E '^orderings: [0-9]+ pass, [1-9][0-9]* fail' >/dev/null; then
  echo "an ordering the sources state does not hold (see FAIL above)"
  exit 1
fi
