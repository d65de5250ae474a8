// Memory and launch measurements: HBM bandwidth (STREAM-like copy and triad
// over sizes from below L2 to 4 GiB), kernel launch overhead with and without
// CUDA graphs, host<->device copies from pinned memory, and peer-to-peer
// copies between GPUs 0 and 1.
#pragma once

#include <cuda_runtime.h>

#include <nlohmann/json.hpp>

#include "measure.hpp"

namespace calibrate {

// Sizes are powers of two from `min_bytes` to `max_bytes`, `step` times apart.
struct Sweep {
  std::size_t min_bytes = 0, max_bytes = 0;
  int step = 2;
};

nlohmann::json measure_hbm(const Sweep& sizes, const Settings& s, cudaStream_t stream);
nlohmann::json measure_launch(const Settings& s, cudaStream_t stream);
nlohmann::json measure_host_copy(const Sweep& sizes, const Settings& s, cudaStream_t stream);
// {"measured": false, "reason": ...} when fewer than two GPUs are visible or
// GPU 0 cannot reach GPU 1 directly.
nlohmann::json measure_p2p(const Sweep& sizes, const Settings& s, int gpus);

}  // namespace calibrate
