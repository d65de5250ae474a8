#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "config/load.hpp"
#include "driver/whatif.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace driver_work_limits_test {

using namespace trainsim;

namespace {

const char* kDefault = TRAINSIM_SOURCE_DIR "/configs/examples/gpt-1.7b-8xa100.json";

config::Scenario scenario(const std::vector<std::string>& overrides) { return config::load_file(kDefault, overrides); }

driver::Controls no_limits() {
  driver::Controls c;
  c.limits = {};
  return c;
}

std::string refusal(const std::vector<std::string>& overrides, const lower::WorkLimits& limits) {
  driver::Controls c;
  c.limits = limits;
  try {
    driver::simulate(scenario(overrides), c);
  } catch (const lower::WorkTooLarge& e) {
    return e.what();
  }
  return "not refused";
}

}  // namespace

TEST_CASE("the work estimate foresees the tasks lowering makes") {
  // Counted from the program before anything is built: never fewer than the
  // graph gets (it is what refuses work too large), and not far more.
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"options.fidelity=full"},
      {"options.fidelity=full", "options.collectives=flow"},
      {"parallel.tp=1", "parallel.dp=2", "parallel.zero_stage=3"},
      {"parallel.tp=1", "parallel.dp=2", "parallel.zero_stage=1", "options.fidelity=full"},
      {"parallel.schedule=interleaved-1f1b", "parallel.vp=2"},
      {"parallel.schedule=breadth-first", "parallel.vp=2"},
      {"parallel.schedule=zb-v", "parallel.vp=2"},
      {"parallel.schedule=2bp", "parallel.twobp_concat=true"},
      {"parallel.schedule=gpipe", "parallel.grad_bucket_mib=1"},
      // DeepSpeed's second gathers, a recomputed unit a backward.
      {"parallel.tp=1", "parallel.dp=2", "parallel.zero_stage=3", "parallel.recompute=full",
       "parallel.fsdp_max_reuse_distance=1e6", "options.fidelity=full"},
  };
  for (const auto& overrides : cases) {
    CAPTURE(overrides.size() > 0 ? overrides.back() : std::string("defaults"));
    const driver::WhatIf w = driver::simulate(scenario(overrides), no_limits());
    const double made = static_cast<double>(w.sim->graph.size());
    CHECK(w.sim->estimate.tasks >= made);
    CHECK(w.sim->estimate.tasks <= 1.5 * made);
    CHECK(w.sim->estimate.gpus == static_cast<long long>(w.sim->gpu_of_rank.size()));
  }
  // MoE plans whose buckets and gathers run twice (over dp and over edp),
  // and whose dispatch and combine run as tasks with flow collectives; and
  // under ZeRO-3, whose MoE units' gathers and scatters run twice with flow
  // collectives.
  const char* moe = TRAINSIM_SOURCE_DIR "/tests/fuzz/seeds/whatif/moe-flow-exchanges.json";
  const std::vector<std::vector<std::string>> sharding = {
      {}, {"parallel.zero_stage=3", "parallel.distributed_optimizer=false", "options.overlap_param_gather=false"}};
  for (const char* fidelity : {"options.fidelity=symmetric", "options.fidelity=full"}) {
    for (const char* collectives : {"options.collectives=flow", "options.collectives=analytic"}) {
      for (const std::vector<std::string>& zero : sharding) {
        CAPTURE(fidelity);
        CAPTURE(collectives);
        CAPTURE(zero.size());
        std::vector<std::string> overrides = zero;
        overrides.push_back(fidelity);
        overrides.push_back(collectives);
        const driver::WhatIf w = driver::simulate(config::load_file(moe, overrides), no_limits());
        const double made = static_cast<double>(w.sim->graph.size());
        CHECK(w.sim->estimate.tasks >= made);
        CHECK(w.sim->estimate.tasks <= 1.5 * made);
      }
    }
  }
}

