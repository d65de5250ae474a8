#!/usr/bin/env bash
# One command on a machine with NVIDIA GPUs: build trainsim-calibrate and
# trainsim (in build-calibrate/, leaving build/ alone), write a calibration
# profile, and print what it changes against the matching preset.
# usage: tools/calibrate/calibrate.sh OUT.json [--quick] [--note TEXT] [...]
#        (options after OUT.json go to trainsim-calibrate; see its --help)
set -eu
if [ $# -lt 1 ]; then
  echo "usage: $0 OUT.json [trainsim-calibrate options]" >&2
  exit 1
fi
out=$(realpath -m "$1")
shift
cd "$(dirname "$0")/../.."
cmake -S . -B build-calibrate -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRAINSIM_CUDA=ON \
      -DTRAINSIM_BUILD_TESTS=OFF -DTRAINSIM_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build-calibrate --target trainsim-calibrate trainsim
build-calibrate/tools/calibrate/trainsim-calibrate --out "$out" "$@"
build-calibrate/trainsim calibration-report "$out"
