// What a summary adds for a layer-table model (data parallelism or burst
// parallelism): the plan, the foreground iteration, the background job and
// the cluster's utilisation.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace trainsim::report {

struct BurstLayerStats {
  std::string name;
  int gpus = 1;
  double compute_s = 0.0;     // forward + backward on the layer's busiest GPU (planner's estimate)
  double amplification = 1.0;  // gpus x compute / compute on one GPU
};

struct BurstStats {
  std::string mode;  // "data parallel", "burst (planned)", "burst (given)"
  std::vector<BurstLayerStats> layers;
  double amplification = 1.0;        // the plan's GPU-time over one GPU's compute time
  double amplification_limit = 0.0;  // 0 when no planner ran
  double predicted_iteration_s = 0.0;  // the planner's cost model
  double foreground_iteration_s = 0.0;  // simulated
  double foreground_busy_gpu_s = 0.0;   // foreground compute, all GPUs, one iteration
  // GPU multiplexing (zero without a background job).
  bool background = false;
  std::string background_model;
  int background_batch = 0;
  double interference = 0.0;
  double background_gpu_s = 0.0;          // idle GPU time given to it, per foreground iteration
  double background_samples_per_s = 0.0;  // its throughput over the whole cluster
  double cluster_utilisation = 0.0;  // (foreground + background GPU time) / (GPUs x iteration)
};

nlohmann::json to_json(const BurstStats& b);
// Lines for the text summary, in its two-column layout.
std::string to_text(const BurstStats& b);
// "16 GPUs x 13 layers, 1 GPU x 3 layers" (runs of equal widths).
std::string widths_text(const BurstStats& b);

}  // namespace trainsim::report
