// lower::Options::merge_bucket_trains (what a sweep runs): a stage's
// gradient buckets as a train (hw/bucket_train.hpp), its last backward's
// pieces after the first as one task and its reductions as one collective,
// give the same times and memory as a task each.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "config/load.hpp"
#include "driver/whatif.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace driver_bucket_trains_test {

using namespace trainsim;
using lower::TaskKind;

namespace {

const char* const kGpt17b = TRAINSIM_SOURCE_DIR "/configs/examples/gpt-1.7b-8xa100.json";

driver::WhatIf run(const std::vector<std::string>& overrides, bool merge, const char* config = kGpt17b) {
  driver::Controls controls;
  controls.merge_bucket_trains = merge;
  return driver::simulate(config::load_file(config, overrides), controls);
}

int reductions(const driver::WhatIf& w) {
  int n = 0;
  for (const auto& info : w.sim->info) n += info.kind == TaskKind::kGradReduce;
  return n;
}

// Per simulated GPU: the time its compute stream is busy, and its peak memory.
std::vector<std::int64_t> busy_ps(const driver::WhatIf& w) {
  std::vector<std::int64_t> busy(w.sim->gpu_of_rank.size(), 0);
  for (core::TaskId id = 0; id < w.sim->graph.size(); ++id) {
    const lower::TaskInfo& info = w.sim->info[id];
    if (info.kind == TaskKind::kCompute || info.kind == TaskKind::kOptimizer) {
      busy[static_cast<std::size_t>(info.rank)] += (w.sim->timeline.end[id] - w.sim->timeline.start[id]).ps();
    }
  }
  return busy;
}
std::vector<std::int64_t> peaks(const driver::WhatIf& w) {
  std::vector<std::int64_t> p;
  for (const hw::MemoryPool& pool : w.sim->memory.pools()) p.push_back(pool.peak());
  return p;
}

// Runs the plan both ways; the figures agree to the picosecond and the byte.
// Returns the reductions (merged, one per bucket).
std::pair<int, int> both_ways(const std::vector<std::string>& plan, const char* config = kGpt17b) {
  const driver::WhatIf merged = run(plan, true, config), each = run(plan, false, config);
  CHECK(merged.sim->timeline.makespan == each.sim->timeline.makespan);
  CHECK(busy_ps(merged) == busy_ps(each));
  CHECK(peaks(merged) == peaks(each));
  return {reductions(merged), reductions(each)};
}

// GPT 1.7B (24 layers) on 4 DGX A100s: pp 2 x dp 16, buckets of 10 MiB
// (about 170 a stage).
const std::vector<std::string> kPlan = {"cluster.nodes=4", "parallel.tp=1", "parallel.pp=2", "parallel.dp=16",
                                        "parallel.microbatch_size=1", "parallel.global_batch=32",
                                        "parallel.grad_bucket_mib=10"};

std::vector<std::string> with(std::vector<std::string> plan, const std::vector<std::string>& more) {
  plan.insert(plan.end(), more.begin(), more.end());
  return plan;
}

}  // namespace

TEST_CASE("a stage's buckets run as a train with the times and memory of a task per bucket") {
  SUBCASE("one stage a rank: one reduction a stage") {
    const auto [merged, each] = both_ways(kPlan);
    CHECK(merged == 2);
    CHECK(each > 300);
  }
  SUBCASE("the reductions shorter than the pieces of backward they run beside") {
    // One DGX A100, dp 8 over NVLink: a 10 MiB bucket reduces in tens of
    // microseconds, a fraction of its piece of the backward.
    const auto [merged, each] = both_ways({"cluster.nodes=1", "parallel.tp=1", "parallel.pp=1", "parallel.dp=8",
                                           "parallel.microbatch_size=1", "parallel.global_batch=8",
                                           "parallel.grad_bucket_mib=10"});
    CHECK(merged == 1);
    CHECK(each > 300);
  }
  SUBCASE("two stages a rank, the second's train started while the first's reductions run") {
    const auto [merged, each] =
        both_ways(with(kPlan, {"parallel.vp=2", "parallel.schedule=breadth-first", "parallel.global_batch=64"}));
    CHECK(merged == 4);
    CHECK(each > 300);
  }
  SUBCASE("interleaved 1F1B") {
    const auto [merged, each] =
        both_ways(with(kPlan, {"parallel.vp=2", "parallel.schedule=interleaved-1f1b", "parallel.global_batch=64"}));
    CHECK(merged == 4);
    CHECK(each > 300);
  }
}

TEST_CASE("a train whose premise fails as it runs is lowered again, a task per bucket") {
  // DualPipe, GPT-3 175B at pp 2 (tp 8, dp 64, micro-batches of 2): the
  // all-reduce that adds a stage's gradients to its copy's on the other
  // rank starts, once that rank's half is in, while the next stage's
  // pieces run: a collective whose start no play foresees.
  const auto [merged, each] =
      both_ways({"parallel.schedule=dualpipe", "parallel.pp=2", "parallel.tp=8", "parallel.dp=64",
                 "parallel.microbatch_size=2", "parallel.zero_stage=0", "parallel.recompute=none"},
                TRAINSIM_SOURCE_DIR "/configs/examples/gpt3-175b-1024xa100.json");
  CHECK(each > 300);
  CHECK(merged == each);
}

TEST_CASE("DualPipe: a stage's train plays its pieces beside the reductions of the rank's other stage") {
  // GPT-3 175B on 1,024 A100s, pp 4 (8 stages, two a rank), tp 8, dp 32:
  // a rank's second stage ends its backwards while the first's reductions
  // still run, and its own wait behind the first's sum with its copy
  // (BucketTrain::beside_train). Eight stages: eight trains' reductions and
  // eight sums with a copy.
  const auto [merged, each] = both_ways({"parallel.schedule=dualpipe", "parallel.tp=8", "parallel.pp=4",
                                         "parallel.dp=32", "parallel.microbatch_size=4", "parallel.zero_stage=0"},
                                        TRAINSIM_SOURCE_DIR "/configs/examples/gpt3-175b-1024xa100.json");
  CHECK(merged == 16);
  CHECK(each > 300);
}

TEST_CASE("DualPipe: a stage's train plays its pieces beside the sum with its copy, its end known as it starts") {
  // GPT 1.7B at pp 2: a rank's second stage ends its backwards while the
  // first stage's sum with its copy runs (CollectiveRunner::set_gate).
  const auto [merged, each] = both_ways(with(kPlan, {"parallel.schedule=dualpipe", "parallel.global_batch=64"}));
  CHECK(merged == 8);
  CHECK(each > 300);
}

TEST_CASE("buckets stay a task each where a train's times are not known before it runs") {
  for (const char* key : {"options.fidelity=full", "options.collectives=flow", "options.overlap_grad_reduce=false"}) {
    CAPTURE(key);
    const auto [merged, each] = both_ways(with(kPlan, {key}));
    CHECK(each > 300);
    CHECK(merged == each);
  }
}

}  // namespace driver_bucket_trains_test
