#!/usr/bin/env bash
# SIGINT (Ctrl-C) or SIGTERM (Slurm, CI runners) during a long sweep: it
# stops starting plans, still ranks and writes what finished, marks the rest
# not run, and exits with 128 + the signal. Started in the background from a
# script, as here, the process inherits SIGINT ignored; the signal must count
# all the same.
# usage: sweep_interrupt.sh TRAINSIM SWEEP WORKDIR SIGNAL DELAY
#   SIGNAL  INT or TERM
#   DELAY   seconds of the sweep's CPU time before the signal (CPU, not wall
#           time: on a loaded machine, or under the sanitizers, wall seconds
#           can pass with no plan finished): 4 lands while plans run; 0 lands
#           while the sweep file is still being read, and then no plan has
#           finished.
set -u
ts=$1 sweep=$2 work=$3 signal=$4 delay=$5
case $signal in INT) expected=130 ;; TERM) expected=143 ;; *) echo "signal INT or TERM"; exit 2 ;; esac
rm -rf "$work"; mkdir -p "$work"
if [ "$delay" = 0 ]; then
  # A sweep file that takes a while to read: the same sweep with 48 MiB of
  # description (some 0.4 s in a Release build, seconds under sanitizers).
  { printf '{"description": "'; head -c 50331648 /dev/zero | tr '\0' x; printf '",'
    tail -c +2 "$sweep" | grep -v '^ *"description"'; } > "$work/slow.json"
  sweep=$work/slow.json
fi
"$ts" sweep "$sweep" -q -j 2 --json "$work/part.json" --csv "$work/part.csv" > "$work/out.txt" 2> "$work/err.txt" &
pid=$!
if [ "$delay" = 0 ]; then
  # As soon as the process catches SIGINT (SigCgt in /proc), at most 0.3 s
  # after the shell's child has become trainsim: either way well before the
  # file is read (0.4 s at the least). Handlers put in only after reading
  # would leave SIGINT ignored then, and the signal dropped.
  binary=$(readlink -f "$ts")
  for _ in $(seq 2000); do
    [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$binary" ] && break
    [ -e "/proc/$pid" ] || break
    sleep 0.005
  done
  for _ in $(seq 60); do
    caught=$(awk '/^SigCgt:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
    [ -n "$caught" ] && [ $(( 0x$caught & 2 )) -ne 0 ] && break
    sleep 0.005
  done
else
  # utime + stime of /proc/PID/stat (fields 14 and 15, in clock ticks; the
  # command name before them is in parentheses and has no spaces here), at
  # most two minutes of wall time.
  ticks=$(getconf CLK_TCK)
  for _ in $(seq 1200); do
    used=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null) || break
    [ -n "$used" ] && [ "$used" -ge $(( delay * ticks )) ] && break
    sleep 0.1
  done
fi
kill -"$signal" "$pid"
wait "$pid"
status=$?
[ "$status" -eq "$expected" ] || { echo "expected status $expected, got $status"; cat "$work/err.txt"; exit 1; }
grep -q '"interrupted": true' "$work/part.json" || { echo "not marked interrupted"; exit 1; }
grep -q ',not-run,' "$work/part.csv" || { echo "no plan left not run"; exit 1; }
grep -q "^interrupted by SIG$signal: ranking the [0-9]* plans finished" "$work/err.txt" || { echo "no message"; cat "$work/err.txt"; exit 1; }
if [ "$delay" != 0 ]; then
  grep -Eq '"status": "(ok|oom)"' "$work/part.json" || { echo "no finished plan written"; exit 1; }
else
  # Caught while reading: no plan had started.
  grep -q "ranking the 0 plans finished" "$work/err.txt" || { echo "the signal came after reading"; cat "$work/err.txt"; exit 1; }
fi
echo "ok: $(grep -Ec ',(ok|oom),' "$work/part.csv") plans finished and written, status $status"
