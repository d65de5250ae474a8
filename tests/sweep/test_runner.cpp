#include <doctest/doctest.h>

#include "sweep/bound.hpp"
#include "sweep/report.hpp"
#include "sweep/runner.hpp"
#include "sweep_fixture.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace sweep_runner_test {

using namespace trainsim;
using sweep::testing::small_spec;

namespace {

// 10 (tp, pp) splits x vp 1-2 x micro-batch 1, 2, 4 x two schedules x ZeRO 0, 1 x recompute none, full.
sweep::Spec spec() {
  return small_spec(R"({"vp": [1, 2], "microbatch_size": [1, 2, 4], "schedule": ["1f1b", "interleaved-1f1b"],
                        "zero_stage": [0, 1], "recompute": ["none", "full"]})");
}

std::string csv_of(const sweep::Outcome& out) {
  sweep::Report r;
  r.results = out.results;
  return sweep::to_csv(r);
}

}  // namespace

TEST_CASE("the same results and ranking whatever the number of threads") {
  const sweep::Spec s = spec();
  const sweep::Space space = sweep::enumerate(s);
  sweep::RunOptions one;
  one.jobs = 1;
  sweep::RunOptions four;
  four.jobs = 4;
  const sweep::Outcome a = sweep::run(s, space.plans, one);
  const sweep::Outcome b = sweep::run(s, space.plans, four);
  CHECK(a.results.size() == space.plans.size());
  CHECK(a.pruned == 0);
  CHECK(a.not_run == 0);
  CHECK(csv_of(a) == csv_of(b));
  // Ranked: times never decrease among fitting plans.
  for (std::size_t i = 1; i < a.results.size(); ++i) {
    if (a.results[i].status == sweep::Status::kOk && a.results[i - 1].status == sweep::Status::kOk) {
      CHECK(a.results[i - 1].iteration_time_s <= a.results[i].iteration_time_s);
    }
  }
}

TEST_CASE("the bound never exceeds the simulated iteration time") {
  const sweep::Spec s = spec();
  const sweep::Space space = sweep::enumerate(s);
  sweep::BoundCache cache;
  for (const sweep::Candidate& c : space.plans) {
    const sweep::Result r = sweep::run_one(s, c);
    REQUIRE(r.status != sweep::Status::kFailed);
    const double bound = cache.bound_s(c.cluster, s.settings[c.cluster], c.plan);
    CHECK(bound > 0.0);
    CHECK(bound <= r.iteration_time_s);
  }
}

TEST_CASE("DualPipe's bound: each rank's two copies see half the micro-batches, and it starts with its first stage") {
  // Llama 2 7B (untied: DualPipe takes it) on 8 GPUs, pp 2 and 4: dualpipe
  // (vp 1) and dualpipev (vp 2) beside 1F1B. Counting every micro-batch
  // through both of a rank's copies would double its work and put the
  // bound above the simulated time.
  const nlohmann::json doc = nlohmann::json::parse(R"({"model": "llama2-7b",
      "cluster": {"node": "dgx-a100", "nodes": 1}, "global_batch": 64,
      "axes": {"tp": [1, 2], "pp": [2, 4], "vp": [1, 2], "schedule": ["1f1b", "dualpipe", "dualpipev"]}})");
  const sweep::Spec s = sweep::parse_spec(doc, "dual.json", ".");
  const sweep::Space space = sweep::enumerate(s);
  sweep::BoundCache cache;
  int dual = 0;
  for (const sweep::Candidate& c : space.plans) {
    CAPTURE(c.plan.schedule);
    CAPTURE(c.plan.pp);
    const sweep::Result r = sweep::run_one(s, c);
    REQUIRE(r.status != sweep::Status::kFailed);
    dual += c.plan.schedule == "dualpipe" ? 1 : 0;
    const double bound = cache.bound_s(c.cluster, s.settings[c.cluster], c.plan);
    CHECK(bound > 0.0);
    CHECK(bound <= r.iteration_time_s);
  }
  CHECK(dual > 0);
}

TEST_CASE("pruning keeps the top K exact, whatever the threads") {
  const sweep::Spec s = spec();
  const sweep::Space space = sweep::enumerate(s);
  sweep::RunOptions all;
  all.jobs = 2;
  const sweep::Outcome full = sweep::run(s, space.plans, all);
  for (int k : {1, 3, 10}) {
    sweep::RunOptions pruned;
    pruned.jobs = 2;
    pruned.prune_top = k;
    pruned.batch = 8;  // small batches so that the threshold moves often
    const sweep::Outcome p = sweep::run(s, space.plans, pruned);
    CHECK(p.pruned > 0);
    std::size_t marked = 0;
    for (const auto& r : p.results) marked += r.status == sweep::Status::kPruned ? 1 : 0;
    CHECK(marked == p.pruned);
    for (int i = 0; i < k; ++i) {
      CHECK(p.results[i].key == full.results[i].key);
      CHECK(p.results[i].iteration_time_s == full.results[i].iteration_time_s);
    }
    pruned.jobs = 1;
    CHECK(csv_of(sweep::run(s, space.plans, pruned)) == csv_of(p));
  }
}

TEST_CASE("a stop request: plans not started come back as not run") {
  const sweep::Spec s = spec();
  const sweep::Space space = sweep::enumerate(s);
  std::atomic<bool> stop{true};
  sweep::RunOptions o;
  o.stop = &stop;
  const sweep::Outcome out = sweep::run(s, space.plans, o);
  CHECK(out.not_run == space.plans.size());
  CHECK(out.interrupted);
}

TEST_CASE("the bound of a context-parallel plan is its own, whichever plan filled the cache first") {
  // tp 2 on 8 GPUs, cp 1 (dp 4) and cp 2 (dp 2): the same tp, pp, vp and
  // micro-batch, so only cp tells their per-micro-batch costs apart.
  const sweep::Spec s = sweep::testing::small_spec(R"({"tp": 2, "pp": 1, "cp": [1, 2]})");
  const sweep::Space space = sweep::enumerate(s);
  REQUIRE(space.plans.size() == 2);
  for (const bool cp_first : {false, true}) {
    sweep::BoundCache cache;
    const auto& first = space.plans[cp_first ? 1 : 0];
    const auto& second = space.plans[cp_first ? 0 : 1];
    (void)cache.bound_s(first.cluster, s.settings[first.cluster], first.plan);
    const double bound = cache.bound_s(second.cluster, s.settings[second.cluster], second.plan);
    CHECK(bound <= sweep::run_one(s, second).iteration_time_s);
  }
}

}  // namespace sweep_runner_test
