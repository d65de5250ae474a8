// lower::Options::task_info off (what a sweep runs): each task keeps a
// TaskBrief (8 bytes) in place of its TaskInfo (48), and the summary's
// totals read from the briefs are those read from the infos.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "driver/whatif.hpp"
#include "report/summary.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace driver_task_briefs_test {

using namespace trainsim;

namespace {

const char* const kGpt17b = TRAINSIM_SOURCE_DIR "/configs/examples/gpt-1.7b-8xa100.json";

driver::WhatIf run(const std::vector<std::string>& overrides, bool task_info) {
  driver::Controls controls;
  controls.task_info = task_info;
  return driver::simulate(config::load_file(kGpt17b, overrides), controls);
}

}  // namespace

TEST_CASE("the totals from each task's brief are those from its TaskInfo") {
  // GPT 1.7B on one DGX A100, pp 2 x dp 4: pipeline sends, gradient
  // reductions and the optimizer step. ZeRO-3 adds the parameter gathers
  // (on the gather stream) and reduce-scatters.
  for (const std::string zero : {"1", "3"}) {
    CAPTURE(zero);
    const std::vector<std::string> plan = {"parallel.tp=1", "parallel.pp=2", "parallel.dp=4",
                                           "parallel.microbatch_size=1", "parallel.global_batch=16",
                                           "parallel.zero_stage=" + zero};
    const driver::WhatIf full = run(plan, true), brief = run(plan, false);
    REQUIRE(brief.sim->info.empty());
    REQUIRE(brief.sim->brief.size() == brief.sim->graph.size());
    CHECK(full.sim->brief.empty());
    // A task's brief is what its TaskInfo says of it.
    REQUIRE(full.sim->info.size() == brief.sim->brief.size());
    bool gathers = false;
    for (core::TaskId id = 0; id < full.sim->graph.size(); ++id) {
      const lower::TaskInfo& ti = full.sim->info[id];
      const lower::TaskBrief& b = brief.sim->brief[id];
      CHECK(b.kind == ti.kind);
      CHECK(b.rank == ti.rank);
      CHECK(b.regather == ti.regather);
      CHECK(b.gather_stream == ti.on_gather_stream());
      gathers = gathers || b.gather_stream;
    }
    CHECK(gathers == (zero == "3"));
    const report::Summary a = report::summarize(*full.sim, {}, report::Detail::kTotals);
    const report::Summary b = report::summarize(*brief.sim, {}, report::Detail::kTotals);
    CHECK(a.iteration_time_s == b.iteration_time_s);
    CHECK(a.bubble_fraction == b.bubble_fraction);
    CHECK(a.bubble_fraction > 0.0);  // two stages: a pipeline bubble
    CHECK(a.peak_memory_bytes == b.peak_memory_bytes);
    CHECK(a.grad_all_reduce_s == b.grad_all_reduce_s);
    CHECK(a.param_all_gather_s == b.param_all_gather_s);
    CHECK(a.param_gather_stream == b.param_gather_stream);
    // What the briefs leave out, the full detail needs.
    CHECK_THROWS_AS(report::summarize(*brief.sim, {}, report::Detail::kFull), std::logic_error);
  }
}

}  // namespace driver_task_briefs_test