TEST_CASE("work past the limits is refused before it is built, saying what to do instead") {
  // The default example lowers to 234 tasks (one pipeline of 4 GPUs); in
  // full fidelity, 2 copies of it.
  const std::string symmetric = refusal({}, {100, 0.0});
  CHECK(symmetric.rfind("simulating one pipeline of 4 GPUs takes about 238 tasks, more than the 100 allowed; use "
                        "fewer micro-batches",
                        0) == 0);
  const std::string full = refusal({"options.fidelity=full"}, {100, 0.0});
  CHECK(full.rfind("simulating every one of 8 GPUs takes about", 0) == 0);
  CHECK(full.find("use options.fidelity = \"symmetric\"") != std::string::npos);
  // A memory limit: 238 tasks at 144 bytes a task and 4 GPUs at 4,096 bytes
  // a GPU are 34,272 + 16,384 = 50,656 bytes, past 1 KiB, and just past 50,655.
  const std::string memory = refusal({}, {0, 1024.0});
  CHECK(memory.find("GiB of memory, more than the 0.0 GiB this machine has available") != std::string::npos);
  CHECK(refusal({}, {0, 50655.0}) != "not refused");
  // Within the limits nothing is refused.
  CHECK(refusal({}, {238, 50656.0}) == "not refused");
}

TEST_CASE("progress is reported while the graph is built and while it runs") {
  // Full fidelity of the default example: tp 2 x dp 1 = 2 copies of the pipeline.
  std::vector<std::pair<std::size_t, std::size_t>> built;
  driver::Controls c = no_limits();
  c.lowering_progress = [&](std::size_t done, std::size_t total) { built.emplace_back(done, total); };
  driver::simulate(scenario({"options.fidelity=full"}), c);
  CHECK(built == std::vector<std::pair<std::size_t, std::size_t>>{{1, 2}, {2, 2}});
}

TEST_CASE("flow steps grow linearly with the replicas once rings pass kMaxRingSteps") {
  // tp 1, pp 4: the data-parallel rings have dp members. A ring step starts n
  // flows; an all-reduce takes min(2 (n - 1), 64) steps, a gather or scatter
  // min(n - 1, 64). dp 64: 64 x 64 = 4,096 and 64 x 63 = 4,032 flows; dp 128:
  // 128 x 64 = 8,192 for both. Whatever the mix of the two, the estimate
  // doubles (ratio 2.0 to 2.032); uncapped, it would grow 128 x 127 / (64 x 63)
  // = 4.03 times.
  const auto steps = [](int dp) {
    return driver::simulate(scenario({"parallel.tp=1", "parallel.dp=" + std::to_string(dp),
                                      "cluster.nodes=" + std::to_string(dp / 2),
                                      "parallel.global_batch=" + std::to_string(4 * dp), "options.collectives=flow"}),
                            no_limits())
        .sim->estimate.flow_steps;
  };
  const double ratio = steps(128) / steps(64);
  CHECK(ratio >= 2.0 - 1e-9);
  CHECK(ratio <= 2.0 * 64 / 63 + 1e-9);
}

TEST_CASE("flow collectives count their flow steps, and too many are refused") {
  // dp 2 on the default example's 8 GPUs (tp 1, pp 4): each data-parallel
  // collective is a ring of 2 replicas. Analytic collectives start no flows.
  const std::vector<std::string> plan = {"parallel.tp=1", "parallel.dp=2", "parallel.global_batch=64"};
  std::vector<std::string> flows = plan;
  flows.push_back("options.collectives=flow");
  CHECK(driver::simulate(scenario(plan), no_limits()).sim->estimate.flow_steps == 0.0);
  CHECK(driver::simulate(scenario(flows), no_limits()).sim->estimate.flow_steps > 0.0);
  lower::WorkLimits few;
  few.flow_steps = 1.0;
  const std::string why = refusal(flows, few);
  CHECK(why.find("flow steps in its data-parallel and expert-parallel collectives") != std::string::npos);
  CHECK(why.find("use options.collectives = \"analytic\"") != std::string::npos);
  CHECK(refusal(plan, few) == "not refused");
}

}  // namespace driver_work_limits_test
