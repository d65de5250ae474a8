// DeepSpeed's CPU checkpointing (parallel.checkpoint_in_cpu), end to end:
// what leaves GPU memory, what the host holds, what the copies cost.
#include <doctest/doctest.h>

#include <utility>

#include "config/load.hpp"
#include "driver/whatif.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace driver_cpu_checkpointing_test {

using namespace trainsim;
using nlohmann::json;

TEST_CASE("checkpoints wait on the host between a micro-batch's passes, one at a time on the GPU") {
  // GPT 1.7B (24 layers, hidden 2304, 2048 tokens) on one DGX A100: pp 2,
  // dp 4, micro-batches of one, fully recomputed. A checkpoint is
  // 2 x 2048 x 2304 = 9,437,184 bytes, 12 a stage a micro-batch. Under 1F1B
  // stage 0 holds two micro-batches between their passes, stage 1 one.
  auto run = [](bool in_cpu) {
    json doc = json::parse(R"({
      "cluster": {"node": "dgx-a100", "nodes": 1},
      "model": "gpt-1.7b",
      "parallel": {"tp": 1, "pp": 2, "dp": 4, "microbatch_size": 1, "global_batch": 32, "recompute": "full"}
    })");
    doc["parallel"]["checkpoint_in_cpu"] = in_cpu;
    const config::Scenario sc = config::load_document(doc, "test.json", ".", {});
    const driver::WhatIf w = driver::simulate(sc);
    return driver::summarize(sc, w, "test.json");
  };
  const report::Summary kept = run(false);
  const report::Summary host = run(true);
  constexpr std::int64_t kCheckpoint = 2LL * 2048 * 2304;
  // GPU peaks: stage 0 sheds its two micro-batches' 24 checkpoints but holds
  // the one in use, 23; stage 1 its 12, less the one, 11.
  CHECK(kept.stages.at(0).peak_memory_bytes - host.stages.at(0).peak_memory_bytes == 23 * kCheckpoint);
  CHECK(kept.stages.at(1).peak_memory_bytes - host.stages.at(1).peak_memory_bytes == 11 * kCheckpoint);
  // The node's 8 GPUs are 4 of each stage: 4 x 2 x 12 + 4 x 12 = 144 checkpoints on its host.
  CHECK(kept.info.host_memory_per_node_bytes == 0.0);
  CHECK(host.info.host_memory_per_node_bytes == doctest::Approx(144.0 * kCheckpoint));
  CHECK(host.info.checkpoint_in_cpu);
  // Each copy holds its pass back: the iteration is longer.
  CHECK(host.iteration_time_s > kept.iteration_time_s);
}

}  // namespace driver_cpu_checkpointing_test
