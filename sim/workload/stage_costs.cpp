#include "workload/stage_costs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include "hw/collective.hpp"
#include "workload/activation_offload.hpp"
#include "workload/duty_clock.hpp"
#include "workload/layer_timing.hpp"
#include "workload/op_cost.hpp"
#include "workload/grad_buckets.hpp"
#include "workload/shard_unit.hpp"
#include "workload/stage_activations.hpp"
#include "workload/stage_groups.hpp"
#include "workload/zero3_reuse.hpp"

namespace trainsim::workload {

using detail::PassTimes;
using detail::Redo;
using detail::Timing;
using detail::layer_op_costs;
using detail::moe_layer_exchanges;
using detail::MoeLayerExchanges;
using detail::recompute_time;
using detail::redone_share;

namespace {

// A dense layer's parameters on one GPU: 1/tp of it, its replicated
// parameters (the norms') whole.
double dense_layer_params_on_gpu(const TransformerSpec& dense, double tp) {
  const double replicated = dense.replicated_params_per_layer();
  return (dense.params_per_layer() - replicated) / tp + replicated;
}

// Adding `params` weight gradients of a micro-batch to the iteration's, where
// that is a kernel of its own (parallel.grad_accumulation): its bytes at the
// achievable HBM bandwidth.
double grad_add_seconds(double params, const Plan& plan, const hw::NodeSpec& node) {
  return params * grad_accumulation_bytes_per_param(plan.grad_accumulation, plan.grad_dtype) /
         (node.gpu.hbm_achievable_tb_per_s * 1e12);
}

// FLOPs recomputed per sequence, over the whole model.
double recompute_flops(const TransformerSpec& model, Recompute recompute, unsigned modules) {
  double f = 0.0;
  for (const Op& op : layer_ops(model, 1, 1)) f += redone_share(op, recompute, modules) * op.flops_forward;
  return f * model.layers;
}

// Bytes W keeps from the end of I: for every GEMM with weights, its input X
// (m x k) and the gradient of its output dY (m x n); the embedding's scatter-add
// keeps the gradient of its output.
double weight_grad_operand_bytes(const std::vector<Op>& ops) {
  double bytes = 0.0;
  for (const Op& op : ops) {
    if (op.kind == OpKind::kGemm && op.flops_weight_grad > 0.0) bytes += (op.m * op.k + op.m * op.n) * kActivationBytes;
    bytes += op.weight_grad_held_bytes;
  }
  return bytes;
}

// Every replica's and tensor rank's pair of GPUs on pipeline ranks a and b,
// all exchanging at once (the ends of a tied embedding, DualPipe's copies):
// one pair's group, its NICs shared by the pairs that meet on them.
hw::CollectiveGroup rank_pairs(const hw::ClusterSpec& cluster, const Plan& plan, int a, int b) {
  std::vector<std::vector<int>> pairs;
  for (int d = 0; d < plan.replicas(); ++d) {
    for (int k = 0; k < plan.tp; ++k) pairs.push_back({plan.gpu_of(a, d, k), plan.gpu_of(b, d, k)});
  }
  hw::CollectiveGroup group = hw::group_of(cluster, pairs.front());
  group.nic_share *= hw::concurrent_nic_share(cluster, pairs);
  return group;
}


StageCosts costs_at(const TransformerSpec& model, const Plan& plan, const hw::ClusterSpec& cluster,
                    hw::CollectiveAlgorithm algorithm, bool with_layer_ops) {
  const hw::NodeSpec& node = cluster.node;
  const int stages = plan.stages();
  // What one rank holds of each sequence: all of it, or 1/cp under context
  // parallelism. Every per-token cost and activation is counted on `local`;
  // attention's queries still see all cp parts (layer_ops' cp).
  TransformerSpec local = model;
  local.seq = model.seq / plan.cp;
  const double b = plan.microbatch_size, s = local.seq, h = model.hidden, t = plan.tp;
  const bool sp = plan.sequence_parallel;
  // Under FP8 the layers' linear GEMMs run in FP8 behind their casts (workload/fp8.hpp).
  const bool fp8 = plan.precision == Precision::kFp8;
  // A MoE model's experts over the plan's expert-parallel ranks, the busiest
  // at its capacity (token dropping) or at the stated imbalance (drop-less).
  const bool moe = model.moe.enabled();
  const MoeLayout moe_layout{plan.ep, plan.etp, plan.moe_dispatcher,
                             model.moe.capacity_factor > 0.0 ? model.moe.capacity_factor : plan.moe_imbalance};
  auto layer_ops_of = [&](int microbatch) {
    std::vector<Op> ops =
        layer_ops(local, microbatch, plan.tp, sp, plan.attention, plan.elementwise, plan.cp, moe_layout, plan.layer_code());
    return fp8 ? with_fp8(ops, plan.fp8_recipe, plan.fp8_runtime(), plan.tp) : ops;
  };
  // Transformer Engine's recipes keep each linear layer's saved input in FP8:
  // half the bytes of the BF16 inputs layer_kept_gemm_input_bytes counts.
  const double kept_input_scale = fp8 && fp8_saves_fp8_inputs(plan.fp8_runtime()) ? 0.5 : 1.0;
  const std::vector<Op> layer = layer_ops_of(plan.microbatch_size);
  // A MoE model's dense layers (MoeSpec::dense_layers, layer_freq): `layer`
  // is its MoE layer, these its dense one; empty when every layer is MoE.
  const TransformerSpec dense_model = local.dense_part();
  std::vector<Op> dense_layer;
  if (moe && model.moe.has_dense_layers()) {
    dense_layer = layer_ops(dense_model, plan.microbatch_size, plan.tp, sp, plan.attention, plan.elementwise, plan.cp,
                            {}, plan.layer_code());
    if (fp8) dense_layer = with_fp8(dense_layer, plan.fp8_recipe, plan.fp8_runtime(), plan.tp);
  }
  std::vector<Op> embedding = embedding_ops(local, plan.microbatch_size, plan.tp, sp);
  std::vector<Op> head = head_ops(local, plan.microbatch_size, plan.tp, sp, plan.elementwise, plan.loss);
  // Batch-first sequence parallelism copies around the embedding's and the
  // head's collectives too.
  mark_sp_copies(embedding, plan.layer_code());
  mark_sp_copies(head, plan.layer_code());
  const bool tied = model.arch == Arch::kGpt;
  // See PipelineSendSplit. With sequence parallelism each rank already holds
  // its own 1/tp of the sequence: it sends that and gathers nothing.
  const bool gather_free = sp || plan.tp == 1;
  const bool split_sends = sp || plan.send_split == PipelineSendSplit::kScatterGather;

  StageCosts out;
  out.model_flops_per_iteration = model_flops(model, static_cast<double>(plan.global_batch));
  // The recomputed layers' share of the model's (recompute_flops counts every layer).
  // (Over one pipeline: DualPipe's second direction is a copy of the same layers.)
  double recomputed = 0.0;
  const int pipeline_length = stages / plan.pipelines();
  for (int st = 0; st < pipeline_length; ++st) recomputed += plan.recomputed_layers(plan.layers_of_stage(st, model.layers));
  // Recomputed FLOPs a sequence over every layer: a MoE model's MoE and dense layers each their own.
  const int model_moe_layers = model.moe_layers_in(0, model.layers);
  const double redone_flops =
      moe ? model_moe_layers * recompute_flops(model, plan.recompute, plan.recompute_modules) / model.layers +
                (model.layers - model_moe_layers) *
                    recompute_flops(model.dense_part(), plan.recompute, plan.recompute_modules) / model.layers
          : recompute_flops(model, plan.recompute, plan.recompute_modules);
  out.hardware_flops_per_iteration =
      out.model_flops_per_iteration + redone_flops * (recomputed / model.layers) *
                                          static_cast<double>(plan.global_batch);
  int first_layer = 0;  // of the stage in the loop below: a pipeline's stages hold the layers in order
  // One layer's passes, with the groups they were timed over.
  struct LayerPasses {
    std::array<hw::CollectiveGroup, 4> groups;  // tp, cp, ep, etp
    PassTimes one, one_dense;
    Redo redo_one, redo_dense;
    MoeLayerExchanges exchanges;
  };
  std::optional<LayerPasses> layer_passes;
  for (int st = 0; st < stages; ++st) {
    const bool first = st % pipeline_length == 0;
    const bool last = (st + 1) % pipeline_length == 0;
    if (first) first_layer = 0;
    const int r = plan.rank_of_stage(st);
    const StageGroups groups = stage_groups(cluster, plan, r, algorithm, moe);
    const hw::CollectiveGroup& tp_group = groups.tp;
    const hw::CollectiveGroup& ep_group = groups.ep;
    const int shard = plan.shard_group_size();

    // One layer, then the stage: its layers, the embedding on the first and
    // the output head on the last. Recomputation runs just before the
    // backward that needs it: part of I.
    // PyTorch's context parallelism calls attention block by block whatever
    // brings the keys.
    const bool cp_pytorch = plan.cp_pytorch_merge();
    const double attention_seq =
        plan.cp > 1 && plan.cp_algorithm != CpAlgorithm::kRing && !cp_pytorch ? model.seq : s;
    const Timing timing{node,    s,           tp_group,         algorithm, plan.tp, plan.overlap.tp_comm,
                        plan.overlap.tp_comm_backward, plan.cp, plan.cp_algorithm, &groups.cp, attention_seq,
                        moe ? &ep_group : nullptr, moe && plan.etp > 1 ? &groups.etp : nullptr, cp_pytorch,
                        plan.overlap.compute_slowdown};
    // What recompute redoes runs inside the backward: its collectives are
    // pipelined only where the backward's are.
    Timing redo_timing = timing;
    redo_timing.tp_overlap = plan.overlap.tp_comm && plan.overlap.tp_comm_backward;
    // A layer's parameters on one GPU: its routed experts' 1/ep, the rest's 1/tp.
    const double expert_per_layer = model.expert_params_per_layer() / (plan.ep * plan.etp);
    const double replicated_per_layer = model.replicated_params_per_layer();
    const double layer_params_on_gpu =
        (model.params_per_layer() - model.expert_params_per_layer() - replicated_per_layer) / t + replicated_per_layer +
        expert_per_layer;
    // One layer's passes depend on the stage only through the groups its
    // collectives run over: a stage whose groups are those of the stage
    // before (every stage of a uniform placement) takes that one's.
    const std::array<hw::CollectiveGroup, 4> layer_groups{tp_group, groups.cp, ep_group, groups.etp};
    if (!layer_passes || layer_passes->groups != layer_groups) {
      LayerPasses& p = layer_passes.emplace();
      p.groups = layer_groups;
      p.one.add(layer, 1, timing);
      p.redo_one = recompute_time(layer, plan.recompute, plan.recompute_modules, redo_timing);
      if (!dense_layer.empty()) {
        p.one_dense.add(dense_layer, 1, timing);
        p.redo_dense = recompute_time(dense_layer, plan.recompute, plan.recompute_modules, redo_timing);
      }
      // One MoE layer's exchanges as collectives and its chunks (see
      // StageCost::EpChunks), each pass with what recompute redoes of it.
      if (moe) p.exchanges = moe_layer_exchanges(layer, timing, plan, ep_group);
    }
    const PassTimes& one = layer_passes->one;
    const Redo& redo_one = layer_passes->redo_one;
    const PassTimes& one_dense = layer_passes->one_dense;
    const Redo& redo_dense = layer_passes->redo_dense;
    const MoeLayerExchanges& exchanges = layer_passes->exchanges;
    if (first) {
      const double grad_add_s = grad_add_seconds(layer_params_on_gpu, plan, node);
      out.layer_forward = core::Time::seconds(one.forward);
      out.layer_backward = core::Time::seconds(one.input_grad + redo_one.seconds + one.weight_grad + grad_add_s);
      if (with_layer_ops) {
        out.layer_ops = layer_op_costs(layer, timing, redo_timing, plan, grad_add_s);
        if (!dense_layer.empty()) {
          out.dense_layer_ops = layer_op_costs(dense_layer, timing, redo_timing, plan,
                                               grad_add_seconds(dense_layer_params_on_gpu(dense_model, t), plan, node));
        }
      }
    }
    const int layers_per_stage = plan.layers_of_stage(st, model.layers);
    const int redone = plan.recomputed_layers(layers_per_stage);  // its first `redone` layers
    // Of them (and of the redone ones), the MoE model's MoE layers; the rest
    // are dense. A dense model's layers are all of the one kind, `layer`.
    const int main_layers = moe ? model.moe_layers_in(first_layer, layers_per_stage) : layers_per_stage;
    const int dense_layers = layers_per_stage - main_layers;
    const int main_redone = moe ? model.moe_layers_in(first_layer, redone) : redone;
    const int dense_redone = redone - main_redone;
    first_layer += layers_per_stage;
    PassTimes times = one.times(main_layers);
    times.plus(one_dense.times(dense_layers));
    PassTimes embedding_times, head_times;
    if (first) embedding_times.add(embedding, 1, timing);
    if (last) head_times.add(head, 1, timing);
    times.plus(embedding_times);
    times.plus(head_times);
    times.input_grad += main_redone * redo_one.seconds + dense_redone * redo_dense.seconds;
    // Fine-grained activation offloading: each MoE layer's offloaded inputs
    // cross the host link beside that layer's pass; a copy that outlasts the
    // pass holds it back (the forward's to the host, the backward's back).
    // (A recomputed layer's backward window includes its recomputation.)
    const double offloaded_per_layer =
        moe && plan.offload_modules != 0
            ? offloaded_bytes_per_moe_layer(plan.offload_modules,
                                            b * s / (sp && plan.tp > 1 ? t : 1.0) * model.moe.top_k * moe_layout.load,
                                            model.moe.experts / plan.ep, h * moe_layout.etp, model.moe.expert_ffn,
                                            2.0 * kept_input_scale)
            : 0.0;
    if (offloaded_per_layer > 0.0) {
      const double link = node.pcie_gb_per_s * 1e9;
      const double backward = one.input_grad + one.weight_grad;
      times.forward += main_layers * exposed_copy_seconds(offloaded_per_layer, link, one.forward);
      times.input_grad += main_redone * exposed_copy_seconds(offloaded_per_layer, link, backward + redo_one.seconds) +
                          (main_layers - main_redone) * exposed_copy_seconds(offloaded_per_layer, link, backward);
    }
    // DeepSpeed's CPU checkpointing (Plan::checkpoint_in_cpu): a recomputed
    // layer's checkpoint, the input full recompute keeps, goes to the host
    // as the layer's forward starts and comes back as its recomputation
    // starts, each a blocking copy over the host link that holds the pass
    // back whole.
    const double checkpoint_bytes =
        plan.checkpoint_in_cpu ? layer_activation_bytes(local, plan.microbatch_size, plan.tp, Recompute::kFull, sp,
                                                        plan.attention, plan.elementwise, plan.kv_repeat)
                               : 0.0;
    const double checkpoint_copy_s = checkpoint_bytes > 0.0 ? checkpoint_bytes / (node.pcie_gb_per_s * 1e9) : 0.0;
    times.forward += redone * checkpoint_copy_s;
    times.input_grad += redone * checkpoint_copy_s;
    times.tp_backward += main_redone * redo_one.tp_comm_s + dense_redone * redo_dense.tp_comm_s;
    times.cp_backward += main_redone * redo_one.cp_comm_s + dense_redone * redo_dense.cp_comm_s;
    times.ep_backward += main_redone * redo_one.ep_comm_s;
    // Scatter-gather: a stage that received 1/tp of an activation (forward)
    // or of its gradient (backward) from another pipeline rank all-gathers it
    // in its tensor group before its compute can use it, on the compute
    // stream. Neighbouring stages on one rank (pp = 1 with virtual stages,
    // the bend of a V) pass it in memory.
    if (split_sends && !gather_free) {
      const double gather =
          hw::collective_time(hw::CollectiveKind::kAllGather, b * s * h * kActivationBytes, tp_group, node, algorithm)
              .to_seconds();
      if (!first && plan.rank_of_stage(st - 1) != r) {
        times.forward += gather;
        times.tp_forward += gather;
      }
      if (!last && plan.rank_of_stage(st + 1) != r) {
        times.input_grad += gather;
        times.tp_backward += gather;
      }
    }

    StageCost c;
    c.layers = layers_per_stage;
    c.forward = core::Time::seconds(times.forward);
    c.input_grad = core::Time::seconds(times.input_grad);
    c.weight_grad = core::Time::seconds(times.weight_grad);
    c.tp_comm_forward = core::Time::seconds(times.tp_forward);
    c.tp_comm_backward = core::Time::seconds(times.tp_backward);
    c.cp_comm_forward = core::Time::seconds(times.cp_forward);
    c.cp_comm_backward = core::Time::seconds(times.cp_backward);
    c.ep_comm_forward = core::Time::seconds(times.ep_forward);
    c.ep_comm_backward = core::Time::seconds(times.ep_backward);
    if (moe) {
      // The stage's layers (the first `redone` of them recomputed); the rest
      // of each pass is everything else.
      auto stage_chunks = [&](const StageCost::EpChunks& per_layer, const StageCost::EpChunks& redo, double pass_s) {
        StageCost::EpChunks out;
        out.dispatch = main_layers * per_layer.dispatch + main_redone * redo.dispatch;
        out.mlp = main_layers * per_layer.mlp + main_redone * redo.mlp;
        out.combine = main_layers * per_layer.combine + main_redone * redo.combine;
        out.rest = std::max(0.0, pass_s - out.dispatch - out.mlp - out.combine);
        return out;
      };
      c.moe_layers = main_layers;
      c.moe_layers_redone = main_redone;
      c.ep_forward_collectives = exchanges.forward;
      c.ep_backward_collectives = exchanges.backward;
      c.ep_redo_collectives = exchanges.redo;
      c.ep_forward_chunks = stage_chunks(exchanges.forward_chunks, StageCost::EpChunks{}, times.forward);
      c.ep_backward_chunks = stage_chunks(exchanges.backward_chunks, exchanges.redo_chunks, times.input_grad + times.weight_grad);
    }

    // What the stage keeps between its passes, and its passes' transients.
    const double kept_inputs = add_stage_activations(
        c, {.model = model,
            .local = local,
            .dense_model = dense_model,
            .plan = plan,
            .moe_layout = moe_layout,
            .layers = {.layers = layers_per_stage,
                       .redone = redone,
                       .main = main_layers,
                       .main_redone = main_redone,
                       .dense = dense_layers,
                       .dense_redone = dense_redone,
                       .first = first,
                       .last = last},
            .kept_input_scale = kept_input_scale,
            .checkpoint_bytes = checkpoint_bytes,
            .offloaded_per_layer = offloaded_per_layer});
    // (W's inputs X that Transformer Engine keeps in FP8 take half their bytes, as above.)
    double w_operands = main_layers * weight_grad_operand_bytes(layer) - (1.0 - kept_input_scale) * kept_inputs;
    if (dense_layers > 0) w_operands += dense_layers * weight_grad_operand_bytes(dense_layer);
    if (first) w_operands += weight_grad_operand_bytes(embedding);
    if (last) w_operands += weight_grad_operand_bytes(head);
    c.weight_grad_bytes = to_bytes(w_operands);
    c.weight_grad_kept_bytes = to_bytes(kept_input_scale * kept_inputs);
    // The lowering subtracts it from both: a formula drifting apart would free more than it took.
    if (c.weight_grad_kept_bytes > std::min(c.activation_bytes, c.weight_grad_bytes)) {
      throw std::logic_error("stage " + std::to_string(st) + ": the GEMM inputs W reads (" +
                             std::to_string(c.weight_grad_kept_bytes) + " bytes) exceed what the stage keeps or W reads");
    }
    if (plan.twobp_concat) {
      // The same stage over all micro-batches at once.
      const int all = plan.microbatch_size * plan.microbatches();
      PassTimes whole;
      whole.add(layer_ops_of(all), layers_per_stage, timing);
      if (first) whole.add(embedding_ops(local, all, plan.tp, sp), 1, timing);
      if (last) whole.add(head_ops(local, all, plan.tp, sp, plan.elementwise, plan.loss), 1, timing);
      c.weight_grad_concat = core::Time::seconds(whole.weight_grad);
    }

    // Routed experts apart (1/ep of them on each GPU), the rest over tp.
    double params = main_layers * (model.params_per_layer() - model.expert_params_per_layer()) +
                    (dense_layers > 0 ? dense_layers * dense_model.params_per_layer() : 0.0);
    if (first) params += model.embedding_params();
    if (last) params += model.head_params();
    // When the first and last stages share a rank (one pipeline rank, with or
    // without virtual stages) a tied output layer reuses the input embedding;
    // across ranks the last stage keeps its own copy (as Megatron-LM does).
    const bool ends_share_rank = plan.rank_of_stage(0) == plan.rank_of_stage(stages - 1);
    if (last && tied && ends_share_rank) params -= static_cast<double>(model.vocab) * h;
    c.expert_params = main_layers * expert_per_layer;
    // The router and MLA's down projections stay whole on every tensor rank.
    const double replicated =
        main_layers * replicated_per_layer + (dense_layers > 0 ? dense_layers * dense_model.replicated_params_per_layer() : 0.0);
    c.params = (params - replicated) / t + replicated + c.expert_params;
    const double dense_params = c.params - c.expert_params;
    const int expert_shard = plan.expert_shard_group_size();
    // Each micro-batch's weight gradients join the iteration's as W produces
    // them: with a separate kernel, its bytes at the achievable HBM bandwidth.
    // The concatenated W of 2BP adds its one gradient once.
    const core::Time accumulate = core::Time::seconds(grad_add_seconds(c.params, plan, node));
    c.weight_grad += accumulate;
    if (plan.twobp_concat) c.weight_grad_concat += accumulate;
    const double g = grad_value_bytes(plan.grad_dtype);
    // ZeRO-3's persistent tensors (Plan::fsdp_persistence_threshold): whole
    // 16-bit weights on every replica, their gradients and optimizer state
    // sharded as the rest.
    // A layer's sharded parameters on one GPU: with a threshold, its tensors
    // above it as a tensor rank holds them (norms and row-parallel biases
    // whole); without, the layer's 1/tp as everywhere else.
    // (A MoE layer's routed experts apart: 1/(ep etp) of them on the GPU,
    // sharded over the expert-data-parallel group rather than over dp.)
    double persistent_per_layer = 0.0;
    double sharded_per_layer =
        (model.params_per_layer() - model.expert_params_per_layer() - replicated_per_layer) / t + replicated_per_layer;
    if (plan.zero_stage == 3 && plan.fsdp_persistence_threshold > 0.0) {
      sharded_per_layer = 0.0;
      for (double n : model.layer_tensors(plan.tp)) {
        (n <= plan.fsdp_persistence_threshold ? persistent_per_layer : sharded_per_layer) += n;
      }
    }
    // The head's final norm: tensors of h values (counted over tp as head_params is).
    const double final_norm = model.arch == Arch::kGpt ? 2.0 * h : h;
    const double persistent_head = plan.zero_stage == 3 && last && h <= plan.fsdp_persistence_threshold ? final_norm / t : 0.0;
    const double persistent = layers_per_stage * persistent_per_layer + persistent_head;
    const double m = moment_value_bytes(plan.moment_dtype), optimizer_k = 4.0 + 2.0 * m;
    // PyTorch FSDP's FP32 shards: no 16-bit copy, FP32 gradients (shard_g).
    const double weight_bytes = plan.fsdp_fp32_shards ? 0.0 : kActivationBytes;
    const double shard_g = plan.fsdp_fp32_shards ? 4.0 : g;
    c.model_state_bytes = to_bytes(model_state_bytes_per_param(plan.zero_stage, shard, shard_g, m, weight_bytes) * dense_params +
                                   model_state_bytes_per_param(plan.zero_stage, expert_shard, shard_g, m, weight_bytes) *
                                       c.expert_params +
                                   kActivationBytes * persistent * (1.0 - 1.0 / shard));
    // Transformer Engine's FP8 copy of every linear weight and its transpose,
    // beside the BF16 weights (ZeRO-3 gathers and frees those unit by unit;
    // the copies of the units in flight are left out).
    // (A MoE layer's routed experts: 1/ep of them on the GPU, whole.)
    const double linear_per_layer =
        (model.linear_params_per_layer() - model.expert_params_per_layer()) / t +
        model.expert_params_per_layer() / (plan.ep * plan.etp);
    if (fp8 && plan.zero_stage < 3) {
      c.model_state_bytes +=
          to_bytes(fp8_weight_cache_bytes_per_param(plan.fp8_runtime()) *
                   (main_layers * linear_per_layer + dense_layers * dense_model.linear_params_per_layer() / t));
    }
    // Offloading (Plan::offload) moves the shard's optimizer state, with the
    // FP32 gradients it is stepped with (4 bytes), to the host; under ZeRO-2/3
    // the GPU then keeps no gradient shard, and with the parameters offloaded
    // no parameter shard either.
    const bool offload = plan.offload != Offload::kNone;
    const bool offload_params = plan.offload == Offload::kOptimizerAndParams;
    // (A MoE stage's routed experts: their shard 1/edp, the rest's 1/dp.)
    if (offload) {
      auto gone_per_param = [&](int over) {
        return optimizer_k / over + (plan.zero_stage >= 2 ? g / over : 0.0) + (offload_params ? 2.0 / over : 0.0);
      };
      const double hosted_per_param = optimizer_k + 4.0 + (offload_params ? 2.0 : 0.0);
      c.model_state_bytes -=
          to_bytes(gone_per_param(shard) * dense_params + gone_per_param(expert_shard) * c.expert_params);
      c.host_state_bytes =
          to_bytes(hosted_per_param / shard * dense_params + hosted_per_param / expert_shard * c.expert_params);
    }

    // What each tensor rank sends: 1/tp of the activation when the sequence
    // is split (sequence parallelism) or the sends are; all of it otherwise.
    const double sent = split_sends ? b * s * h * kActivationBytes / t : b * s * h * kActivationBytes;
    c.send_forward_bytes = last ? 0.0 : sent;
    c.send_backward_bytes = first ? 0.0 : sent;
    // Gradient buckets and ZeRO-1/2's gathers.
    add_grad_buckets(c, plan, node, algorithm, groups, g);
    if (plan.zero_stage == 3 && plan.replicas() > 1) {
      // The units in forward order, each with its own parameters and times.
      struct Part {
        int layers;
        double params;
        PassTimes times;
        double regathered = 0.0;  // share of its parameters its backward gathers twice (zero3_reuse.hpp)
        int moe_layers = 0;       // of its layers, those with a MoE block (a MoE model's; the rest dense)
      };
      std::vector<Part> parts;
      const double tied_share = last && tied && ends_share_rank ? static_cast<double>(model.vocab) * h : 0.0;
      if (first) parts.push_back({0, model.embedding_params() / t, embedding_times});
      // A MoE model's dense layer on one GPU (DeepSeek's first ones): 1/tp of
      // it, its replicated parameters whole; no experts.
      const double dense_per_layer = dense_layers > 0 ? dense_layer_params_on_gpu(dense_model, t) : 0.0;
      const int stage_first_layer = first_layer - layers_per_stage;
      // Of a layer recomputed whole, what DeepSpeed gathers again for its backward.
      const double again_per_layer =
          plan.recompute == Recompute::kFull && plan.fsdp_max_reuse_distance
              ? regathered_share(model.layer_tensors(plan.tp), plan.fsdp_persistence_threshold,
                                 *plan.fsdp_max_reuse_distance)
              : 0.0;
      for (int l = 0; l < layers_per_stage; l += plan.fsdp_unit_layers) {
        // Its layers (of a MoE model, its MoE and its dense ones), their
        // parameters and times, and the redo of those among the stage's first `redone`.
        const int unit_moe = moe ? model.moe_layers_in(stage_first_layer + l, plan.fsdp_unit_layers) : plan.fsdp_unit_layers;
        const int unit_dense = plan.fsdp_unit_layers - unit_moe;
        double unit_params = unit_moe * (sharded_per_layer + expert_per_layer);
        PassTimes unit_times = one.times(unit_moe);
        if (unit_dense > 0) {
          unit_params += unit_dense * dense_per_layer;
          unit_times.plus(one_dense.times(unit_dense));
        }
        const int unit_redone = std::clamp(redone - l, 0, plan.fsdp_unit_layers);
        const int unit_moe_redone = moe ? model.moe_layers_in(stage_first_layer + l, unit_redone) : unit_redone;
        unit_times.input_grad += unit_moe_redone * redo_one.seconds;
        if (unit_redone > unit_moe_redone) unit_times.input_grad += (unit_redone - unit_moe_redone) * redo_dense.seconds;
        unit_times.forward += unit_redone * checkpoint_copy_s;
        unit_times.input_grad += unit_redone * checkpoint_copy_s;
        parts.push_back({plan.fsdp_unit_layers, unit_params, unit_times,
                         again_per_layer * unit_redone / plan.fsdp_unit_layers, unit_moe});
      }
      if (last) parts.push_back({0, (model.head_params() - tied_share) / t - persistent_head, head_times});
      // The stage-wide rest (the scatter-gather all-gathers; the gradient
      // accumulation kernel by parameters, below) goes to the unit that runs
      // first in each pass: the first unit forward, the last backward.
      double f_sum = 0.0, i_sum = 0.0, w_sum = 0.0;
      const ShardUnitContext unit_context{.plan = plan,
                                          .node = node,
                                          .algorithm = algorithm,
                                          .groups = groups,
                                          .expert_per_layer = expert_per_layer,
                                          .linear_per_layer = linear_per_layer,
                                          .dense_linear_params = dense_model.linear_params_per_layer(),
                                          .grad_bytes = g};
      for (const Part& part : parts) {
        ShardUnit u = shard_unit({.layers = part.layers,
                                  .moe_layers = part.moe_layers,
                                  .params = part.params,
                                  .regathered = part.regathered},
                                 unit_context);
        const double params_share = c.params > 0.0 ? part.params / c.params : 0.0;
        u.forward_share = c.forward > core::Time::zero() ? part.times.forward / c.forward.to_seconds() : 0.0;
        u.input_grad_share = c.input_grad > core::Time::zero() ? part.times.input_grad / c.input_grad.to_seconds() : 0.0;
        u.weight_grad_share = c.weight_grad > core::Time::zero()
                                  ? (part.times.weight_grad + accumulate.to_seconds() * params_share) /
                                        c.weight_grad.to_seconds()
                                  : 0.0;
        f_sum += u.forward_share;
        i_sum += u.input_grad_share;
        w_sum += u.weight_grad_share;
        c.shard_units.push_back(u);
      }
      if (!c.shard_units.empty()) {
        c.shard_units.front().forward_share += 1.0 - f_sum;
        c.shard_units.back().input_grad_share += 1.0 - i_sum;
        c.shard_units.back().weight_grad_share += 1.0 - w_sum;
      }
    }
    if (tied && !ends_share_rank && (first || last)) {
      const hw::CollectiveGroup ends = rank_pairs(cluster, plan, 0, plan.rank_of_stage(stages - 1));
      c.embedding_grad_bytes = static_cast<double>(model.vocab) * h / t * g;
      c.embedding_grad_all_reduce =
          hw::collective_time(hw::CollectiveKind::kAllReduce, c.embedding_grad_bytes, ends, node, algorithm);
    }
    // What each GPU steps: its shard under ZeRO-1/2/3 (and the distributed optimizer), all of it under ZeRO-0.
    const double updated = plan.zero_stage >= 1 ? sharded_share(plan, c.params, c.expert_params) : c.params;
    if (plan.pipelines() > 1) {
      // DualPipe: each pair of copies adds what each keeps after its own
      // reduction, the gradients of what it steps.
      const hw::CollectiveGroup copies = rank_pairs(cluster, plan, r, plan.rank_of_stage(plan.copy_of_stage(st)));
      c.copy_grad_bytes = updated * g;
      c.copy_grad_all_reduce =
          hw::collective_time(hw::CollectiveKind::kAllReduce, c.copy_grad_bytes, copies, node, algorithm);
    }
    // The step, then the gradient buffer zeroed for the next iteration (write
    // g a value it holds: all of the stage's under ZeRO-0/1, 1/dp under 2/3).
    // PyTorch's FSDP shards (fsdp_fp32_shards) are not zeroed: its optimizers'
    // zero_grad sets gradients to None (set_to_none, PyTorch's default since 2.0).
    const double held_grads = plan.fsdp_fp32_shards ? 0.0
                              : plan.zero_stage >= 2 ? sharded_share(plan, c.params, c.expert_params)
                                                     : c.params;
    c.optimizer_step = optimizer_step_time(plan, node, updated, held_grads, c.params, g, shard_g, m);
    out.stages.push_back(c);
  }
  return out;
}

}  // namespace

StageCosts stage_costs(const TransformerSpec& model, const Plan& plan, const hw::ClusterSpec& cluster,
                       hw::CollectiveAlgorithm algorithm, bool with_layer_ops) {
  const double burn = cluster.node.gpu.sustained_tensor_fraction;
  if (!(burn < 1.0)) return costs_at(model, plan, cluster, algorithm, with_layer_ops);
  // The clock the tensor work holds depends on its share of the compute
  // (workload/duty_clock.hpp). Costed at the short-run figures and at the
  // burn's, the compute per micro-batch (every stage's F, I and W) is
  // tensor + other and tensor / burn + other, which gives both parts; then
  // the costs at the share that mix holds.
  auto compute_s = [](const StageCosts& c) {
    double sum = 0.0;
    for (const StageCost& st : c.stages) sum += (st.forward + st.input_grad + st.weight_grad).to_seconds();
    return sum;
  };
  hw::ClusterSpec at = cluster;
  at.node.gpu.sustained_tensor_fraction = 1.0;
  const double short_run = compute_s(costs_at(model, plan, at, algorithm, false));
  StageCosts at_burn = costs_at(model, plan, cluster, algorithm, with_layer_ops);
  const double throttled = compute_s(at_burn);
  const double tensor = std::max(0.0, (throttled - short_run) / (1.0 / burn - 1.0));
  if (!(tensor > 0.0)) return at_burn;  // no tensor work: the clock does not matter
  const double held = duty_clock_fraction(tensor, short_run - tensor, burn);
  at.node.gpu.sustained_tensor_fraction = held;
  StageCosts out = costs_at(model, plan, at, algorithm, with_layer_ops);
  out.tensor_clock_fraction = held;
  out.tensor_duty = tensor_duty(tensor, short_run - tensor, held);
  return out;
}

}  // namespace trainsim::workload
