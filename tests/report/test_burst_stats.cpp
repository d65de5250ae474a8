#include <doctest/doctest.h>

#include "report/burst_stats.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace report_burst_stats_test {

using namespace trainsim::report;

TEST_CASE("burst stats: runs of equal widths, and the background only when there is one") {
  BurstStats b;
  b.mode = "burst (planned)";
  for (int w : {16, 16, 16, 4, 1, 1}) b.layers.push_back({"l", w, 0.001, 1.0});
  CHECK(widths_text(b) == "16 GPUs x 3 layers, 4 GPUs x 1 layer, 1 GPU x 2 layers");
  b.amplification = 1.5;
  b.amplification_limit = 2.0;
  b.cluster_utilisation = 0.5;
  const auto j = to_json(b);
  CHECK(j["background"].is_null());
  CHECK(j["layers"].size() == 6);
  CHECK(j["amplification_limit"] == 2.0);
  CHECK(to_text(b).find("background job") == std::string::npos);
  CHECK(to_text(b).find("1.50 (limit 2.00)") != std::string::npos);
  b.background = true;
  b.background_model = "ResNet-50";
  b.background_batch = 32;
  b.background_samples_per_s = 1234.5;
  CHECK(to_json(b)["background"]["samples_per_s"] == 1234.5);
  CHECK(to_text(b).find("ResNet-50, batch 32 per GPU, 1234.50 samples/s") != std::string::npos);
}

}  // namespace report_burst_stats_test
