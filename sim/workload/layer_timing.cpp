#include "workload/layer_timing.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "workload/cp_merge.hpp"
#include "workload/moe.hpp"
#include "workload/tp_overlap.hpp"

namespace trainsim::workload::detail {

double Timing::ep_exchange_seconds(const Op& op, Pass pass) const {
  const int count = pass == Pass::kForward ? op.ep_forward : pass == Pass::kInputGrad ? op.ep_input_grad : 0;
  const hw::CollectiveGroup* over = op.over_etp ? etp_group : ep_group;
  if (count == 0 || over == nullptr) return 0.0;
  const bool forward = pass == Pass::kForward;
  const hw::CollectiveKind kind = op.ep_exchange == EpExchange::kAllToAll ? hw::CollectiveKind::kAllToAll
                                  : (op.ep_exchange == EpExchange::kGather) == forward
                                      ? hw::CollectiveKind::kAllGather
                                      : hw::CollectiveKind::kReduceScatter;
  // DeepEP: fewer bytes through the NICs, the same over NVLink.
  hw::CollectiveGroup group = *over;
  if (op.ep_dedup_experts > 0) {
    group.nic_share /= deepep_network_share(op.ep_dedup_experts, op.ep_dedup_top_k, group.nodes);
  }
  return count * hw::collective_time(kind, op.ep_bytes, group, node, algorithm).to_seconds();
}

double Timing::cp_exchange_seconds(const std::vector<Op>& ops, const Op& op, Pass pass) const {
  if (cp < 2 || pass == Pass::kWeightGrad) return 0.0;
  const bool forward = pass == Pass::kForward;
  auto time = [&](hw::CollectiveKind kind, double bytes) {
    return hw::collective_time(kind, bytes, *cp_group, node).to_seconds();
  };
  if (cp_pytorch) {
    const Op& att = ops.at(static_cast<std::size_t>(op.attention_op));
    if (att.kind != OpKind::kAttention) throw std::logic_error("context-parallel exchange: attention_op is not attention");
    CpExchangeTimes t;
    t.gather_s = time(hw::CollectiveKind::kAllGather, cp * op.cp_kv_bytes);
    // A permute to the next rank: one step of a ring all-gather of cp blocks.
    t.kv_step_s = time(hw::CollectiveKind::kAllGather, cp * op.cp_kv_bytes) / (cp - 1);
    t.grad_step_s = time(hw::CollectiveKind::kAllGather, cp * 2.0 * op.cp_kv_bytes) / (cp - 1);  // FP32
    t.attention_s = op_time(att, pass, node, attention_seq, tp_group, algorithm).compute_s;
    return pytorch_cp_exposed_seconds(cp_algorithm, forward, cp, t);
  }
  switch (cp_algorithm) {
    case CpAlgorithm::kRing: {
      // cp - 1 steps, each the K/V block (and backward its gradient too)
      // passed one rank on, as one step of an all-gather of cp blocks;
      // each hides behind attention on the block that came before it.
      const double block = (forward ? 1.0 : 2.0) * op.cp_kv_bytes;
      const double step = time(hw::CollectiveKind::kAllGather, cp * block) / (cp - 1);
      const Op& att = ops.at(static_cast<std::size_t>(op.attention_op));
      if (att.kind != OpKind::kAttention) throw std::logic_error("context-parallel exchange: attention_op is not attention");
      const double attention = op_time(att, pass, node, attention_seq, tp_group, algorithm).compute_s;
      return (cp - 1) * std::max(0.0, step - attention / cp);
    }
    case CpAlgorithm::kAllGather:
      // Every rank's K and V gathered before attention; their gradients
      // reduce-scattered back after its backward. Nothing hides them.
      return time(forward ? hw::CollectiveKind::kAllGather : hw::CollectiveKind::kReduceScatter, cp * op.cp_kv_bytes);
    case CpAlgorithm::kAllToAll:
      // Q, K and V from sequence shards to head shards, the output back
      // (backward: the output's gradient in, Q's, K's and V's out).
      return 2.0 * time(hw::CollectiveKind::kAllToAll, op.cp_qo_bytes / 2.0) +
             2.0 * time(hw::CollectiveKind::kAllToAll, op.cp_kv_bytes / 2.0);
  }
  return 0.0;
}

OpTiming Timing::of(const std::vector<Op>& ops, std::size_t i, Pass pass) const {
  const Op& op = ops[i];
  if (op.kind == OpKind::kCpExchange) {
    OpTiming t;
    t.cp_comm_s = cp_exchange_seconds(ops, op, pass);
    return t;
  }
  if (op.kind == OpKind::kEpDispatch) {
    OpTiming t;
    t.ep_comm_s = ep_exchange_seconds(op, pass);
    return t;
  }
  OpTiming t = op_time(op, pass, node, op.kind == OpKind::kAttention ? attention_seq : seq, tp_group, algorithm);
  const int count = pass == Pass::kForward     ? op.collectives_forward
                    : pass == Pass::kInputGrad ? op.collectives_input_grad
                                               : 0;
  if (!tp_overlap || (pass != Pass::kForward && !tp_overlap_backward) || op.kind != OpKind::kTpCollective ||
      !op.sequence_parallel || tp < 2 || count == 0 || op.column_gemm < 0 || op.row_gemm < 0) {
    return t;
  }
  const double gather = hw::collective_time(hw::CollectiveKind::kAllGather, op.gather_bytes(pass == Pass::kForward),
                                            tp_group, node, algorithm)
                            .to_seconds();
  const double scatter =
      hw::collective_time(hw::CollectiveKind::kReduceScatter, op.collective_bytes, tp_group, node, algorithm)
          .to_seconds();
  const Op& column_op = ops[static_cast<std::size_t>(op.column_gemm)];
  const Op& row_op = ops[static_cast<std::size_t>(op.row_gemm)];
  const double column = op_time(column_op, pass, node, seq, tp_group, algorithm).compute_s;
  const double row = op_time(row_op, pass, node, seq, tp_group, algorithm).compute_s;
  // The pipelined GEMM runs as tp GEMMs of 1/tp of the tokens each, every
  // one at its own (smaller) shape's rate and with its own launch.
  auto chunked = [&](const Op& gemm) {
    Op part = gemm;
    part.m /= tp;
    part.flops_forward /= tp;
    part.flops_input_grad /= tp;
    part.flops_weight_grad /= tp;
    part.bytes_forward /= tp;
    part.bytes_input_grad /= tp;
    part.bytes_weight_grad /= tp;
    return tp * op_time(part, pass, node, seq, tp_group, algorithm).compute_s;
  };
  const double column_chunks = chunked(column_op), row_chunks = chunked(row_op);
  // What the overlapped pair takes beyond the GEMM's own time, which the GEMM op counts.
  auto exposed = [&](double comm, double chunks, double gemm) {
    return overlapped_seconds(comm, chunks, tp, overlap_slowdown) - gemm;
  };
  // Forward: the input gathered into the column-parallel GEMM, the
  // row-parallel GEMM's output reduce-scattered. Backward the other way:
  // the output gradient gathered into the row-parallel GEMM's dgrad, the
  // column-parallel dgrad's result reduce-scattered.
  // A reduce-scatter of separate projections' summed gradients has no GEMM
  // to run with: it waits, whole, after the sum (op.scatter_after_sum).
  const double column_scatter = op.scatter_after_sum ? scatter : exposed(scatter, column_chunks, column);
  t.tp_comm_s = count * (pass == Pass::kForward ? exposed(gather, column_chunks, column) + exposed(scatter, row_chunks, row)
                                                : exposed(gather, row_chunks, row) + column_scatter);
  // The fused kernels take batch-first operands restrided: no copies.
  t.compute_s = t.memory_s = t.launch_s = 0.0;
  return t;
}

void PassTimes::add(const std::vector<Op>& ops, double repeat, const Timing& timing) {
  for (std::size_t k = 0; k < ops.size(); ++k) {
    const OpTiming f = timing.of(ops, k, Pass::kForward);
    const OpTiming i = timing.of(ops, k, Pass::kInputGrad);
    const OpTiming w = timing.of(ops, k, Pass::kWeightGrad);
    forward += repeat * f.seconds();
    input_grad += repeat * i.seconds();
    weight_grad += repeat * w.seconds();
    tp_forward += repeat * f.tp_comm_s;
    tp_backward += repeat * i.tp_comm_s;
    cp_forward += repeat * f.cp_comm_s;
    cp_backward += repeat * i.cp_comm_s;
    ep_forward += repeat * f.ep_comm_s;
    ep_backward += repeat * i.ep_comm_s;
  }
}

double redone_share(const Op& op, Recompute recompute, unsigned modules) {
  switch (recompute) {
    case Recompute::kNone: return 0.0;
    case Recompute::kSelective:
      return (op.modules & modules) != 0 || (op.attention_core && (modules & kModuleCoreAttn) != 0) ? 1.0 : 0.0;
    case Recompute::kFull: return 1.0;
    case Recompute::kSelectiveOp: return op.op_sac_redo;
  }
  return 0.0;
}

Redo recompute_time(const std::vector<Op>& layer, Recompute recompute, unsigned modules, const Timing& timing) {
  Redo r;
  for (std::size_t k = 0; k < layer.size(); ++k) {
    const double share = redone_share(layer[k], recompute, modules);
    if (share <= 0.0) continue;
    const OpTiming f = timing.of(layer, k, Pass::kForward);
    r.seconds += share * f.seconds();
    r.tp_comm_s += share * f.tp_comm_s;
    r.cp_comm_s += share * f.cp_comm_s;
    r.ep_comm_s += share * f.ep_comm_s;
  }
  return r;
}

LayerOps layer_op_costs(const std::vector<Op>& layer, const Timing& timing, const Timing& redo_timing, const Plan& plan,
                        double grad_add_s) {
  LayerOps out;
  out.grad_add_s = grad_add_s;
  for (std::size_t k = 0; k < layer.size(); ++k) {
    const Op& op = layer[k];
    LayerOpCost c;
    c.name = op.name;
    c.kind = op.kind;
    c.forward = timing.of(layer, k, Pass::kForward);
    c.input_grad = timing.of(layer, k, Pass::kInputGrad);
    c.weight_grad = timing.of(layer, k, Pass::kWeightGrad);
    c.redo = redo_timing.of(layer, k, Pass::kForward);
    c.redone = redone_share(op, plan.recompute, plan.recompute_modules);
    out.ops.push_back(std::move(c));
  }
  return out;
}

MoeLayerExchanges moe_layer_exchanges(const std::vector<Op>& layer, const Timing& timing, const Plan& plan,
                                      const hw::CollectiveGroup& ep_group) {
  MoeLayerExchanges out;
  // The layer's exchanges as collectives, the backward's in reverse order,
  // each kind as ep_exchange_seconds runs it.
  auto collectives = [&](std::size_t k, Pass pass, double share, std::vector<StageCost::EpCollective>& list) {
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
    for (int n = 0; n < count; ++n) list.push_back(e);
  };
  for (std::size_t k = 0; k < layer.size(); ++k) {
    collectives(k, Pass::kForward, 1.0, out.forward);
    collectives(k, Pass::kForward, redone_share(layer[k], plan.recompute, plan.recompute_modules), out.redo);
  }
  for (std::size_t k = layer.size(); k-- > 0;) collectives(k, Pass::kInputGrad, 1.0, out.backward);
  // The chunks: the experts' ops between dispatch and combine, and the two
  // exchanges, each pass with what recompute redoes of it.
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
      (dispatch ? out.forward_chunks.dispatch : out.forward_chunks.combine) += forward;
      (dispatch ? out.backward_chunks.dispatch : out.backward_chunks.combine) += backward;
      (dispatch ? out.redo_chunks.dispatch : out.redo_chunks.combine) += redo * forward;
      between = dispatch;
    } else if (between) {
      out.forward_chunks.mlp += forward;
      out.backward_chunks.mlp += backward;
      out.redo_chunks.mlp += redo * forward;
    }
  }
  return out;
}

}  // namespace trainsim::workload::detail
