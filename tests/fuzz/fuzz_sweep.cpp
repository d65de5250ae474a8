// libFuzzer target: bytes as a sweep file, through what `trainsim sweep`
// does with it: parse_json -> parse_spec -> enumerate, then the first two
// plans simulated and summarized, and the ranking written as CSV and JSON.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/load.hpp"
#include "fuzz_outcomes.hpp"
#include "sweep/report.hpp"
#include "sweep/space.hpp"
#include "sweep/spec.hpp"

using namespace trainsim;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > fuzz::kMaxInputBytes) return -1;  // not kept in the corpus
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::with_documented_errors([&] {
    const sweep::Spec spec = sweep::parse_spec(config::parse_json(text, "fuzz.json"), "fuzz.json", fuzz::base_dir());
    const sweep::Space space = sweep::enumerate(spec);
    sweep::Report report;
    report.sweep = "fuzz.json";
    report.sweep_hash = spec.fingerprint;
    report.combinations = space.combinations;
    report.valid_plans = static_cast<long long>(space.plans.size());
    report.invalid = space.invalid;
    for (std::size_t i = 0; i < space.plans.size() && i < 2; ++i) {
      const sweep::Candidate& c = space.plans[i];
      config::Scenario sc = spec.settings[static_cast<std::size_t>(c.cluster)];
      sc.plan = c.plan;
      sweep::Result r;
      r.index = c.index;
      r.key = c.key;
      r.cluster = spec.cluster_labels[static_cast<std::size_t>(c.cluster)];
      r.plan = c.plan;
      fuzz::with_documented_errors([&] {
        const driver::WhatIf w = driver::simulate(sc, fuzz::controls());
        const report::Summary s = driver::summarize(sc, w, "fuzz.json");
        r.status = s.oom ? sweep::Status::kOom : sweep::Status::kOk;
        r.iteration_time_s = s.iteration_time_s;
        r.peak_memory_bytes = s.peak_memory_bytes;
      });
      report.results.push_back(r);
    }
    sweep::rank(report.results);
    (void)sweep::to_csv(report);
    (void)sweep::to_json(report).dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
  });
  return 0;
}
