// DeepSpeed's CPU checkpointing (Plan::checkpoint_in_cpu): full recompute's
// checkpoints wait on the host, and each crosses the host link twice with a
// blocking copy.
#include <doctest/doctest.h>

#include "workload/stage_costs.hpp"
#include "small_setups.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_cpu_checkpointing_test {

using namespace trainsim;
using namespace trainsim::workload;
using trainsim::workload::testing::small_cluster;
using trainsim::workload::testing::small_gpt;

namespace {
// small_gpt (8 layers, hidden 1024, 1024 tokens) on one GPU, a micro-batch
// of one, fully recomputed; small_cluster with a 20 GB/s host link.
Plan plan(bool in_cpu) {
  Plan p;
  p.global_batch = 1;
  p.recompute = Recompute::kFull;
  p.checkpoint_in_cpu = in_cpu;
  return p;
}
hw::ClusterSpec with_host_link() {
  hw::ClusterSpec c = small_cluster();
  c.node.pcie_gb_per_s = 20;
  c.node.host_memory_gb = 1000;
  return c;
}
// A layer's checkpoint, its 16-bit input: 2 x 1024 tokens x 1024 = 2,097,152
// bytes, 104.8576 us over 20 GB/s.
constexpr double kCheckpoint = 2.0 * 1024 * 1024;
constexpr double kCopy = kCheckpoint / 20e9;
}  // namespace

TEST_CASE("each recomputed layer's checkpoint waits on the host, and crosses the host link twice, blocking") {
  const TransformerSpec m = small_gpt();
  const hw::ClusterSpec c = with_host_link();
  const StageCost on_gpu = stage_costs(m, plan(false), c).stages[0];
  const StageCost on_host = stage_costs(m, plan(true), c).stages[0];
  // The forward copies each of the 8 checkpoints out and the backward each
  // back in, the whole copy added: 8 x 104.8576 us = 838.861 us a pass.
  CHECK((on_host.forward - on_gpu.forward).to_seconds() == doctest::Approx(8 * kCopy).epsilon(1e-9));
  CHECK((on_host.input_grad - on_gpu.input_grad).to_seconds() == doctest::Approx(8 * kCopy).epsilon(1e-9));
  CHECK(on_host.weight_grad == on_gpu.weight_grad);
  // The host holds the 8 checkpoints, 16,777,216 bytes, between the
  // passes; the GPU keeps none of them then, and holds the one a layer is
  // using while a pass runs.
  CHECK(on_host.host_checkpoint_bytes == 8 * 2'097'152);
  CHECK(on_gpu.activation_bytes - on_host.activation_bytes == 8 * 2'097'152);
  CHECK(on_host.checkpoint_transient_bytes == 2'097'152);
  CHECK(on_gpu.host_checkpoint_bytes == 0);
  CHECK(on_gpu.checkpoint_transient_bytes == 0);
}

TEST_CASE("with only some layers recomputed, only their checkpoints go") {
  const TransformerSpec m = small_gpt();
  const hw::ClusterSpec c = with_host_link();
  Plan p = plan(false);
  p.recompute_layers = 3;
  const StageCost on_gpu = stage_costs(m, p, c).stages[0];
  p.checkpoint_in_cpu = true;
  const StageCost on_host = stage_costs(m, p, c).stages[0];
  // 3 checkpoints: 3 copies a pass, 3 on the host and off the GPU between
  // the passes, one on the GPU while a pass runs.
  CHECK((on_host.forward - on_gpu.forward).to_seconds() == doctest::Approx(3 * kCopy).epsilon(1e-9));
  CHECK((on_host.input_grad - on_gpu.input_grad).to_seconds() == doctest::Approx(3 * kCopy).epsilon(1e-9));
  CHECK(on_host.host_checkpoint_bytes == 3 * 2'097'152);
  CHECK(on_gpu.activation_bytes - on_host.activation_bytes == 3 * 2'097'152);
  CHECK(on_host.checkpoint_transient_bytes == 2'097'152);
}

TEST_CASE("under ZeRO-3 each layer's unit carries its own copies") {
  const TransformerSpec m = small_gpt();
  const hw::ClusterSpec c = with_host_link();
  Plan p = plan(false);
  p.dp = 2;
  p.global_batch = 2;
  p.zero_stage = 3;
  const StageCost on_gpu = stage_costs(m, p, c).stages[0];
  p.checkpoint_in_cpu = true;
  const StageCost on_host = stage_costs(m, p, c).stages[0];
  // Units: the embedding, 8 layers, the head. A layer unit's forward and
  // backward each take one copy more; the embedding's and the head's none.
  REQUIRE(on_host.shard_units.size() == 10);
  auto forward_of = [](const StageCost& s, std::size_t u) { return s.shard_units[u].forward_share * s.forward.to_seconds(); };
  auto input_grad_of = [](const StageCost& s, std::size_t u) {
    return s.shard_units[u].input_grad_share * s.input_grad.to_seconds();
  };
  for (std::size_t u = 1; u <= 8; ++u) {
    CAPTURE(u);
    CHECK(forward_of(on_host, u) - forward_of(on_gpu, u) == doctest::Approx(kCopy).epsilon(1e-6));
    CHECK(input_grad_of(on_host, u) - input_grad_of(on_gpu, u) == doctest::Approx(kCopy).epsilon(1e-6));
  }
  CHECK(forward_of(on_host, 9) == doctest::Approx(forward_of(on_gpu, 9)));
}

}  // namespace workload_cpu_checkpointing_test
