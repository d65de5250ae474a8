// Full recompute of only some layers of each stage (parallel.recompute_layers).
#include <doctest/doctest.h>

#include "workload/stage_costs.hpp"
#include "small_setups.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_recompute_layers_test {

using namespace trainsim;
using namespace trainsim::workload;
using trainsim::workload::testing::small_cluster;
using trainsim::workload::testing::small_gpt;


TEST_CASE("recompute_layers: the first n layers of a stage are recomputed, the others keep everything") {
  const TransformerSpec m = small_gpt();
  const hw::ClusterSpec c = small_cluster();
  Plan p;  // one GPU, 8 layers, one micro-batch of one
  p.global_batch = 1;
  p.recompute = Recompute::kNone;
  const StageCost none = stage_costs(m, p, c).stages[0];
  p.recompute = Recompute::kFull;
  const StageCosts all = stage_costs(m, p, c);
  p.recompute_layers = 3;
  const StageCosts some = stage_costs(m, p, c);
  const StageCost& s = some.stages[0];
  // I: none's I plus 3 of the 8 layers' redo (all's I has all 8).
  const double redo_per_layer = (all.stages[0].input_grad - none.input_grad).to_seconds() / 8;
  CHECK(s.input_grad.to_seconds() == doctest::Approx(none.input_grad.to_seconds() + 3 * redo_per_layer).epsilon(1e-9));
  CHECK(s.forward == none.forward);
  // Activations: 3 layers at 2sbh, 5 at what no recompute keeps.
  const double full_layer = layer_activation_bytes(m, 1, 1, Recompute::kFull);
  const double kept_layer = layer_activation_bytes(m, 1, 1, Recompute::kNone, false, Attention::kFlash);
  CHECK(static_cast<double>(s.activation_bytes - none.activation_bytes) ==
        doctest::Approx(3 * (full_layer - kept_layer)).epsilon(1e-9));
  // Hardware FLOPs count 3/8 of a full recompute's extra forward.
  const double extra_all = all.hardware_flops_per_iteration - all.model_flops_per_iteration;
  CHECK(some.hardware_flops_per_iteration - some.model_flops_per_iteration ==
        doctest::Approx(extra_all * 3.0 / 8.0));
  // More layers than a stage holds: all of them.
  p.recompute_layers = 8;
  CHECK(stage_costs(m, p, c).stages[0].input_grad == all.stages[0].input_grad);
  CHECK(p.recomputed_layers(5) == 5);
  CHECK(p.recomputed_layers(12) == 8);
}

TEST_CASE("recompute_layers under ZeRO-3: the redo goes to the units that hold the recomputed layers") {
  const TransformerSpec m = small_gpt();
  const hw::ClusterSpec c = small_cluster();
  Plan p;
  p.dp = 2;
  p.global_batch = 2;
  p.zero_stage = 3;
  p.recompute = Recompute::kFull;
  p.recompute_layers = 2;
  const StageCost s = stage_costs(m, p, c).stages[0];
  // Units: embedding, 8 layers, head. Layers 0 and 1 (units 1 and 2) take more of I than layer 2 (unit 3).
  REQUIRE(s.shard_units.size() == 10);
  CHECK(s.shard_units[1].input_grad_share == doctest::Approx(s.shard_units[2].input_grad_share));
  CHECK(s.shard_units[1].input_grad_share > s.shard_units[3].input_grad_share);
  CHECK(s.shard_units[3].input_grad_share == doctest::Approx(s.shard_units[8].input_grad_share));
}

}  // namespace workload_recompute_layers_test
