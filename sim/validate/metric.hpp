// The figures a validation case may compare with a measurement: the summary's
// own keys (see report/summary.hpp) plus per-GPU, GB and GiB views of them.
// Performance, memory and one layer's time are averaged apart, so each metric
// has a kind.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "report/summary.hpp"

namespace trainsim::validate {

enum class Metric {
  kIterationTime,
  kModelTflopsPerGpu,
  kHardwareTflopsPerGpu,
  kMfu,
  kHfu,
  kSamplesPerGpuPerS,
  kTokensPerS,
  kTokensPerGpuPerS,
  kSamplesPerS,
  kPeakMemoryGib,
  kPeakMemoryGb,
  kModelStateGib,
  kActivationMemoryGib,
  kDeviceMemoryUsedGb,  // what nvidia-smi shows: the tensors' peak plus the CUDA context
  kLayerForwardMs,      // one transformer layer, one micro-batch (workload::StageCosts)
  kLayerBackwardMs,
};
inline constexpr std::size_t kMetricCount = 16;

// Performance: an iteration's time or throughput. Layer time: one layer's
// forward or backward, a profile's figure rather than a run's.
enum class MetricKind { kPerformance, kMemory, kLayerTime };

// Every metric, in the order tables list them.
const std::array<Metric, kMetricCount>& all_metrics();
std::string_view name(Metric m);
MetricKind kind(Metric m);
std::string_view kind_name(MetricKind k);   // in JSON: "performance", "memory" or "layer_time"
std::string_view kind_title(MetricKind k);  // in text: "performance", "memory" or "layer time"
std::optional<Metric> metric_named(std::string_view name);
std::vector<std::string> metric_names();

// Predicted values of every metric, indexed by Metric.
using MetricValues = std::array<double, kMetricCount>;

// Read from the summary as `trainsim run` reports it (never recomputed), so
// a case predicts exactly what `trainsim run --json` prints.
MetricValues metric_values(const report::Summary& s);

inline double at(const MetricValues& v, Metric m) { return v[static_cast<std::size_t>(m)]; }

}  // namespace trainsim::validate
