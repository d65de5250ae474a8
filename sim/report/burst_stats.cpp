#include "report/burst_stats.hpp"

#include <fmt/format.h>

namespace trainsim::report {

nlohmann::json to_json(const BurstStats& b) {
  nlohmann::json layers = nlohmann::json::array();
  for (const BurstLayerStats& l : b.layers) {
    layers.push_back({{"name", l.name}, {"gpus", l.gpus}, {"compute_s", l.compute_s}, {"amplification", l.amplification}});
  }
  nlohmann::json j = {{"mode", b.mode},
                      {"layers", layers},
                      {"amplification", b.amplification},
                      {"amplification_limit", b.amplification_limit},
                      {"predicted_iteration_s", b.predicted_iteration_s},
                      {"foreground_iteration_s", b.foreground_iteration_s},
                      {"foreground_busy_gpu_s", b.foreground_busy_gpu_s},
                      {"cluster_utilisation", b.cluster_utilisation}};
  if (b.background) {
    j["background"] = {{"model", b.background_model},
                       {"batch", b.background_batch},
                       {"interference", b.interference},
                       {"gpu_s", b.background_gpu_s},
                       {"samples_per_s", b.background_samples_per_s}};
  } else {
    j["background"] = nullptr;
  }
  return j;
}

std::string widths_text(const BurstStats& b) {
  std::string out;
  for (std::size_t i = 0; i < b.layers.size();) {
    std::size_t n = i;
    while (n < b.layers.size() && b.layers[n].gpus == b.layers[i].gpus) ++n;
    out += fmt::format("{}{} GPU{} x {} layer{}", out.empty() ? "" : ", ", b.layers[i].gpus,
                       b.layers[i].gpus == 1 ? "" : "s", n - i, n - i == 1 ? "" : "s");
    i = n;
  }
  return out;
}

std::string to_text(const BurstStats& b) {
  std::string out;
  auto line = [&](std::string_view key, const std::string& value) { out += fmt::format("  {:<24}{}\n", key, value); };
  line("GPUs per layer", widths_text(b));
  line("GPU-time amplification",
       b.amplification_limit > 0.0 ? fmt::format("{:.2f} (limit {:.2f})", b.amplification, b.amplification_limit)
                                   : fmt::format("{:.2f}", b.amplification));
  line("predicted by planner", fmt::format("{:.4f} ms per iteration (simulated {:.4f} ms)", b.predicted_iteration_s * 1e3,
                                           b.foreground_iteration_s * 1e3));
  if (b.background) {
    line("background job", fmt::format("{}, batch {} per GPU, {:.2f} samples/s over the cluster ({:.4f} GPU-s per "
                                       "iteration; foreground slowed x{:.2f})",
                                       b.background_model, b.background_batch, b.background_samples_per_s,
                                       b.background_gpu_s, 1.0 + b.interference));
  }
  line("cluster utilisation", fmt::format("{:.1f}% of GPU time computing{}", 100.0 * b.cluster_utilisation,
                                          b.background ? " (foreground and background)" : ""));
  return out;
}

}  // namespace trainsim::report
