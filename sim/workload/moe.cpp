#include "workload/moe.hpp"

#include <algorithm>

#include "workload/op_build.hpp"

namespace trainsim::workload {

void append_moe_ops(std::vector<Op>& ops, const TransformerSpec& model, double tokens, int tp, bool sequence_parallel,
                    const MoeLayout& layout, bool eager) {
  const MoeSpec& moe = model.moe;
  const double h = model.hidden, experts = moe.experts, f = moe.expert_ffn, t = tp;
  const bool sp = sequence_parallel && tp > 1;
  const double routed = sp ? tokens / t : tokens;      // tokens this rank routes
  const double copies = routed * moe.top_k * layout.load;  // expert inputs on the busiest rank
  const int local_experts = moe.experts / layout.ep;
  // Expert tensor parallelism: the etp ranks of a group each run every
  // token the group received, on 1/etp of each expert's width.
  const double rows = copies * layout.etp, width = f / layout.etp;

  ops.push_back(build::gemm("moe_router", routed, h, experts));
  ops.back().op_sac_redo = 1.0;  // per-op checkpointing recomputes the gate (attention_matmuls)
  ops.back().keeps_precision = true;
  // Softmax or sigmoid, top-k and the scores' normalisation over the tokens'
  // FP32 scores: read and write them (4 + 4 bytes), backward 12.
  ops.push_back(build::elementwise("moe_router_top_k", routed * experts, 4.0));
  // Permute: read each token, write its copies (2 + 2 bytes a value);
  // backward adds the copies' gradients back into one.
  Op permute = build::elementwise("moe_permute", copies * h);
  permute.bytes_forward = (routed + copies) * h * kActivationBytes;
  permute.bytes_input_grad = permute.bytes_forward;
  ops.push_back(permute);
  // An exchange of `bytes` over the expert-parallel group (or, over_etp,
  // the expert-tensor one), once forward and once backward.
  auto exchange = [&](const char* name, double bytes, EpExchange kind, bool over_etp) {
    Op op;
    op.name = name;
    op.kind = OpKind::kEpDispatch;
    op.ep_forward = 1;
    op.ep_input_grad = 1;
    op.op_sac_redo = 0.0;
    op.ep_bytes = bytes;
    op.ep_exchange = kind;
    op.over_etp = over_etp;
    if (!over_etp && kind == EpExchange::kAllToAll && layout.dispatcher == MoeDispatcher::kDeepEp) {
      op.ep_dedup_experts = moe.experts;
      op.ep_dedup_top_k = moe.top_k;
    }
    ops.push_back(op);
  };
  // Dispatch and combine: in forward the copies out and the outputs back; in
  // backward the outputs' gradients out and the inputs' gradients back. The
  // all-gather dispatcher gathers every rank's tokens whole (dispatch) and
  // reduce-scatters the outputs back (combine), backward the other way round.
  const bool gathers = layout.dispatcher == MoeDispatcher::kAllGather;
  const double dispatched = (gathers ? layout.ep * routed : copies) * h * kActivationBytes;
  auto dispatch_kind = [&](bool dispatch) {
    return !gathers ? EpExchange::kAllToAll : dispatch ? EpExchange::kGather : EpExchange::kScatter;
  };
  // With expert tensor parallelism the etp group gathers the copies it
  // received (a reduce-scatter backward) and reduce-scatters the outputs,
  // each of the gathered buffer.
  const double gathered = rows * h * kActivationBytes;
  if (layout.ep > 1) exchange(kMoeDispatchOp, dispatched, dispatch_kind(true), false);
  if (layout.etp > 1) exchange(kMoeEtpGatherOp, gathered, EpExchange::kGather, true);
  // Under the all-gather dispatcher a rank's experts see every gathered token
  // routed to them: the same copies per rank as the all-to-all brings.
  // Per-op checkpointing redoes the experts' grouped GEMMs and SwiGLU:
  // TorchTitan's save list (mm, attention, reduce-scatter, all-to-all, max;
  // models/llama4/infra/parallelize.py, _op_sac_save_list) has no
  // torch._grouped_mm, so only the exchanges' outputs are kept.
  Op fc1 = build::grouped_gemm("moe_experts_gate_up", rows, h, 2.0 * width, local_experts);
  fc1.op_sac_redo = 1.0;
  ops.push_back(fc1);
  ops.push_back(build::swiglu("moe_experts_swiglu", rows * width, eager));
  ops.back().modules = kModuleMoeAct;
  Op fc2 = build::grouped_gemm("moe_experts_down", rows, width, h, local_experts);
  fc2.op_sac_redo = 1.0;
  ops.push_back(fc2);
  if (layout.etp > 1) exchange(kMoeEtpScatterOp, gathered, EpExchange::kScatter, true);
  if (layout.ep > 1) exchange(kMoeCombineOp, dispatched, dispatch_kind(false), false);
  // Unpermute: read the copies and their scores, write the tokens.
  Op unpermute = build::elementwise("moe_unpermute", copies * h);
  unpermute.bytes_forward = (routed + copies) * h * kActivationBytes;
  unpermute.bytes_input_grad = (routed + 2.0 * copies) * h * kActivationBytes;
  ops.push_back(unpermute);
  if (moe.shared_experts > 0) {
    const double sf = static_cast<double>(moe.shared_experts) * moe.shared_expert_ffn;
    const int up = static_cast<int>(ops.size());
    // Per-op checkpointing keeps every other matmul of the block, the
    // shared experts' counted on from attention's (TorchTitan runs them
    // after the routed experts, and leaves the router's gate out): one of
    // w1 and w3 kept, w2 kept after 4 attention matmuls (attention_matmuls).
    ops.push_back(build::gemm("moe_shared_gate_up", tokens, h, 2.0 * sf / t));
    ops.back().op_sac_redo = 0.5;
    ops.push_back(build::swiglu("moe_shared_swiglu", tokens * sf / t, eager));
    const int down = static_cast<int>(ops.size());
    ops.push_back(build::gemm("moe_shared_down", tokens, sf / t, h));
    ops.back().op_sac_redo = op_sac_keeps_matmul(attention_matmuls(model) + 3) ? 0.0 : 1.0;
    if (tp > 1) {
      ops.push_back(build::tp_collective("moe_shared_tp_collective", tokens * h * kActivationBytes, 1, 1, sp));
      ops.back().op_sac_redo = sp ? 0.5 : 1.0;
      ops.back().column_gemm = up;
      ops.back().row_gemm = down;
    }
  }
}

double deepep_network_share(int experts, int top_k, int nodes) {
  if (nodes < 2) return 1.0;
  // C(E - E/N, k) / C(E, k): no expert of the token on a given other node.
  const double e = experts, per_node = e / nodes;
  double none = 1.0;
  for (int i = 0; i < top_k; ++i) none *= std::max(0.0, (e - per_node - i) / (e - i));
  const double nodes_hit = (nodes - 1) * (1.0 - none);
  const double copies_across = static_cast<double>(top_k) * (nodes - 1) / nodes;
  return nodes_hit / copies_across;
}

double moe_activation_bytes_per_token(const TransformerSpec& model, const MoeLayout& layout, bool redone_experts) {
  const MoeSpec& moe = model.moe;
  const double h = model.hidden, f = moe.expert_ffn;
  // With expert tensor parallelism a copy stands for etp rows on 1/etp of
  // the width: the inputs and outputs (2h + 2h) etp times, the rest the same.
  const double per_copy = (2.0 * h + 2.0 * h) * layout.etp + (redone_experts ? 0.0 : 4.0 * f + 2.0 * f);
  const double shared = static_cast<double>(moe.shared_experts) * moe.shared_expert_ffn;
  // A shared expert keeps SwiGLU's gate and up outputs and its own output
  // (4f + 2f) on 1/tp of the columns, per-op checkpointing only w1's or w3's
  // (2f); with sequence parallelism a routed token stands for tp of the
  // layer's tokens. The router keeps its FP32 scores (4E), per-op
  // checkpointing only top-k's outputs, FP32 scores and int64 indices
  // (12 a chosen expert: TorchTitan's save list has topk; the gate is redone).
  const double router = redone_experts ? 12.0 * moe.top_k : 4.0 * moe.experts;
  return router + moe.top_k * layout.load * per_copy + (redone_experts ? 2.0 : 6.0) * shared;
}

}  // namespace trainsim::workload
