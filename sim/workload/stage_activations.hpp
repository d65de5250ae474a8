// What one pipeline stage keeps for its backward, per micro-batch on one
// GPU: each layer's activations by its recompute policy (activation_bytes.hpp,
// moe.hpp), the embedding's dropout mask and the head's loss, less what goes
// to the host; and the transients of a pass that exist only while it runs
// (a recomputed layer's working set, the loss's, PyTorch's context-parallel
// attention's, CPU checkpointing's copy).
#pragma once

#include <cstdint>

#include "workload/moe_spec.hpp"
#include "workload/plan.hpp"
#include "workload/stage_costs.hpp"
#include "workload/transformer.hpp"

namespace trainsim::workload {

// A byte count as the memory tracker keeps it; std::overflow_error beyond 2^62.
std::int64_t to_bytes(double b);

// A stage's layers, the recomputed among them (its first `redone`) and its ends.
struct StageLayers {
  int layers = 0;
  int redone = 0;
  // Of them, a MoE model's MoE layers and the recomputed among those (a
  // dense model's: all of them), and its dense ones.
  int main = 0, main_redone = 0;
  int dense = 0, dense_redone = 0;
  bool first = false;  // holds the embedding
  bool last = false;   // holds the output head and the loss
};

struct StageActivationInput {
  const TransformerSpec& model;        // the whole sequence
  const TransformerSpec& local;        // the rank's part of it (1/cp)
  const TransformerSpec& dense_model;  // a MoE model's dense layer (local.dense_part())
  const Plan& plan;
  const MoeLayout& moe_layout;
  StageLayers layers;
  // Of each kept GEMM input, the share that stays: 0.5 where Transformer
  // Engine's FP8 recipes save their inputs in FP8, 1 otherwise.
  double kept_input_scale = 1.0;
  double checkpoint_bytes = 0.0;     // Plan::checkpoint_in_cpu: a recomputed layer's checkpoint
  double offloaded_per_layer = 0.0;  // Plan::offload_modules: what a MoE layer sends to the host
};

// Sets c's activation_bytes, recompute_transient_bytes, the loss's
// transients, CPU checkpointing's bytes, offloaded_activation_bytes and
// attention_transient_bytes. Returns the GEMM inputs the kept activations
// hold (what W reads of them), before kept_input_scale.
double add_stage_activations(StageCost& c, const StageActivationInput& in);

}  // namespace trainsim::workload
