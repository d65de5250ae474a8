// Burst parallelism (Park et al., "Efficient Strong Scaling Through Burst
// Parallel Training", MLSys 2022, the DeepPool system): what a config asks of
// it under `parallel.burst`.
#pragma once

#include <optional>
#include <vector>

#include "workload/layer_table.hpp"

namespace trainsim::workload {

// GPU multiplexing: a job of its own on every GPU (each GPU training its own
// copy, as DeepPool's background jobs do) that runs at low priority whenever
// the GPU has no foreground kernel.
struct BurstBackground {
  LayerTable model;
  int batch = 1;  // samples per iteration of the background job, per GPU
};

struct BurstSpec {
  // The plan's GPU-time (each layer's GPUs x its compute time, summed) may be
  // at most this many times the model's compute time on one GPU.
  double amplification_limit = 2.0;
  // A given plan: GPUs per layer. Empty: the planner chooses.
  std::vector<int> layer_gpus;
  // Foreground compute takes 1 + interference times as long on a GPU shared
  // with a background job. No default pretends to be measured: 0 unless the
  // config states one.
  double interference = 0.0;
  std::optional<BurstBackground> background;
};

}  // namespace trainsim::workload
