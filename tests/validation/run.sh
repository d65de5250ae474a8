#!/usr/bin/env bash
# Runs trainsim validate on a case file with --max-mape set to the figure
# recorded in a file (its first line that is not blank or a # comment).
# usage: run.sh TRAINSIM CASES.json MAX_MAPE.txt
set -eu
trainsim=$1 cases=$2 limit_file=$3
limit=$(grep -v -E '^[[:space:]]*(#|$)' "$limit_file" | head -n 1 | tr -d '[:space:]')
if ! [[ $limit =~ ^[0-9]+([.][0-9]+)?$ ]]; then
  echo "$limit_file: expected a percentage (e.g. 15.5) on its first line that is not a comment, got \"$limit\""
  exit 1
fi
exec "$trainsim" validate "$cases" --max-mape "$limit"
