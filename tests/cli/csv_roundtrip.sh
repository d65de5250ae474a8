#!/usr/bin/env bash
# Exports a schedule to CSV, runs the config with parallel.schedule = csv:FILE,
# and checks that iteration time and peak memory match the plugin's own run.
# usage: csv_roundtrip.sh TRAINSIM CONFIG WORKDIR SCHEDULE PP MICROBATCHES
set -eu
ts=$1 config=$2 work=$3 name=$4 pp=$5 m=$6
mkdir -p "$work"
"$ts" schedules export "$name" --pp "$pp" --microbatches "$m" > "$work/$name.csv"
figures() { grep -E '^  (iteration time|peak memory per GPU|bubble fraction) '; }
direct=$("$ts" run "$config" --set parallel.schedule="$name" | figures)
replay=$("$ts" run "$config" --set parallel.schedule="csv:$work/$name.csv" | figures)
if [ "$direct" != "$replay" ]; then
  echo "plugin run:"; echo "$direct"; echo "CSV run:"; echo "$replay"
  exit 1
fi
echo "$replay"
