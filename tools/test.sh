#!/usr/bin/env bash
# The whole test suite, as CI runs it (docs/tests-and-benchmarks.md):
#   1. a Release build, and every test;
#   2. a clang build with AddressSanitizer and UndefinedBehaviorSanitizer
#      (without the Python module: an instrumented module would need the
#      sanitizer runtime preloaded into Python)
#      (any undefined behaviour aborts) and libFuzzer's coverage hooks, and
#      every test again under both sanitizers, except those labelled
#      slow_under_asan, which are named as they are left out; among them the
#      fuzz targets, each for a fixed number of inputs (label "fuzz").
# Installs what the tests need first (tools/setup.sh --test: clang and its
# sanitizer and fuzzer runtimes). Prints the time each part took.
# usage: bash tools/test.sh [release|sanitize]   (both by default)
set -eu
cd "$(dirname "$0")/.."
jobs=${JOBS:-2}
parts=${1:-all}
case $parts in all|release|sanitize) ;; *) echo "usage: bash tools/test.sh [release|sanitize]" >&2; exit 2 ;; esac

bash tools/setup.sh --test
began=$SECONDS
if [ "$parts" != sanitize ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
  cmake --build build
  ctest --test-dir build --output-on-failure -j"$jobs"
  echo "test.sh: Release build and suite took $((SECONDS - began)) s"
fi
if [ "$parts" != release ]; then
  began_sanitize=$SECONDS
  # -O1: a sanitized build at -O0 runs the suite several times slower.
  # -gline-tables-only: a sanitizer report names each frame's file and line,
  # which is all it reads; full debug information (Debug's -g, cleared here)
  # only lengthens the compile and the links.
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ \
        -DCMAKE_CXX_FLAGS="-O1 -gline-tables-only" -DCMAKE_CXX_FLAGS_DEBUG="" \
        -DTRAINSIM_SANITIZE=ON -DTRAINSIM_FUZZ=ON -DTRAINSIM_CUDA=OFF -DTRAINSIM_BUILD_BENCHMARKS=OFF \
        -DTRAINSIM_PYTHON=OFF
  cmake --build build-asan
  slow=$(ctest --test-dir build-asan -N -L slow_under_asan | awk '/Test +#/ {print $3}' | tr '\n' ' ')
  echo "test.sh: left out under the sanitizers (label slow_under_asan): ${slow:-none}"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE slow_under_asan
  echo "test.sh: sanitizer build and suite (fuzz targets included) took $((SECONDS - began_sanitize)) s"
fi
echo "test.sh: all passed in $((SECONDS - began)) s"
