#!/usr/bin/env bash
# Runs a command that must fail: checks its exit status, that stderr is one
# line, and that the line matches a pattern (grep -E).
# usage: expect_error.sh STATUS PATTERN COMMAND [ARG ...]
set -u
want_status=$1 pattern=$2
shift 2
err=$("$@" 2>&1 >/dev/null)
status=$?
if [ "$status" -ne "$want_status" ]; then
  echo "expected exit status $want_status, got $status; stderr: $err"
  exit 1
fi
if [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ]; then
  echo "expected one line on stderr, got: $err"
  exit 1
fi
if ! printf '%s\n' "$err" | grep -Eq -- "$pattern"; then
  echo "stderr does not match /$pattern/: $err"
  exit 1
fi
echo "ok: $err"
