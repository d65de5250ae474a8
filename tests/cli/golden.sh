#!/usr/bin/env bash
# Compares the JSON summary of a config (all but sim_wall_s) with a stored
# golden copy. After an intended change in the model, refresh it with
#   build/trainsim run CONFIG --json | grep -v '"sim_wall_s"' > GOLDEN
# and explain the change in the commit.
# usage: golden.sh TRAINSIM CONFIG GOLDEN
set -eu
trainsim=$1 config=$2 golden=$3
if ! diff -u "$golden" <("$trainsim" run "$config" --json | grep -v '"sim_wall_s"'); then
  echo "summary differs from $golden"
  exit 1
fi
echo "matches $golden"
