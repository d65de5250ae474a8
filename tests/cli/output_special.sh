#!/usr/bin/env bash
# Outputs that are not regular files: --trace /dev/stdout goes after the
# summary into whatever stdout is (the file the shell opened stays one file,
# with both in it), and --trace into a named pipe reaches the reader that is
# waiting on it whole (the check before the run must not open the pipe).
# usage: output_special.sh TRAINSIM CONFIG WORKDIR
set -u
ts=$1 config=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
echo "earlier line" > "$work/out.txt"
"$ts" run "$config" --trace /dev/stdout >> "$work/out.txt" || { echo "run --trace /dev/stdout failed"; exit 1; }
head -n 1 "$work/out.txt" | grep -q "^earlier line$" || { echo "what was in the file is gone"; exit 1; }
grep -q "iteration time" "$work/out.txt" || { echo "the summary is gone"; exit 1; }
tail -c 200 "$work/out.txt" | grep -q "]}" || { echo "the trace did not follow"; exit 1; }
# "-" is standard output too, as `run -` reads standard input: no file named "-".
(cd "$work" && "$ts" run "$config" --trace - > dash.txt) || { echo "run --trace - failed"; exit 1; }
[ ! -e "$work/-" ] || { echo "--trace - wrote a file named -"; exit 1; }
tail -c 200 "$work/dash.txt" | grep -q "]}" || { echo "--trace - did not reach standard output"; exit 1; }
if (cd "$work" && "$ts" run "$config" --json --trace - > dash.json 2> dash.err); then
  echo "--json --trace - was not refused"; exit 1
fi
grep -q "standard output, where --json writes the summary" "$work/dash.err" || { echo "--json --trace -: wrong refusal"; exit 1; }
mkfifo "$work/pipe"
timeout 60 cat "$work/pipe" > "$work/from_pipe.json" &
reader=$!
timeout 60 "$ts" run "$config" --trace "$work/pipe" > /dev/null || { echo "run --trace PIPE failed"; exit 1; }
wait "$reader" || { echo "the reader failed"; exit 1; }
head -c 20 "$work/from_pipe.json" | grep -q "displayTimeUnit" || { echo "the reader got no trace"; exit 1; }
tail -c 200 "$work/from_pipe.json" | grep -q "]}" || { echo "the reader got a cut-short trace"; exit 1; }
echo "ok: /dev/stdout appended after the summary; - is standard output; the pipe's reader got the whole trace"
