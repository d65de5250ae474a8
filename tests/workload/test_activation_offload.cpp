// Megatron-Core's fine-grained activation offloading (Plan::offload_modules):
// the bytes each MoE layer sends to the host and the time a slow host link
// adds to a pass.
#include <doctest/doctest.h>

#include "workload/activation_offload.hpp"
#include "workload/stage_costs.hpp"
#include "small_setups.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_activation_offload_test {

using namespace trainsim;
using namespace trainsim::workload;
using trainsim::workload::testing::small_cluster;
using trainsim::workload::testing::small_gpt;
using trainsim::workload::testing::small_moe;

namespace {
// small_moe (small_setups.hpp) with every expert on every GPU (ep 1): a
// GPU's experts receive 1024 tokens x top 2 = 2048 copies a layer.
Plan plan(unsigned offload) {
  Plan p;
  p.dp = 8;
  p.global_batch = 8;
  p.offload_modules = offload;
  return p;
}

// small_cluster with a host link of `gb_per_s` each way.
hw::ClusterSpec with_host_link(double gb_per_s) {
  hw::ClusterSpec c = small_cluster();
  c.node.pcie_gb_per_s = gb_per_s;
  return c;
}
}  // namespace

TEST_CASE("each module's saved input, above Megatron-Core's size floor") {
  // 2048 copies: expert_fc1's input is 2048 x 1024 values (2,097,152 >=
  // 1,048,576) of 2 bytes, 4 MiB; moe_act's is gate and up, 2048 x 2 x 2048
  // values of 2 bytes, 16 MiB.
  CHECK(offloaded_bytes_per_moe_layer(kOffloadExpertFc1, 2048, 1, 1024, 2048, 2.0) == 4.0 * 1024 * 1024);
  CHECK(offloaded_bytes_per_moe_layer(kOffloadMoeAct, 2048, 1, 1024, 2048, 2.0) == 16.0 * 1024 * 1024);
  CHECK(offloaded_bytes_per_moe_layer(kOffloadExpertFc1 | kOffloadMoeAct, 2048, 1, 1024, 2048, 2.0) ==
        20.0 * 1024 * 1024);
  // An FP8 input saved at one byte a value: half.
  CHECK(offloaded_bytes_per_moe_layer(kOffloadExpertFc1, 2048, 1, 1024, 2048, 1.0) == 2.0 * 1024 * 1024);
  // 1000 copies x 1024 = 1,024,000 values, under the floor: kept on the GPU;
  // gate and up, 1000 x 4096 = 4,096,000, go.
  CHECK(offloaded_bytes_per_moe_layer(kOffloadExpertFc1, 1000, 1, 1024, 2048, 2.0) == 0.0);
  CHECK(offloaded_bytes_per_moe_layer(kOffloadMoeAct, 1000, 1, 1024, 2048, 2.0) == 1000.0 * 4096 * 2);
  CHECK(offloaded_bytes_per_moe_layer(0u, 2048, 1, 1024, 2048, 2.0) == 0.0);
  // The first GEMM's input is saved an expert at a time: over 8 local experts
  // each holds 2048 / 8 x 1024 = 262,144 values, under the floor; the
  // activation's input is one tensor and still goes.
  CHECK(offloaded_bytes_per_moe_layer(kOffloadExpertFc1, 2048, 8, 1024, 2048, 2.0) == 0.0);
  CHECK(offloaded_bytes_per_moe_layer(kOffloadMoeAct, 2048, 8, 1024, 2048, 2.0) == 16.0 * 1024 * 1024);
}

TEST_CASE("a copy that outlasts its layer's pass holds the pass back by the difference") {
  // 1 GB over 100 GB/s is 10 ms: beside an 8 ms pass, 2 ms exposed; beside 12 ms, none.
  CHECK(exposed_copy_seconds(1e9, 100e9, 0.008) == doctest::Approx(0.002));
  CHECK(exposed_copy_seconds(1e9, 100e9, 0.012) == 0.0);
  CHECK(exposed_copy_seconds(0.0, 100e9, 0.0) == 0.0);
}

TEST_CASE("a stage's offloaded activations: every MoE layer's, part of what F keeps") {
  const StageCost kept = stage_costs(small_moe(), plan(0u), with_host_link(1000)).stages[0];
  const StageCost off = stage_costs(small_moe(), plan(kOffloadExpertFc1 | kOffloadMoeAct), with_host_link(1000)).stages[0];
  CHECK(kept.offloaded_activation_bytes == 0);
  // 8 layers x 16 MiB: the activation's input (above); the first GEMM's,
  // 2048 copies x 1024 over 8 experts, is 262,144 values an expert, under
  // the floor, and stays.
  CHECK(off.offloaded_activation_bytes == 8LL * 16 * 1024 * 1024);
  // What F keeps is the same; the offloaded part is within it.
  CHECK(off.activation_bytes == kept.activation_bytes);
  CHECK(off.offloaded_activation_bytes < off.activation_bytes);
  // 16 MiB over 1000 GB/s is 17 us, less than a layer's pass: no time added.
  CHECK(off.forward == kept.forward);
  CHECK(off.input_grad == kept.input_grad);
}

TEST_CASE("over a slow host link the copies set the pace of each pass") {
  const StageCosts kept = stage_costs(small_moe(), plan(0u), with_host_link(1));
  const StageCosts off = stage_costs(small_moe(), plan(kOffloadExpertFc1 | kOffloadMoeAct), with_host_link(1));
  // A layer's 16 MiB at 1 GB/s takes 16,777,216 / 1e9 = 16.8 ms, beyond its
  // passes: each of the 8 layers' forward lasts as long as its copy, and so
  // does its backward (input and weight gradients together: the stage
  // summary's one-layer backward, which adds nothing else here, no
  // recompute and no gradient accumulation beside the weight gradients).
  const double copy_s = 16.0 * 1024 * 1024 / 1e9;
  const double layer_f = kept.layer_forward.to_seconds();
  REQUIRE(layer_f < copy_s);
  const double layer_b = kept.layer_backward.to_seconds();
  REQUIRE(layer_b < copy_s);
  CHECK(off.stages[0].forward.to_seconds() - kept.stages[0].forward.to_seconds() ==
        doctest::Approx(8.0 * (copy_s - layer_f)));
  // The backward's wait lands on the input gradient, the weight gradient unchanged.
  CHECK(off.stages[0].input_grad.to_seconds() - kept.stages[0].input_grad.to_seconds() ==
        doctest::Approx(8.0 * (copy_s - layer_b)));
  CHECK(off.stages[0].weight_grad == kept.stages[0].weight_grad);
}

}  // namespace workload_activation_offload_test
