// Selective recompute of Megatron-Core's modules (Plan::recompute_modules):
// what each part stops keeping, and the forward it redoes in backward.
#include <doctest/doctest.h>

#include "workload/stage_costs.hpp"
#include "small_setups.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_recompute_modules_test {

using namespace trainsim;
using namespace trainsim::workload;
using trainsim::workload::testing::small_cluster;
using trainsim::workload::testing::small_gpt;
using trainsim::workload::testing::small_moe;

namespace {
Plan selective(unsigned modules) {
  Plan p;
  p.dp = 8;
  p.global_batch = 8;
  p.recompute = Recompute::kSelective;
  p.recompute_modules = modules;
  return p;
}
}  // namespace

TEST_CASE("the default parts are the attention core: Korthikanti et al.'s selective recompute") {
  CHECK(Plan{}.recompute_modules == kModuleCoreAttn);
  const StageCost core = stage_costs(small_gpt(), selective(kModuleCoreAttn), small_cluster()).stages[0];
  Plan none = selective(kModuleCoreAttn);
  none.recompute = Recompute::kNone;
  const StageCost kept = stage_costs(small_gpt(), none, small_cluster()).stages[0];
  // FlashAttention keeps no scores: the same bytes; backward redoes attention.
  CHECK(core.activation_bytes == kept.activation_bytes);
  CHECK(core.input_grad > kept.input_grad);
}

TEST_CASE("layernorm: the two norms' outputs are not kept, the norms run again") {
  const StageCost core = stage_costs(small_gpt(), selective(kModuleCoreAttn), small_cluster()).stages[0];
  const StageCost norms =
      stage_costs(small_gpt(), selective(kModuleCoreAttn | kModuleLayernorm), small_cluster()).stages[0];
  // Each of 8 layers: the QKV and up projections' inputs, 1024 tokens x
  // (2 + 2) bytes x 1024 values: 4 MiB a layer.
  CHECK(core.activation_bytes - norms.activation_bytes == 8LL * 1024 * 4 * 1024);
  CHECK(norms.input_grad > core.input_grad);
}

TEST_CASE("mlp: a dense MLP keeps nothing of its own; the whole MLP forward is redone") {
  const StageCost core = stage_costs(small_gpt(), selective(kModuleCoreAttn), small_cluster()).stages[0];
  const StageCost mlp = stage_costs(small_gpt(), selective(kModuleCoreAttn | kModuleMlp), small_cluster()).stages[0];
  // GPT keeps GeLU's input and the down projection's input (2f + 2f bytes a
  // token): 8 layers x 1024 tokens x 4 x 4096.
  CHECK(core.activation_bytes - mlp.activation_bytes == 8LL * 1024 * 4 * 4096);
  // Backward redoes the MLP's two GEMMs and GeLU: at least the GEMMs'
  // 2 x 2 x 1024 x 1024 x 4096 FLOPs a layer at small_cluster's 150 TFLOP/s cap.
  const double gemms = 8 * 2 * 2.0 * 1024 * 1024 * 4096 / 150e12;
  CHECK((mlp.input_grad - core.input_grad).to_seconds() >= gemms * (1 - 1e-9));
}

TEST_CASE("moe_act keeps no expert SwiGLU outputs; moe keeps nothing of the MoE block") {
  const TransformerSpec m = small_moe();
  const hw::ClusterSpec c = small_cluster();
  const StageCost core = stage_costs(m, selective(kModuleCoreAttn), c).stages[0];
  const StageCost act = stage_costs(m, selective(kModuleCoreAttn | kModuleMoeAct), c).stages[0];
  const StageCost block = stage_costs(m, selective(kModuleCoreAttn | kModuleMoe), c).stages[0];
  // 1024 tokens x 2 copies x 2048 values x 2 bytes a layer, 8 layers.
  CHECK(core.activation_bytes - act.activation_bytes == 8LL * 1024 * 2 * 2048 * 2);
  // The block: the router's FP32 scores (4 x 8) and per copy 2h + 4f + 2f + 2h.
  CHECK(core.activation_bytes - block.activation_bytes == 8LL * 1024 * (4 * 8 + 2 * (4 * 1024 + 6 * 2048)));
  CHECK(act.input_grad > core.input_grad);
  CHECK(block.input_grad > act.input_grad);
  // Recomputed FLOPs count the block's forward again: more hardware FLOPs.
  CHECK(stage_costs(m, selective(kModuleCoreAttn | kModuleMoe), c).hardware_flops_per_iteration >
        stage_costs(m, selective(kModuleCoreAttn), c).hardware_flops_per_iteration);
}

}  // namespace workload_recompute_modules_test
