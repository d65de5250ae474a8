// The ops of a mixture-of-experts block, which takes the MLP's place in a MoE
// model's MoE layers (TransformerSpec::moe), as Megatron-Core runs it with
// expert parallelism (parallel.ep) and expert tensor parallelism (etp):
//   router     the tokens' scores over the experts (a GEMM with the h x E
//              router weight, replicated on every rank), then the top-k
//              selection over them in FP32;
//   permute    each token copied once per chosen expert, in expert order;
//   dispatch   the copies sent to their experts' ranks (MoeDispatcher);
//   experts    the rank's experts / ep experts as grouped GEMMs (gate and up,
//              SwiGLU, down), each expert at the shape of its own tokens;
//   combine    the outputs sent back;
//   unpermute  each token's k outputs weighted by its scores and summed;
//   shared     the shared experts, a tensor-parallel SwiGLU MLP every token visits.
// The tokens a rank routes are its own (1/tp of them with sequence
// parallelism, which Megatron-Core requires of MoE with tp > 1); each rank
// receives on average top_k copies of as many tokens as it sends, and the
// busiest MoeLayout::load times that.
#pragma once

#include <vector>

#include "workload/transformer.hpp"

namespace trainsim::workload {

// The names of the block's two exchanges (ops of kind kEpDispatch).
inline constexpr const char* kMoeDispatchOp = "moe_dispatch";
inline constexpr const char* kMoeCombineOp = "moe_combine";
inline constexpr const char* kMoeEtpGatherOp = "moe_etp_gather";
inline constexpr const char* kMoeEtpScatterOp = "moe_etp_scatter";

// Appends the MoE block for `tokens` tokens of a micro-batch (before the
// tensor split) to `ops`.
void append_moe_ops(std::vector<Op>& ops, const TransformerSpec& model, double tokens, int tp, bool sequence_parallel,
                    const MoeLayout& layout, bool eager);

// DeepEP's traffic through the NICs over an all-to-all's, for a group
// spanning `nodes` nodes (each holding experts / nodes of the experts, ranks
// spread evenly): a token sends one copy to each other node holding any of
// its top_k experts, (nodes - 1) (1 - C(E - E/nodes, k) / C(E, k)) of them
// on average with experts chosen uniformly, against the all-to-all's k
// (nodes - 1) / nodes. 1 within a node.
double deepep_network_share(int experts, int top_k, int nodes);

// Bytes a MoE block keeps for backward, per token a rank routes, beyond the
// norm's output that the router reads (counted as a dense layer's MLP input):
// the router's FP32 scores (4E); per routed copy (top_k x load of them) the
// experts' input (2h), the gate and up outputs (4f), SwiGLU's output (2f) and
// the experts' output that unpermute weights (2h); the shared experts' as a
// dense SwiGLU MLP's, over tp.
// Under per-op checkpointing (Recompute::kSelectiveOp, `redone_experts`)
// the routed experts' gate, up and SwiGLU outputs are redone, not kept:
// TorchTitan's save list keeps matmuls (every other one) and the
// all-to-all's outputs but not grouped GEMMs (torch._grouped_mm), so a copy
// keeps its input and output; a shared expert keeps one of its w1's and w3's
// outputs (its w2's: see layer_activation_bytes); the router keeps top-k's
// outputs, its gate being recomputed.
double moe_activation_bytes_per_token(const TransformerSpec& model, const MoeLayout& layout,
                                      bool redone_experts = false);

}  // namespace trainsim::workload
