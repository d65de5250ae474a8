#include "workload/stage_costs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "hw/collective.hpp"
#include "workload/activation_offload.hpp"
#include "workload/cp_merge.hpp"
#include "workload/duty_clock.hpp"
#include "workload/expert_folding.hpp"
#include "workload/layer_timing.hpp"
#include "workload/mla.hpp"
#include "workload/moe.hpp"
#include "workload/op_cost.hpp"
#include "workload/tp_overlap.hpp"
#include "workload/zero3_reuse.hpp"

namespace trainsim::workload {

using detail::PassTimes;
using detail::Redo;
using detail::Timing;
using detail::layer_op_costs;
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

std::int64_t to_bytes(double b) {
  if (!(b < 0x1p62)) throw std::overflow_error("a memory size of " + std::to_string(b) + " bytes is beyond what the simulator represents");
  return static_cast<std::int64_t>(std::llround(b));
}

}  // namespace

namespace {

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
  for (int st = 0; st < stages; ++st) {
    const bool first = st % pipeline_length == 0;
    const bool last = (st + 1) % pipeline_length == 0;
    if (first) first_layer = 0;
    const int r = plan.rank_of_stage(st);
    std::vector<int> tp_gpus;
    for (int k = 0; k < plan.tp; ++k) tp_gpus.push_back(plan.gpu_of(r, 0, k));
    // Every tensor rank reduces its own shard over its data-parallel group, all
    // at once: groups whose members share a NIC split it.
    std::vector<std::vector<int>> dp_groups(plan.tp);
    for (int k = 0; k < plan.tp; ++k) {
      for (int d = 0; d < plan.replicas(); ++d) dp_groups[k].push_back(plan.gpu_of(r, d, k));
    }
    const hw::CollectiveGroup tp_group = hw::group_of(cluster, tp_gpus);
    // MoE: the stage's GPUs in tp-cp-dp order, numbered j, in expert groups
    // as Megatron-Core folds them (workload/expert_folding.hpp), every group
    // of a kind running at once.
    hw::CollectiveGroup ep_group, etp_group, edp_group;
    // ZeRO-3 with HSDP: each edp group's members inside one shard group
    // (consecutive in the group, Plan::expert_shard_group_size of them) shard
    // the experts; the members at the same place in each shard group hold
    // copies of one shard. Without HSDP the first is edp_group.
    hw::CollectiveGroup expert_shard_group, expert_replica_group;
    if (moe) {
      std::vector<int> stage_gpus;
      for (int d = 0; d < plan.replicas(); ++d) {
        for (int k = 0; k < plan.tp; ++k) stage_gpus.push_back(plan.gpu_of(r, d, k));
      }
      const std::size_t et = static_cast<std::size_t>(plan.etp), e = static_cast<std::size_t>(plan.ep);
      std::vector<std::vector<int>> ep_groups(stage_gpus.size() / e), etp_groups(stage_gpus.size() / et),
          edp_groups(e * et);
      const ExpertFolding folding{plan.etp, plan.ep};
      for (std::size_t j = 0; j < stage_gpus.size(); ++j) {
        const int at = static_cast<int>(j);
        ep_groups[static_cast<std::size_t>(folding.ep_group_of(at))].push_back(stage_gpus[j]);
        etp_groups[static_cast<std::size_t>(folding.etp_group_of(at))].push_back(stage_gpus[j]);
        edp_groups[static_cast<std::size_t>(folding.edp_group_of(at))].push_back(stage_gpus[j]);
      }
      // Groups of a kind can sit differently (ep 6 on 8-GPU nodes: one group
      // inside a node, the next across two): every rank waits for the
      // slowest, timed here on a nominal buffer.
      auto slowest = [&](const std::vector<std::vector<int>>& groups, hw::CollectiveKind kind) {
        hw::CollectiveGroup worst;
        double worst_s = -1.0;
        for (const std::vector<int>& members : groups) {
          const hw::CollectiveGroup g = hw::group_of(cluster, members);
          const double t_s = hw::collective_time(kind, 1e9, g, node, algorithm).to_seconds();
          if (t_s > worst_s) {
            worst_s = t_s;
            worst = g;
          }
        }
        worst.nic_share *= hw::concurrent_nic_share(cluster, groups);
        return worst;
      };
      ep_group = slowest(ep_groups, hw::CollectiveKind::kAllToAll);
      etp_group = slowest(etp_groups, hw::CollectiveKind::kAllGather);
      edp_group = slowest(edp_groups, hw::CollectiveKind::kReduceScatter);
      expert_shard_group = edp_group;
      const auto m = static_cast<std::size_t>(plan.expert_shard_group_size());
      if (plan.zero_stage == 3 && plan.shard_replicas() > 1) {
        std::vector<std::vector<int>> shards, replicas;
        for (const std::vector<int>& g : edp_groups) {
          for (std::size_t first = 0; first < g.size(); first += m) shards.emplace_back(g.begin() + first, g.begin() + first + m);
          for (std::size_t k = 0; k < m; ++k) {
            replicas.emplace_back();
            for (std::size_t i = k; i < g.size(); i += m) replicas.back().push_back(g[i]);
          }
        }
        expert_shard_group = slowest(shards, hw::CollectiveKind::kReduceScatter);
        expert_replica_group = slowest(replicas, hw::CollectiveKind::kAllReduce);
      }
    }
    hw::CollectiveGroup dp_group = hw::group_of(cluster, dp_groups.front());
    dp_group.nic_share *= hw::concurrent_nic_share(cluster, dp_groups);
    const int shard = plan.shard_group_size(), copies = plan.shard_replicas();

    // One layer, then the stage: its layers, the embedding on the first and
    // the output head on the last. Recomputation runs just before the
    // backward that needs it: part of I.
    // Context parallelism: every tensor rank's cp group (replicas 0..cp-1 of
    // the first data-parallel rank) exchanges at once.
    hw::CollectiveGroup cp_group;
    if (plan.cp > 1) {
      std::vector<std::vector<int>> cp_groups(plan.tp);
      for (int k = 0; k < plan.tp; ++k) {
        for (int c = 0; c < plan.cp; ++c) cp_groups[k].push_back(plan.gpu_of(r, c, k));
      }
      cp_group = hw::group_of(cluster, cp_groups.front());
      cp_group.nic_share *= hw::concurrent_nic_share(cluster, cp_groups);
    }
    // PyTorch's context parallelism calls attention block by block whatever
    // brings the keys.
    const bool cp_pytorch = plan.cp_pytorch_merge();
    const double attention_seq =
        plan.cp > 1 && plan.cp_algorithm != CpAlgorithm::kRing && !cp_pytorch ? model.seq : s;
    const Timing timing{node,    s,           tp_group,         algorithm, plan.tp, plan.overlap.tp_comm,
                        plan.overlap.tp_comm_backward, plan.cp, plan.cp_algorithm, &cp_group, attention_seq,
                        moe ? &ep_group : nullptr, moe && plan.etp > 1 ? &etp_group : nullptr, cp_pytorch,
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
    PassTimes one;
    one.add(layer, 1, timing);
    const Redo redo_one = recompute_time(layer, plan.recompute, plan.recompute_modules, redo_timing);
    PassTimes one_dense;
    Redo redo_dense;
    if (!dense_layer.empty()) {
      one_dense.add(dense_layer, 1, timing);
      redo_dense = recompute_time(dense_layer, plan.recompute, plan.recompute_modules, redo_timing);
    }
    // One layer's MoE chunks (see StageCost::EpChunks): the experts' ops
    // between dispatch and combine, and the two exchanges, each pass with
    // what recompute redoes of it counted in the backward.
    StageCost::EpChunks layer_f, layer_b, layer_redo;
    std::vector<StageCost::EpCollective> ep_forward, ep_backward, ep_redo;
    if (moe) {
      // The layer's exchanges as collectives (StageCost::EpCollective), the
      // backward's in reverse order, each kind as ep_exchange_seconds runs it.
      auto collectives = [&](std::size_t k, Pass pass, double share, std::vector<StageCost::EpCollective>& out) {
        const Op& op = layer[k];
        const int count = pass == Pass::kForward ? op.ep_forward : op.ep_input_grad;
        if (op.kind != OpKind::kEpDispatch || count == 0 || share <= 0.0) return;
        const bool forward = pass == Pass::kForward;
        StageCost::EpCollective e;
        e.kind = op.ep_exchange == EpExchange::kAllToAll        ? hw::CollectiveKind::kAllToAll
                 : (op.ep_exchange == EpExchange::kGather) == forward ? hw::CollectiveKind::kAllGather
                                                                      : hw::CollectiveKind::kReduceScatter;
        e.bytes = share * op.ep_bytes;
        e.over_etp = op.over_etp;
        e.dispatch = op.name == kMoeDispatchOp || op.name == kMoeEtpGatherOp;
        if (op.ep_dedup_experts > 0 && ep_group.nodes > 1) {
          e.across_share = deepep_network_share(op.ep_dedup_experts, op.ep_dedup_top_k, ep_group.nodes);
        }
        e.analytic = core::Time::seconds(share * timing.ep_exchange_seconds(op, pass) / count);
        for (int n = 0; n < count; ++n) out.push_back(e);
      };
      for (std::size_t k = 0; k < layer.size(); ++k) {
        collectives(k, Pass::kForward, 1.0, ep_forward);
        collectives(k, Pass::kForward, redone_share(layer[k], plan.recompute, plan.recompute_modules), ep_redo);
      }
      for (std::size_t k = layer.size(); k-- > 0;) collectives(k, Pass::kInputGrad, 1.0, ep_backward);
      bool between = false;
      for (std::size_t k = 0; k < layer.size(); ++k) {
        const Op& op = layer[k];
        const OpTiming f = timing.of(layer, k, Pass::kForward), i = timing.of(layer, k, Pass::kInputGrad),
                       w = timing.of(layer, k, Pass::kWeightGrad);
        const double redo = redone_share(op, plan.recompute, plan.recompute_modules);
        const double forward = f.seconds();
        const double backward = i.seconds() + w.compute_s + w.tp_comm_s;
        if (op.kind == OpKind::kEpDispatch) {
          // The expert-tensor group's gather goes with the dispatch, its
          // reduce-scatter with the combine.
          const bool dispatch = op.name == kMoeDispatchOp || op.name == kMoeEtpGatherOp;
          (dispatch ? layer_f.dispatch : layer_f.combine) += forward;
          (dispatch ? layer_b.dispatch : layer_b.combine) += backward;
          (dispatch ? layer_redo.dispatch : layer_redo.combine) += redo * forward;
          between = dispatch;
        } else if (between) {
          layer_f.mlp += forward;
          layer_b.mlp += backward;
          layer_redo.mlp += redo * forward;
        }
      }
    }
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
      c.ep_forward_collectives = ep_forward;
      c.ep_backward_collectives = ep_backward;
      c.ep_redo_collectives = ep_redo;
      c.ep_forward_chunks = stage_chunks(layer_f, StageCost::EpChunks{}, times.forward);
      c.ep_backward_chunks = stage_chunks(layer_b, layer_redo, times.input_grad + times.weight_grad);
    }

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
    // Host <-> GPU copies over PCIe, each way.
    auto pcie_seconds = [&](double bytes) { return offload ? bytes / (node.pcie_gb_per_s * 1e9) : 0.0; };
    // Of `bytes` of parameters or gradients (or of a count of parameters),
    // `expert_bytes` the routed experts', this GPU's shard.
    auto owned = [&](double bytes, double expert_bytes) {
      return expert_bytes > 0.0 ? (bytes - expert_bytes) / shard + expert_bytes / expert_shard : bytes / shard;
    };

    // What each tensor rank sends: 1/tp of the activation when the sequence
    // is split (sequence parallelism) or the sends are; all of it otherwise.
    const double sent = split_sends ? b * s * h * kActivationBytes / t : b * s * h * kActivationBytes;
    c.send_forward_bytes = last ? 0.0 : sent;
    c.send_backward_bytes = first ? 0.0 : sent;
    // Gradient buckets, in the order backward fills them.
    const double grad_bytes = c.params * g;
    c.param_bytes = c.params * kActivationBytes;
    const double bucket_bytes = plan.grad_bucket_mib * 1048576.0;
    // A MoE stage's buckets hold its mix of gradients: the routed experts'
    // share reduced (and gathered) over the expert-data-parallel group, the
    // rest over the data-parallel one.
    const double expert_share = c.expert_share();
    const bool reduces = plan.replicas() > 1 || (expert_share > 0.0 && expert_shard > 1);
    // The routed experts' part of such a collective, over edp (zero without
    // experts or with one expert replica); the whole is the dense part over
    // dp, then this.
    auto expert_collective = [&](hw::CollectiveKind kind, double bytes) {
      return expert_share > 0.0 && expert_shard > 1
                 ? hw::collective_time(kind, bytes * expert_share, edp_group, node, algorithm)
                 : core::Time{};
    };
    auto dp_collective = [&](hw::CollectiveKind kind, double bytes) {
      if (expert_share == 0.0) return hw::collective_time(kind, bytes, dp_group, node, algorithm);
      core::Time time;
      if (plan.replicas() > 1) time += hw::collective_time(kind, bytes * (1.0 - expert_share), dp_group, node, algorithm);
      return time + expert_collective(kind, bytes);
    };
    // ZeRO-3 reduces every backward's gradients at once (below), not in buckets.
    const auto buckets = reduces && plan.zero_stage < 3
                             ? std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(grad_bytes / bucket_bytes)))
                             : 1;
    if (buckets > 1'000'000) {
      throw std::overflow_error(fmt::format("{} gradient buckets on one stage ({:.3g} GB of gradients a GPU: is the model "
                                            "that large?); raise parallel.grad_bucket_mib, or split the model over "
                                            "more GPUs",
                                            buckets, grad_bytes / 1e9));
    }
    const auto reduce = plan.zero_stage >= 1 ? hw::CollectiveKind::kReduceScatter : hw::CollectiveKind::kAllReduce;
    c.grad_bytes = grad_bytes;
    c.grad_reduce_kind = reduce;
    // Every bucket but the last is full: cost each distinct size once.
    double costed_bytes = -1.0;
    core::Time costed, costed_experts, costed_copy;
    for (std::size_t k = 0; k < buckets; ++k) {
      const double bytes = reduces && plan.zero_stage < 3
                               ? std::min(bucket_bytes, grad_bytes - static_cast<double>(k) * bucket_bytes)
                               : 0.0;
      c.grad_bucket_share.push_back(buckets == 1 ? 1.0 : bytes / grad_bytes);
      if (bytes != costed_bytes) {
        // Offloaded, the bucket's reduced shard then goes to the host.
        // (With no replica to reduce with, the stage's gradients still go
        // to the host optimizer, as one bucket.)
        const double copied = reduces || plan.zero_stage == 3 ? bytes : grad_bytes;
        costed_copy = core::Time::seconds(pcie_seconds(owned(copied, copied * expert_share)));
        costed = dp_collective(reduce, bytes) + costed_copy;
        costed_experts = expert_collective(reduce, bytes);
        costed_bytes = bytes;
      }
      c.grad_bucket_reduce.push_back(costed);
      if (offload) c.grad_bucket_host_copy.push_back(costed_copy);
      if (expert_share > 0.0) c.grad_bucket_reduce_experts.push_back(costed_experts);
    }
    if (plan.zero_stage == 1 || plan.zero_stage == 2) {
      c.param_all_gather = dp_collective(hw::CollectiveKind::kAllGather, c.param_bytes);
      c.param_all_gather_experts = expert_collective(hw::CollectiveKind::kAllGather, c.param_bytes);
      if (plan.overlap.param_gather && reduces) {
        // The forward uses the buckets last-filled first.
        for (auto share = c.grad_bucket_share.rbegin(); share != c.grad_bucket_share.rend(); ++share) {
          c.param_bucket_gather.push_back(dp_collective(hw::CollectiveKind::kAllGather, *share * c.param_bytes));
          if (expert_share > 0.0) {
            c.param_bucket_gather_experts.push_back(
                expert_collective(hw::CollectiveKind::kAllGather, *share * c.param_bytes));
          }
        }
      }
    }
    if (plan.zero_stage == 3 && plan.replicas() > 1) {
      // HSDP: gathers and scatters run in groups of fsdp_shard_size
      // consecutive replicas, the shards' all-reduce across the groups (one
      // replica of each); every tensor rank's groups at once.
      hw::CollectiveGroup shard_group = dp_group, replica_group = dp_group;
      if (copies > 1) {
        std::vector<std::vector<int>> shard_groups, replica_groups;
        for (int k = 0; k < plan.tp; ++k) {
          for (int g = 0; g < copies; ++g) {
            shard_groups.emplace_back(dp_groups[k].begin() + g * shard, dp_groups[k].begin() + (g + 1) * shard);
          }
          for (int j = 0; j < shard; ++j) {
            replica_groups.emplace_back();
            for (int g = 0; g < copies; ++g) replica_groups.back().push_back(dp_groups[k][g * shard + j]);
          }
        }
        shard_group = hw::group_of(cluster, shard_groups.front());
        shard_group.nic_share *= hw::concurrent_nic_share(cluster, shard_groups);
        replica_group = hw::group_of(cluster, replica_groups.front());
        replica_group.nic_share *= hw::concurrent_nic_share(cluster, replica_groups);
      }
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
      // A MoE unit's experts gather and scatter over the expert-data-parallel
      // group, the rest over dp: two collectives, one after the other.
      // The experts' part and its time (zero without experts) in `experts`.
      auto sharded_collective = [&](hw::CollectiveKind kind, double bytes, const Part& part, double per_param,
                                    std::pair<double, core::Time>& experts) {
        const double expert_bytes = part.moe_layers * expert_per_layer * per_param;
        experts = {0.0, core::Time{}};
        if (expert_bytes <= 0.0) return hw::collective_time(kind, bytes, shard_group, node, algorithm);
        experts = {expert_bytes, expert_shard > 1
                                     ? hw::collective_time(kind, expert_bytes, expert_shard_group, node, algorithm)
                                     : core::Time{}};
        return hw::collective_time(kind, bytes - expert_bytes, shard_group, node, algorithm) + experts.second;
      };
      if (last) parts.push_back({0, (model.head_params() - tied_share) / t - persistent_head, head_times});
      // The stage-wide rest (the scatter-gather all-gathers; the gradient
      // accumulation kernel by parameters, below) goes to the unit that runs
      // first in each pass: the first unit forward, the last backward.
      double f_sum = 0.0, i_sum = 0.0, w_sum = 0.0;
      for (const Part& part : parts) {
        ShardUnit u;
        u.layers = part.layers;
        u.params = part.params;
        // With FP8 gathers a layer's linear weights move as one byte a parameter.
        const double fp8_gathered =
            fp8 && plan.fp8_param_gather
                ? part.moe_layers * linear_per_layer +
                      (part.layers > part.moe_layers
                           ? (part.layers - part.moe_layers) * dense_model.linear_params_per_layer() / t
                           : 0.0)
                : 0.0;
        u.gather_bytes = part.params * kActivationBytes - fp8_gathered;
        const double part_experts = part.moe_layers * expert_per_layer;  // its routed experts' parameters
        // Offloaded parameters: the shard comes from the host first.
        std::pair<double, core::Time> experts;
        const double gathered_per_param = fp8 && plan.fp8_param_gather ? 1.0 : kActivationBytes;
        u.gather_host_copy = core::Time::seconds(
            offload_params ? pcie_seconds(owned(u.gather_bytes, part_experts * gathered_per_param)) : 0.0);
        u.gather = sharded_collective(hw::CollectiveKind::kAllGather, u.gather_bytes, part, gathered_per_param, experts) +
                   u.gather_host_copy;
        std::tie(u.gather_expert_bytes, u.gather_experts) = experts;
        // The second gather of a recomputed unit: that share of its bytes, as its gather moves them.
        u.regather_bytes = part.regathered * u.gather_bytes;
        u.regather = core::Time::seconds(u.gather.to_seconds() * part.regathered);
        if (plan.fsdp_copy_out && u.gather_bytes > 0.0) {
          u.copy_out = core::Time::seconds(2.0 * u.gather_bytes / (node.gpu.hbm_achievable_tb_per_s * 1e12) +
                                           node.gpu.kernel_overhead_us * 1e-6);
        }
        u.grad_bytes = part.params * g;
        // Offloaded, the reduced gradient shard goes to the host once fully
        // reduced: after the scatter, or after HSDP's all-reduce. DeepSpeed's
        // stage 3 (Plan::grad_copy blocking) moves the 16-bit shard to its
        // host buffer and back after every backward, and after the last one
        // of the iteration also copies it as FP32 into the optimizer's
        // gradient, one after the other on its reduction stream.
        const bool deepspeed_copies = plan.blocking_grad_copy();
        const double copied_per_param = deepspeed_copies ? 2.0 * g : g;
        const core::Time to_host =
            core::Time::seconds(pcie_seconds(owned(part.params * copied_per_param, part_experts * copied_per_param)));
        u.grad_host_copy = to_host;
        if (deepspeed_copies) {
          u.grad_fp32_copy = core::Time::seconds(pcie_seconds(owned(part.params * 4.0, part_experts * 4.0)));
        }
        u.grad_scatter = sharded_collective(hw::CollectiveKind::kReduceScatter, u.grad_bytes, part, g, experts);
        std::tie(u.grad_expert_bytes, u.grad_scatter_experts) = experts;
        if (copies > 1) {
          // HSDP: the shards' all-reduce across the groups; a MoE unit's
          // experts' shard over its own copies after the rest's.
          if (u.grad_expert_bytes > 0.0) {
            u.grad_replicate_experts = hw::collective_time(hw::CollectiveKind::kAllReduce, u.grad_expert_bytes / expert_shard,
                                                           expert_replica_group, node, algorithm);
          }
          u.grad_replicate = hw::collective_time(hw::CollectiveKind::kAllReduce,
                                                 u.grad_expert_bytes > 0.0 ? (u.grad_bytes - u.grad_expert_bytes) / shard
                                                                           : u.grad_bytes / shard,
                                                 replica_group, node, algorithm) +
                             u.grad_replicate_experts + to_host;
        } else {
          u.grad_scatter += to_host;
        }
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
    const double updated = plan.zero_stage >= 1 ? owned(c.params, c.expert_params) : c.params;
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
                              : plan.zero_stage >= 2 ? owned(c.params, c.expert_params)
                                                     : c.params;
    if (!offload) {
      c.optimizer_step =
          core::Time::seconds((updated * optimizer_bytes_per_param(shard_g, plan.precision, m, !plan.fsdp_fp32_shards) +
                               held_grads * g) /
                                  (node.gpu.hbm_achievable_tb_per_s * 1e12) +
                              node.gpu.kernel_overhead_us * 1e-6);
    } else {
      // On the host: the same passes over the shard with FP32 gradients, at
      // the DRAM bandwidth the node's GPUs' processes share, all stepping at
      // once; then the updated 16-bit shard back to the GPU (unless the
      // parameters live on the host), and the GPU's gradient buffer zeroed
      // where it keeps one (ZeRO-1).
      // Each GPU's process steps on its share of the cores too (DeepSpeed
      // binds a rank's CPU Adam threads to its cores): no faster than those
      // cores at the rate one core was measured to step (a calibration
      // profile's host_step; unknown without one).
      const double host_share = node.host_memory_tb_per_s * 1e12 / node.gpus_per_node;
      double host_step_s = updated * optimizer_bytes_per_param(4.0, plan.precision, m) / host_share;
      if (node.host_cores > 0 && node.host_adam_params_per_s_per_core > 0.0) {
        const double cores = static_cast<double>(node.host_cores) / node.gpus_per_node;
        host_step_s = std::max(host_step_s, updated / (cores * node.host_adam_params_per_s_per_core));
      }
      const double gpu_grads = plan.zero_stage == 1 ? c.params * g : 0.0;
      c.optimizer_step = core::Time::seconds(host_step_s +
                                             (offload_params ? 0.0 : pcie_seconds(updated * kActivationBytes)) +
                                             gpu_grads / (node.gpu.hbm_achievable_tb_per_s * 1e12) +
                                             node.gpu.kernel_overhead_us * 1e-6);
    }
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
