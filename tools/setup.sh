#!/usr/bin/env bash
# Installs the Debian packages trainsim needs to build and test, skipping any
# already installed. Debian 12 or newer; run as root (or with sudo available).
# --test adds what tools/test.sh needs besides: clang with its sanitizer and
# libFuzzer runtimes; Python and librsvg's rsvg-convert, which check the
# generated files and render the pictures; Slurm and MUNGE, for the test that
# runs a sharded sweep on a one-node Slurm cluster of its own
# (tests/slurm/slurm_sweep_test.sh starts its own daemons).
set -eu
packages=(g++ cmake ninja-build libboost-graph-dev nlohmann-json3-dev libfmt-dev libspdlog-dev
          doctest-dev libcli11-dev libbenchmark-dev libjemalloc-dev libtomlplusplus-dev pybind11-dev python3-dev)
if [ "${1:-}" = --test ]; then
  packages+=(clang libclang-rt-dev python3 librsvg2-bin slurm-wlm munge)
elif [ -n "${1:-}" ]; then
  echo "usage: bash tools/setup.sh [--test]" >&2
  exit 2
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
echo "setup: installing ${missing[*]}"
# Installing munge, slurmd and slurmctld would start them as system services,
# with a generated key and no cluster; the test needs none of them running. A
# policy-rc.d that says no (exit 101), where none is in place, keeps them
# stopped during the install; they stay enabled for a later boot.
if [[ " ${missing[*]} " == *" munge "* || " ${missing[*]} " == *" slurm-wlm "* ]] && [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
  $sudo chmod 755 /usr/sbin/policy-rc.d
  trap '$sudo rm -f /usr/sbin/policy-rc.d' EXIT
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
