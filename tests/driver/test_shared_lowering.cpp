// driver::simulate_alike (lower::SharedLowering): plans that differ only in
// what they recompute, lowered once, each simulated from a copy with its
// own times and memory, give what each lowered on its own gives.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "config/load.hpp"
#include "driver/plan_cache.hpp"
#include "driver/whatif.hpp"
#include "report/summary.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace driver_shared_lowering_test {

using namespace trainsim;

namespace {

const char* const kGpt17b = TRAINSIM_SOURCE_DIR "/configs/examples/gpt-1.7b-8xa100.json";

driver::Controls sweep_like() {
  driver::Controls controls;
  controls.task_info = false;
  controls.merge_bucket_trains = true;
  controls.memory_timelines = false;
  return controls;
}

}  // namespace

TEST_CASE("plans simulated alike give what each simulated on its own gives") {
  // GPT 1.7B, pp 2 x dp 4, every recompute mode of four schedules: 1F1B,
  // ZB-H1 (I and W apart), ZB-1P (its order from the stages' times: a
  // program of its own for each mode, equal or not) and DualPipe (two
  // copies of each stage, its micro-batches from both ends); ZeRO-1 and
  // ZeRO-3 (not under DualPipe).
  for (const std::string zero : {"1", "3"}) {
    for (const std::string schedule : {"1f1b", "zb-h1", "zb-1p", "dualpipe"}) {
      if (zero == "3" && schedule == "dualpipe") continue;
      CAPTURE(zero);
      CAPTURE(schedule);
      std::vector<config::Scenario> scenarios;
      for (const std::string rc : {"none", "selective", "full"}) {
        scenarios.push_back(config::load_file(
            kGpt17b, {"parallel.tp=1", "parallel.pp=2", "parallel.dp=4", "parallel.microbatch_size=1",
                      "parallel.global_batch=16", "parallel.zero_stage=" + zero, "parallel.schedule=" + schedule,
                      "parallel.recompute=" + rc}));
      }
      // One program for the three (a sweep's plan cache hands it out).
      driver::PlanCache cache;
      driver::Controls controls = sweep_like();
      controls.cache = &cache;
      std::vector<const config::Scenario*> alike;
      std::vector<driver::Prepared> prepared;
      for (const config::Scenario& sc : scenarios) {
        alike.push_back(&sc);
        prepared.push_back(driver::prepare(sc, controls));
      }
      std::vector<driver::WhatIf> together(scenarios.size());
      driver::simulate_alike(alike, std::move(prepared), controls,
                             [&](std::size_t i, driver::WhatIf&& w) { together[i] = std::move(w); });
      // Full recompute redoes every forward in the backward.
      CHECK(together[2].sim->timeline.makespan > together[0].sim->timeline.makespan);
      for (std::size_t i = 0; i < scenarios.size(); ++i) {
        CAPTURE(i);
        const driver::WhatIf alone = driver::simulate(scenarios[i], controls);
        const lower::Simulation& a = *alone.sim;
        const lower::Simulation& b = *together[i].sim;
        REQUIRE(a.graph.size() == b.graph.size());
        bool same_durations = true;
        for (core::TaskId t = 0; t < a.graph.size(); ++t) {
          same_durations = same_durations && a.graph.task(t).duration == b.graph.task(t).duration;
        }
        CHECK(same_durations);
        const report::Summary sa = report::summarize(a, {}, report::Detail::kTotals);
        const report::Summary sb = report::summarize(b, {}, report::Detail::kTotals);
        CHECK(sa.iteration_time_s == sb.iteration_time_s);
        CHECK(sa.peak_memory_bytes == sb.peak_memory_bytes);
        CHECK(sa.bubble_fraction == sb.bubble_fraction);
      }
    }
  }
}

}  // namespace driver_shared_lowering_test
