// How a stage's layer is timed op by op (stage_costs.cpp's working parts):
// each op's time in each pass on the plan's hardware, with the tensor-,
// context- and expert-parallel communication the compute stream waits for
// (pipelined with the GEMMs where tp_comm_overlap says so); the passes'
// sums over a list of ops; and what recompute redoes.
#pragma once

#include <cstddef>
#include <vector>

#include "hw/cluster_spec.hpp"
#include "hw/collective.hpp"
#include "workload/op_cost.hpp"
#include "workload/plan.hpp"
#include "workload/stage_costs.hpp"

namespace trainsim::workload::detail {

// How a stage's ops are timed: on this hardware, with tensor-parallel
// communication alone or overlapped with its GEMMs (see tp_overlap.hpp).
struct Timing {
  const hw::NodeSpec& node;
  double seq;
  const hw::CollectiveGroup& tp_group;
  hw::CollectiveAlgorithm algorithm;
  int tp;
  bool tp_overlap;
  // Overlap::tp_comm_backward: whether the backward's collectives are pipelined too.
  bool tp_overlap_backward = true;
  // Context parallelism: cp ranks (group cp_group) exchanging keys and values by cp_algorithm.
  int cp = 1;
  CpAlgorithm cp_algorithm = CpAlgorithm::kRing;
  const hw::CollectiveGroup* cp_group = nullptr;
  // The length attention's kernels run at, for their rate: the rank's own
  // part with the ring (blocks of s/cp by s/cp), the whole sequence where the
  // keys (all-gather) or the heads' full sequences (all-to-all) arrive whole.
  double attention_seq = 0.0;
  // A MoE model's expert-parallel group (MoeLayout::ep ranks), null without
  // one; and its expert-tensor-parallel group (etp ranks).
  const hw::CollectiveGroup* ep_group = nullptr;
  const hw::CollectiveGroup* etp_group = nullptr;
  // PyTorch's context parallelism (CpMerge::kPyTorch): its own overlap of the
  // exchange with attention's blocks (cp_merge.hpp).
  bool cp_pytorch = false;
  // How much longer a GEMM chunk takes beside its communication chunk (Overlap::compute_slowdown).
  double overlap_slowdown = kOverlapComputeSlowdown;

  // A MoE block's dispatch or combine in `pass`: an all-to-all of the op's
  // bytes, or (the all-gather dispatcher) an all-gather where tokens arrive
  // and a reduce-scatter where outputs leave, backward the other way round.
  double ep_exchange_seconds(const Op& op, Pass pass) const;

  // What the exchange before attention leaves exposed in `pass`.
  double cp_exchange_seconds(const std::vector<Op>& ops, const Op& op, Pass pass) const;

  OpTiming of(const std::vector<Op>& ops, std::size_t i, Pass pass) const;
};

struct PassTimes {
  double forward = 0.0, input_grad = 0.0, weight_grad = 0.0;
  double tp_forward = 0.0, tp_backward = 0.0;
  double cp_forward = 0.0, cp_backward = 0.0;
  double ep_forward = 0.0, ep_backward = 0.0;

  PassTimes times(double n) const {
    return {n * forward,    n * input_grad,  n * weight_grad, n * tp_forward, n * tp_backward,
            n * cp_forward, n * cp_backward, n * ep_forward,  n * ep_backward};
  }
  void plus(const PassTimes& o) {
    forward += o.forward;
    input_grad += o.input_grad;
    weight_grad += o.weight_grad;
    tp_forward += o.tp_forward;
    tp_backward += o.tp_backward;
    cp_forward += o.cp_forward;
    cp_backward += o.cp_backward;
    ep_forward += o.ep_forward;
    ep_backward += o.ep_backward;
  }

  void add(const std::vector<Op>& ops, double repeat, const Timing& timing);
};

// Time to redo, during backward, the part of one layer's forward that the
// recompute policy dropped: everything (full), or the attention core
// (selective); and the part of it in tensor-parallel collectives (full
// recompute repeats the forward's all-reduces).
struct Redo {
  double seconds = 0.0;
  double tp_comm_s = 0.0;
  double cp_comm_s = 0.0;
  double ep_comm_s = 0.0;
};
// The share of an op's forward that `recompute` redoes.
double redone_share(const Op& op, Recompute recompute, unsigned modules);
Redo recompute_time(const std::vector<Op>& layer, Recompute recompute, unsigned modules, const Timing& timing);
// A MoE layer's exchanges (dispatch and combine, and the expert-tensor
// group's gather and scatter) as collectives, in the order each pass runs
// them (StageCost::EpCollective), and the layer cut where they fall
// (StageCost::EpChunks): the forward's, the backward's (I and W) and what
// recompute redoes of the forward inside the backward.
struct MoeLayerExchanges {
  std::vector<StageCost::EpCollective> forward, backward, redo;
  StageCost::EpChunks forward_chunks, backward_chunks, redo_chunks;
};
MoeLayerExchanges moe_layer_exchanges(const std::vector<Op>& layer, const Timing& timing, const Plan& plan,
                                      const hw::CollectiveGroup& ep_group);
// A layer's ops as costed, for the breakdown (LayerOps).
LayerOps layer_op_costs(const std::vector<Op>& layer, const Timing& timing, const Timing& redo_timing, const Plan& plan,
                        double grad_add_s);

}  // namespace trainsim::workload::detail
