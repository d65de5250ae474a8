// What GEMMs sustain over a long run: a GPU at its power limit lowers its
// clock, so the short-run grid overstates a training run's GEMMs. Two runs of
// 8192^3 BF16 GEMMs on the harness's random operands:
//   burn  GEMMs back to back;
//   duty  GEMMs two thirds of the time, HBM copies the rest, as a training
//         step interleaves its GEMMs with memory-bound kernels; only the
//         GEMMs are timed.
// trainsim scales the grid by duty over short-run (the best window).
#pragma once

#include <nlohmann/json.hpp>

#include "gemm.hpp"

namespace calibrate {

// `seconds` for each of the two runs.
nlohmann::json measure_sustained(GemmRunner& runner, double seconds, cudaStream_t stream);

}  // namespace calibrate
