// lower::SharedLowering and copy_unrun: one lowering, its copies.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "driver/plan_cache.hpp"
#include "driver/whatif.hpp"
#include "lower/shared_lowering.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace lower_shared_lowering_test {

using namespace trainsim;

namespace {

const char* const kGpt17b = TRAINSIM_SOURCE_DIR "/configs/examples/gpt-1.7b-8xa100.json";

// GPT 1.7B on one DGX A100, pp 2 x dp 4, 8 micro-batches a pipeline.
config::Scenario scenario(const std::string& zero, const std::string& recompute,
                          const std::vector<std::string>& more = {}) {
  std::vector<std::string> sets = {"parallel.tp=1", "parallel.pp=2", "parallel.dp=4", "parallel.microbatch_size=1",
                                   "parallel.global_batch=32", "parallel.zero_stage=" + zero,
                                   "parallel.recompute=" + recompute};
  sets.insert(sets.end(), more.begin(), more.end());
  return config::load_file(kGpt17b, sets);
}

// What a sweep lowers with (driver::simulate's options for a sweep's controls).
lower::Options sweep_options(const config::Scenario& sc) {
  lower::Options o;
  o.fidelity = sc.options.full_fidelity ? lower::Fidelity::kFull : lower::Fidelity::kSymmetric;
  o.collectives = sc.options.flow_collectives ? lower::CollectiveModel::kFlow : lower::CollectiveModel::kAnalytic;
  o.merge_bucket_trains = true;
  o.memory_timelines = false;
  o.task_info = false;
  o.comm_slowdown = sc.plan.overlap.compute_slowdown;
  return o;
}

// Every task's start and end, the events, and each GPU's peak memory: equal
// for two runs that are the same run.
void check_same_run(const lower::Simulation& a, const lower::Simulation& b) {
  REQUIRE(a.graph.size() == b.graph.size());
  CHECK(a.timeline.start == b.timeline.start);
  CHECK(a.timeline.end == b.timeline.end);
  CHECK(a.timeline.events == b.timeline.events);
  REQUIRE(a.memory.pools().size() == b.memory.pools().size());
  for (std::size_t q = 0; q < a.memory.pools().size(); ++q) {
    CHECK(a.memory.pools()[q].peak() == b.memory.pools()[q].peak());
  }
}

}  // namespace

TEST_CASE("a copy made before the run runs as the original does") {
  // Full fidelity with flow collectives: every GPU's stream, the topology,
  // the flow network and the collectives (and the compute slowed beside
  // them) are copied, each wired to the copy's others.
  const config::Scenario sc =
      scenario("1", "none", {"options.fidelity=full", "options.collectives=flow"});
  driver::Controls controls;
  driver::Prepared p = driver::prepare(sc, controls);
  const std::unique_ptr<lower::Simulation> original =
      lower::lower(p.checked->program, p.shape, p.checked->wiring, *p.costs, sc.cluster, sc.plan, sweep_options(sc));
  REQUIRE(original->interference != nullptr);
  const std::unique_ptr<lower::Simulation> copy = lower::copy_unrun(*original);
  lower::run(*copy);  // the copy first: the original's state is its own
  lower::run(*original);
  check_same_run(*original, *copy);
  CHECK(copy->timeline.events > 1000);
  // Once run, nothing is left to copy.
  CHECK_THROWS_AS(lower::copy_unrun(*original), std::logic_error);
}

TEST_CASE("a copy for another recompute mode runs as that mode lowered on its own") {
  // ZeRO-1 (the last backward cut by gradient bucket, a bucket train; with
  // two virtual stages a rank's second train ties itself to its first's
  // reductions) and ZeRO-3 (F and B cut by unit, each unit's share of B
  // weighted by I and W, which recompute changes), each recompute mode
  // against none's lowering.
  struct Case {
    std::string zero;
    std::vector<std::string> more;
    std::size_t trains;
  };
  for (const Case& k : {Case{"1", {}, 2}, Case{"1", {"parallel.schedule=interleaved-1f1b", "parallel.vp=2"}, 4},
                        Case{"3", {}, 0}}) {
    const std::string& zero = k.zero;
    CAPTURE(zero);
    CAPTURE(k.more.size());
    driver::PlanCache cache;  // one program for the three, as in a sweep
    driver::Controls controls;
    controls.cache = &cache;
    const config::Scenario none = scenario(zero, "none", k.more);
    driver::Prepared first = driver::prepare(none, controls);
    const lower::Options options = sweep_options(none);
    lower::SharedLowering shared(first.checked->program, first.shape, first.checked->wiring, *first.costs,
                                 none.cluster, none.plan, options);
    for (const std::string rc : {"selective", "full"}) {
      CAPTURE(rc);
      const config::Scenario sc = scenario(zero, rc, k.more);
      const driver::Prepared p = driver::prepare(sc, controls);
      REQUIRE(p.checked == first.checked);
      // Recompute lengthens the backward; full recompute keeps fewer
      // activations (selective's attention core keeps none here: flash
      // attention's).
      CHECK(p.costs->stages[0].input_grad > first.costs->stages[0].input_grad);
      if (rc == "full") CHECK(p.costs->stages[0].activation_bytes < first.costs->stages[0].activation_bytes);
      REQUIRE(shared.fits(*p.costs));
      const std::unique_ptr<lower::Simulation> copy = shared.copy_for(*p.costs);
      REQUIRE(copy != nullptr);
      const std::unique_ptr<lower::Simulation> alone =
          lower::lower(p.checked->program, p.shape, p.checked->wiring, *p.costs, sc.cluster, sc.plan, options);
      lower::run(*copy);
      lower::run(*alone);
      check_same_run(*alone, *copy);
      CHECK(copy->trains.size() == k.trains);  // a train a stage under ZeRO-1
    }
    // The first plan's own simulation is the lowering itself.
    const std::unique_ptr<lower::Simulation> own = shared.take();
    const std::unique_ptr<lower::Simulation> alone = lower::lower(
        first.checked->program, first.shape, first.checked->wiring, *first.costs, none.cluster, none.plan, options);
    lower::run(*own);
    lower::run(*alone);
    check_same_run(*alone, *own);
    CHECK_THROWS_AS((void)shared.copy_for(*first.costs), std::logic_error);
  }
}

TEST_CASE("stage costs that would make other tasks do not fit") {
  driver::PlanCache cache;
  driver::Controls controls;
  controls.cache = &cache;
  const config::Scenario none = scenario("1", "none");
  const driver::Prepared first = driver::prepare(none, controls);
  lower::Options options = sweep_options(none);
  {
    const lower::SharedLowering shared(first.checked->program, first.shape, first.checked->wiring, *first.costs,
                                       none.cluster, none.plan, options);
    CHECK(shared.fits(*first.costs));
    // ZeRO-2 reduce-scatters its gradients where ZeRO-1 all-reduces them: a
    // field a copy does not set.
    const driver::Prepared zero2 = driver::prepare(scenario("2", "none"), controls);
    CHECK_FALSE(shared.fits(*zero2.costs));
    CHECK(shared.copy_for(*zero2.costs) == nullptr);
    // Another stage count.
    workload::StageCosts fewer = *first.costs;
    fewer.stages.pop_back();
    CHECK_FALSE(shared.fits(fewer));
  }
  // A TaskInfo names the communication inside its task, which a copy does not set.
  options.task_info = true;
  const lower::SharedLowering with_info(first.checked->program, first.shape, first.checked->wiring, *first.costs,
                                        none.cluster, none.plan, options);
  CHECK_FALSE(with_info.fits(*first.costs));
}

}  // namespace lower_shared_lowering_test
