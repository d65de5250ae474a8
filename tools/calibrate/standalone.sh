#!/usr/bin/env bash
# Builds trainsim-calibrate on its own and writes a profile, on a GPU machine
# that has the CUDA toolkit and CMake but not the project's other packages
# (calibrate.sh builds trainsim too, which needs them). nlohmann/json and
# CLI11 are header-only: when find_package finds neither, point
# CALIBRATE_HEADERS at a folder holding nlohmann/ and CLI/ (default:
# .calibrate-headers/ in the repository, ignored by git; fill it on a
# machine that has them with
#   mkdir -p .calibrate-headers && cp -r /usr/include/nlohmann /usr/include/CLI .calibrate-headers/).
# Then run `build/trainsim calibration-report OUT.json` where trainsim builds.
# usage: tools/calibrate/standalone.sh OUT.json [trainsim-calibrate options]
set -eu
if [ $# -lt 1 ]; then
  echo "usage: $0 OUT.json [trainsim-calibrate options]" >&2
  exit 1
fi
out=$(realpath -m "$1")
shift
cd "$(dirname "$0")/../.."
headers=${CALIBRATE_HEADERS:-$PWD/.calibrate-headers}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S tools/calibrate -B build-calibrate-standalone "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCALIBRATE_HEADERS="$headers" >/dev/null
cmake --build build-calibrate-standalone
build-calibrate-standalone/trainsim-calibrate --out "$out" "$@"
