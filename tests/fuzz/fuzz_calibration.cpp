// libFuzzer target: bytes as a calibration profile, through what a config's
// cluster.calibration does with it: parse_json -> read_calibration_profile ->
// the node calibrated -> the default example simulated on it -> the
// calibration report that sets the profile beside the presets.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/calibration_load.hpp"
#include "config/load.hpp"
#include "fuzz_outcomes.hpp"
#include "report/calibration_report.hpp"

using namespace trainsim;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > fuzz::kMaxInputBytes) return -1;  // not kept in the corpus
  const std::string text(reinterpret_cast<const char*>(data), size);
  static const config::Scenario example = config::load_file(fuzz::base_dir() + "/gpt-1.7b-8xa100.json");
  fuzz::with_documented_errors([&] {
    const auto profile = config::read_calibration_profile(config::parse_json(text, "fuzz.json"), "fuzz.json");
    config::Scenario sc = example;
    sc.cluster.node = config::calibrated(sc.cluster.node, profile);
    const driver::WhatIf w = driver::simulate(sc, fuzz::controls());
    (void)report::to_text(driver::summarize(sc, w, "fuzz.json"));
    (void)report::calibration_report(*profile, {example.cluster.node.gpu.name, "fuzz", "dgx-a100", example.cluster.node});
  });
  return 0;
}
