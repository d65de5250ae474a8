#include "workload/stage_activations.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "workload/activation_bytes.hpp"
#include "workload/cp_merge.hpp"
#include "workload/mla.hpp"
#include "workload/moe.hpp"

namespace trainsim::workload {

std::int64_t to_bytes(double b) {
  if (!(b < 0x1p62)) throw std::overflow_error("a memory size of " + std::to_string(b) + " bytes is beyond what the simulator represents");
  return static_cast<std::int64_t>(std::llround(b));
}

double add_stage_activations(StageCost& c, const StageActivationInput& in) {
  const TransformerSpec& model = in.model;
  const TransformerSpec& local = in.local;
  const TransformerSpec& dense_model = in.dense_model;
  const Plan& plan = in.plan;
  const MoeLayout& moe_layout = in.moe_layout;
  const bool moe = model.moe.enabled(), sp = plan.sequence_parallel;
  const bool first = in.layers.first, last = in.layers.last;
  const double b = plan.microbatch_size, s = local.seq, h = model.hidden, t = plan.tp;
  const int layers_per_stage = in.layers.layers, redone = in.layers.redone;
  const int main_layers = in.layers.main, main_redone = in.layers.main_redone;
  const int dense_layers = in.layers.dense, dense_redone = in.layers.dense_redone;
  const double kept_input_scale = in.kept_input_scale, checkpoint_bytes = in.checkpoint_bytes,
               offloaded_per_layer = in.offloaded_per_layer;

  // The recomputed layers keep what the policy keeps; the rest keep
  // everything. A MoE layer: the dense formula without its MLP, plus the
  // MoE block's bytes for each token the rank routes (kept unless the
  // whole layer is recomputed).
  TransformerSpec no_mlp = local;
  if (moe) no_mlp.ffn = 0;
  const double routed_tokens = b * s / (sp && plan.tp > 1 ? t : 1.0);
  // Selective recompute of more than the attention core (Megatron-Core's
  // --recompute-modules) keeps none of those parts' activations: the two
  // norms' outputs (the QKV and up projections' inputs, 2h + 2h), a dense
  // MLP's own (split over tp), a MoE block's whole, or only its experts'
  // SwiGLU outputs (2f a routed copy).
  const unsigned modules = plan.recompute == Recompute::kSelective ? plan.recompute_modules : 0u;
  const double split_tokens = b * s / (sp && plan.tp > 1 ? t : 1.0);
  const double norm_outputs = (modules & kModuleLayernorm) != 0 ? split_tokens * 4.0 * h : 0.0;
  // MLA's up projections redone: their outputs Q, K (heads x (head_dim +
  // rope) each) and V (heads x v_head_dim) not kept, on 1/tp of the heads.
  const double mla_up = (modules & kModuleMlaUpProj) != 0 && model.mla.enabled()
                            ? b * s * (4.0 * model.qk_width() + 2.0 * model.v_width()) / t
                            : 0.0;
  const bool gpt = model.arch == Arch::kGpt;
  // (A dense layer's; a MoE model's dense layers have one too.)
  const double mlp_own = (modules & kModuleMlp) != 0 ? b * s * (gpt ? 4.0 : 6.0) * model.ffn / t : 0.0;
  const double mlp_down_input = (modules & kModuleMlp) != 0 ? b * s * 2.0 * model.ffn / t : 0.0;
  const double moe_own = !moe                               ? 0.0
                         : (modules & kModuleMoe) != 0      ? routed_tokens * moe_activation_bytes_per_token(model, moe_layout)
                         : (modules & kModuleMoeAct) != 0   ? routed_tokens * model.moe.top_k * moe_layout.load * 2.0 * model.moe.expert_ffn
                                                            : 0.0;
  auto layer_bytes = [&](Recompute policy) {
    const bool selective = policy == Recompute::kSelective;
    // Korthikanti et al.'s selective formula drops the attention core's scores.
    const Recompute formula = selective && (modules & kModuleCoreAttn) == 0 ? Recompute::kNone : policy;
    const double moe_block =
        moe && policy != Recompute::kFull
            ? routed_tokens * moe_activation_bytes_per_token(model, moe_layout, policy == Recompute::kSelectiveOp)
            : 0.0;
    return layer_activation_bytes(no_mlp, plan.microbatch_size, plan.tp, formula, sp, plan.attention,
                                  plan.elementwise, plan.kv_repeat) +
           moe_block - (selective ? norm_outputs + mla_up + (moe ? moe_own : mlp_own) : 0.0);
  };
  auto dense_bytes = [&](Recompute policy) {  // a MoE model's dense layer
    const bool selective = policy == Recompute::kSelective;
    const Recompute formula = selective && (modules & kModuleCoreAttn) == 0 ? Recompute::kNone : policy;
    return layer_activation_bytes(dense_model, plan.microbatch_size, plan.tp, formula, sp, plan.attention,
                                  plan.elementwise, plan.kv_repeat) -
           (selective ? norm_outputs + mla_up + mlp_own : 0.0);
  };
  double activations = main_redone * layer_bytes(plan.recompute) +
                       (main_layers - main_redone) * layer_bytes(Recompute::kNone);
  // What a recomputed layer does not keep exists again in the backward,
  // from its recomputation (run with gradients on, so it saves its
  // activations) to its gradients; one layer at a time: the largest of the
  // stage's recomputed kinds. (The forward frees a checkpointed layer's
  // intermediates as it goes.)
  double redo_working_set = 0.0;
  if (main_redone > 0) redo_working_set = layer_bytes(Recompute::kNone) - layer_bytes(plan.recompute);
  if (dense_redone > 0) {
    redo_working_set = std::max(redo_working_set, dense_bytes(Recompute::kNone) - dense_bytes(plan.recompute));
  }
  c.recompute_transient_bytes = to_bytes(std::max(0.0, redo_working_set));
  if (dense_layers > 0) {
    activations += dense_redone * dense_bytes(plan.recompute) + (dense_layers - dense_redone) * dense_bytes(Recompute::kNone);
  }
  // FP8 inputs saved instead of BF16 ones: the other half of each kept input
  // goes. (The recomputed norms' outputs and a recomputed MLP's down
  // projection input are not kept at all.)
  const bool selective = plan.recompute == Recompute::kSelective;
  double kept_inputs =
      main_redone * (layer_kept_gemm_input_bytes(no_mlp, plan.microbatch_size, plan.tp, plan.recompute, sp) -
                     (selective ? norm_outputs + (moe ? 0.0 : mlp_down_input) : 0.0)) +
      (main_layers - main_redone) *
          layer_kept_gemm_input_bytes(no_mlp, plan.microbatch_size, plan.tp, Recompute::kNone, sp);
  // A MoE layer's experts keep their GEMMs' inputs too, while the block
  // keeps its activations: each routed copy's row into the first (2h, etp
  // times with expert tensor parallelism) and SwiGLU's output into the
  // second (2f, unless "moe_act" or per-op checkpointing redoes it).
  // Transformer Engine's grouped linear layers save them in FP8 under its
  // recipes, as its other linear layers do.
  auto expert_kept_inputs = [&](Recompute policy) {
    if (!moe || policy == Recompute::kFull || (policy == Recompute::kSelective && (modules & kModuleMoe) != 0)) {
      return 0.0;
    }
    const bool act_redone =
        (policy == Recompute::kSelective && (modules & kModuleMoeAct) != 0) || policy == Recompute::kSelectiveOp;
    return routed_tokens * model.moe.top_k * moe_layout.load *
           (2.0 * h * moe_layout.etp + (act_redone ? 0.0 : 2.0 * model.moe.expert_ffn));
  };
  kept_inputs += main_redone * expert_kept_inputs(plan.recompute) +
                 (main_layers - main_redone) * expert_kept_inputs(Recompute::kNone);
  if (dense_layers > 0) {
    kept_inputs +=
        dense_redone * (layer_kept_gemm_input_bytes(dense_model, plan.microbatch_size, plan.tp, plan.recompute, sp) -
                        (selective ? norm_outputs + mlp_down_input : 0.0)) +
        (dense_layers - dense_redone) *
            layer_kept_gemm_input_bytes(dense_model, plan.microbatch_size, plan.tp, Recompute::kNone, sp);
  }
  activations -= (1.0 - kept_input_scale) * kept_inputs;
  // All-gather context parallelism: attention's backward keeps the gathered
  // keys and values, the other cp - 1 ranks' parts beside the rank's own, on
  // every layer that keeps its activations (no recompute, or the layers full
  // recompute leaves alone); checkpointed layers gather them again.
  // (PyTorch's frees them after the forward and gathers them again.)
  // (K and V copied out to every query head first, kv_repeat, are gathered
  // as copies; MLA's keys and values, each at its own width.)
  if (plan.cp > 1 && plan.cp_algorithm == CpAlgorithm::kAllGather && !plan.cp_pytorch_merge()) {
    const double own_kv = model.mla.enabled()
                              ? b * s * mla_kv_values(model) / t * kActivationBytes
                              : 2.0 * b * s * attention_kv_width(model, plan.kv_repeat) / t * kActivationBytes;
    const int keeping = plan.recompute == Recompute::kNone   ? layers_per_stage
                        : plan.recompute == Recompute::kFull ? layers_per_stage - redone
                                                             : 0;
    activations += keeping * (plan.cp - 1) * own_kv;
  }
  // Korthikanti et al. §4.3: the embedding's dropout mask (one byte per value,
  // split over tp with sequence parallelism) on the first stage; the final
  // norm, output layer and loss on the last: 4*s*b*h/t * (1 + v/h), the
  // v/h term the FP32 softmax the loss keeps, or what another loss kernel
  // keeps a logit instead (LossKernel), and what the loss holds beside it
  // for a moment while its forward and its backward run.
  if (first) activations += sp && plan.tp > 1 ? s * b * h / t : s * b * h;
  if (last) {
    const double v = static_cast<double>(model.vocab);
    const double logits = s * b * v / t;
    const LossMemory loss = loss_memory(plan.loss, plan.tp > 1);
    activations += 4.0 * s * b * h / t * (1.0 + loss.kept / 4.0 * v / h);
    c.loss_forward_transient_bytes = to_bytes(loss.forward_transient * logits);
    c.loss_backward_transient_bytes = to_bytes(loss.backward_transient * logits);
  }
  // Under CPU checkpointing the recomputed layers' checkpoints wait on the
  // host between the passes (DeepSpeed points each saved GPU tensor at its
  // host copy); the GPU holds the one a layer's pass is using while it runs.
  if (checkpoint_bytes > 0.0 && redone > 0) {
    activations -= redone * checkpoint_bytes;
    c.host_checkpoint_bytes = to_bytes(redone * checkpoint_bytes);
    c.checkpoint_transient_bytes = to_bytes(checkpoint_bytes);
  }
  c.activation_bytes = to_bytes(activations);
  c.offloaded_activation_bytes = to_bytes(main_layers * offloaded_per_layer);
  // Only what a layer keeps can go to the host (config/plan_checks.cpp refuses recompute policies that keep none).
  if (c.offloaded_activation_bytes > c.activation_bytes) {
    throw std::logic_error("stage_costs: more activations offloaded than kept (Plan::offload_modules)");
  }
  if (plan.cp_pytorch_merge() && layers_per_stage > 0) {
    c.attention_transient_bytes =
        to_bytes(pytorch_cp_transient_bytes(b * s * model.q_dim() / t, 2.0 * b * s * attention_kv_width(model, plan.kv_repeat) / t,
                                            plan.cp, plan.cp_algorithm));
  }
  return kept_inputs;
}

}  // namespace trainsim::workload
