#include "validate/metric.hpp"

#include <limits>

namespace trainsim::validate {

namespace {

struct Entry {
  Metric metric;
  std::string_view name;
  MetricKind kind;
};

// In the order of the Metric enumeration.
constexpr std::array<Entry, kMetricCount> kEntries{{
    {Metric::kIterationTime, "iteration_time_s", MetricKind::kPerformance},
    {Metric::kModelTflopsPerGpu, "model_tflops_per_gpu", MetricKind::kPerformance},
    {Metric::kHardwareTflopsPerGpu, "hardware_tflops_per_gpu", MetricKind::kPerformance},
    {Metric::kMfu, "mfu", MetricKind::kPerformance},
    {Metric::kHfu, "hfu", MetricKind::kPerformance},
    {Metric::kSamplesPerGpuPerS, "samples_per_gpu_per_s", MetricKind::kPerformance},
    {Metric::kTokensPerS, "tokens_per_s", MetricKind::kPerformance},
    {Metric::kTokensPerGpuPerS, "tokens_per_gpu_per_s", MetricKind::kPerformance},
    {Metric::kSamplesPerS, "samples_per_s", MetricKind::kPerformance},
    {Metric::kPeakMemoryGib, "peak_memory_gib", MetricKind::kMemory},
    {Metric::kPeakMemoryGb, "peak_memory_gb", MetricKind::kMemory},
    {Metric::kModelStateGib, "model_state_gib", MetricKind::kMemory},
    {Metric::kActivationMemoryGib, "activation_memory_gib", MetricKind::kMemory},
    {Metric::kDeviceMemoryUsedGb, "device_memory_used_gb", MetricKind::kMemory},
    {Metric::kLayerForwardMs, "layer_forward_ms", MetricKind::kLayerTime},
    {Metric::kLayerBackwardMs, "layer_backward_ms", MetricKind::kLayerTime},
}};

const Entry& entry(Metric m) { return kEntries[static_cast<std::size_t>(m)]; }

struct KindEntry {
  MetricKind kind;
  std::string_view name;   // in JSON
  std::string_view title;  // in text
};
constexpr std::array<KindEntry, 3> kKinds{{
    {MetricKind::kPerformance, "performance", "performance"},
    {MetricKind::kMemory, "memory", "memory"},
    {MetricKind::kLayerTime, "layer_time", "layer time"},
}};

const KindEntry& kind_entry(MetricKind k) { return kKinds[static_cast<std::size_t>(k)]; }

// Both tables are indexed by their enumeration's value.
constexpr bool in_enum_order() {
  for (std::size_t i = 0; i < kEntries.size(); ++i) {
    if (static_cast<std::size_t>(kEntries[i].metric) != i) return false;
  }
  for (std::size_t i = 0; i < kKinds.size(); ++i) {
    if (static_cast<std::size_t>(kKinds[i].kind) != i) return false;
  }
  return true;
}
static_assert(in_enum_order(), "kEntries and kKinds list their enumerations in order");

}  // namespace

const std::array<Metric, kMetricCount>& all_metrics() {
  static const std::array<Metric, kMetricCount> all = [] {
    std::array<Metric, kMetricCount> a{};
    for (std::size_t i = 0; i < kMetricCount; ++i) a[i] = kEntries[i].metric;
    return a;
  }();
  return all;
}

std::string_view name(Metric m) { return entry(m).name; }
MetricKind kind(Metric m) { return entry(m).kind; }
std::string_view kind_name(MetricKind k) { return kind_entry(k).name; }
std::string_view kind_title(MetricKind k) { return kind_entry(k).title; }

std::optional<Metric> metric_named(std::string_view name) {
  for (const Entry& e : kEntries) {
    if (e.name == name) return e.metric;
  }
  return std::nullopt;
}

std::vector<std::string> metric_names() {
  std::vector<std::string> out;
  for (const Entry& e : kEntries) out.emplace_back(e.name);
  return out;
}

MetricValues metric_values(const report::Summary& s) {
  MetricValues v{};
  auto set = [&v](Metric m, double x) { v[static_cast<std::size_t>(m)] = x; };
  set(Metric::kIterationTime, s.iteration_time_s);
  set(Metric::kModelTflopsPerGpu, s.model_tflops_per_gpu);
  set(Metric::kHardwareTflopsPerGpu, s.hardware_tflops_per_gpu);
  set(Metric::kMfu, s.mfu);
  set(Metric::kHfu, s.hfu);
  set(Metric::kSamplesPerGpuPerS, s.info.gpus > 0 ? s.samples_per_s / s.info.gpus : 0.0);
  set(Metric::kTokensPerS, s.tokens_per_s);
  set(Metric::kTokensPerGpuPerS, s.info.gpus > 0 ? s.tokens_per_s / s.info.gpus : 0.0);
  set(Metric::kSamplesPerS, s.samples_per_s);
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  set(Metric::kPeakMemoryGib, static_cast<double>(s.peak_memory_bytes) / kGiB);
  set(Metric::kPeakMemoryGb, static_cast<double>(s.peak_memory_bytes) / 1e9);
  // nvidia-smi counts the process's whole use of the GPU, the CUDA context
  // too (the caching allocator's unused reserve as well, which is not modelled).
  set(Metric::kDeviceMemoryUsedGb, static_cast<double>(s.peak_memory_bytes + s.cuda_context_bytes) / 1e9);
  // A layer-table model has no transformer layer: no value (NaN, null in JSON), not 0.
  const double no_layer = std::numeric_limits<double>::quiet_NaN();
  set(Metric::kLayerForwardMs, s.burst ? no_layer : s.info.layer_forward_s * 1e3);
  set(Metric::kLayerBackwardMs, s.burst ? no_layer : s.info.layer_backward_s * 1e3);
  // The first pipeline rank: the one Korthikanti et al.'s activation formula
  // describes (it holds the most micro-batches in flight under 1F1B).
  if (!s.stages.empty()) {
    const report::StageSummary& first = s.stages.front();
    set(Metric::kModelStateGib, static_cast<double>(first.model_state_bytes) / kGiB);
    set(Metric::kActivationMemoryGib,
        static_cast<double>(first.peak_memory_bytes - first.model_state_bytes) / kGiB);
  }
  return v;
}

}  // namespace trainsim::validate
