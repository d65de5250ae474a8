// What GEMMs sustain over a long run: a GPU at its power limit lowers its
// clock, so the short-run grid overstates a training run's GEMMs. Two runs of
// 8192^3 BF16 GEMMs on the harness's random operands:
//   burn  GEMMs back to back;
//   duty  GEMMs about two thirds of the time, HBM copies of random data the
//         rest, as a training step interleaves its GEMMs with memory-bound
//         kernels; only the GEMMs are timed, and the share is recorded as it
//         ran.
// trainsim takes the burn over the grid's own 8192^3 figure as the GPU's
// burn fraction, from which a run holds more the less of its compute its
// tensor work takes; the duty run checks that line.
#pragma once

#include <nlohmann/json.hpp>

#include "gemm.hpp"

namespace calibrate {

// `seconds` for each of the two runs.
nlohmann::json measure_sustained(GemmRunner& runner, double seconds, cudaStream_t stream);

}  // namespace calibrate
