// A mixture-of-experts model's experts (MoeSpec, part of the model) and how a
// plan lays them over its GPUs (MoeLayout). A MoE layer's MLP is replaced by
// a router, `experts` routed experts of which each token visits `top_k`, and
// `shared_experts` that every token visits; which layers are MoE layers is
// MoeSpec::is_moe_layer's. The ops are in workload/moe.hpp.
#pragma once

namespace trainsim::workload {

// How the router scores experts: softmax over the experts (Mixtral, Qwen3),
// or a sigmoid per expert (DeepSeek-V3). Both are a few memory passes over
// the tokens' scores; the choice names what the model does.
enum class MoeRouter { kSoftmax, kSigmoid };

struct MoeSpec {
  int experts = 0;            // routed experts per layer; 0: a dense model
  int top_k = 0;              // experts each token is routed to
  int expert_ffn = 0;         // one routed expert's MLP width (a SwiGLU MLP)
  int shared_experts = 0;     // experts every token visits
  int shared_expert_ffn = 0;  // one shared expert's MLP width
  MoeRouter router = MoeRouter::kSoftmax;
  // Token dropping: every expert's input cut or padded to capacity_factor x
  // its mean load (Megatron-Core's --moe-expert-capacity-factor with
  // --moe-pad-expert-input-to-capacity). 0: drop-less.
  double capacity_factor = 0.0;
  // Which layers are MoE layers: none of the first `dense_layers` (MLP width
  // model.ffn; DeepSeek-V3's first_k_dense_replace, 3), and of the rest those
  // whose index divides by `layer_freq` (counted from layer 0, as Hugging
  // Face's DeepSeek and Megatron-Core's integer --moe-layer-freq count; 1:
  // all of them).
  int dense_layers = 0;
  int layer_freq = 1;

  bool enabled() const { return experts > 0; }
  bool is_moe_layer(int layer) const {
    return enabled() && layer >= dense_layers && layer % layer_freq == 0;
  }
  // Whether some layers are dense (and need the model's ffn).
  bool has_dense_layers() const { return dense_layers > 0 || layer_freq > 1; }
};

// How tokens reach the experts (parallel.moe_dispatcher):
//   alltoall   each token's top_k copies sent to their experts' ranks by an
//              all-to-all over the expert-parallel group, and the experts'
//              outputs returned by another (Megatron-Core's alltoall
//              dispatcher);
//   allgather  every rank gathers all the group's tokens and keeps those of
//              its experts, and the outputs return by a reduce-scatter
//              (Megatron-Core's allgather dispatcher);
//   deepep     DeepEP's kernels (Megatron-Core's flex dispatcher): as the
//              all-to-all inside a node, but across nodes a token goes once
//              to each node that holds any of its experts, over RDMA to the
//              GPU of the same local rank, which forwards it over NVLink
//              (deepseek-ai/DeepEP README; DeepSeek-V3, arXiv 2412.19437
//              §3.2.2): the NICs carry a copy a node, not a copy an expert.
enum class MoeDispatcher { kAllToAll, kAllGather, kDeepEp };

struct MoeLayout {
  int ep = 1;  // expert-parallel ranks: each holds experts / ep of the routed experts
  // Expert-tensor-parallel ranks: each expert's MLP split over etp ranks
  // (gate and up by columns, down by rows), which gather their tokens
  // before the experts and reduce-scatter the outputs after.
  int etp = 1;
  MoeDispatcher dispatcher = MoeDispatcher::kAllToAll;
  // The busiest rank's routed tokens over the mean (1: balanced). With a
  // capacity factor, the capacity; drop-less, options.moe_imbalance.
  double load = 1.0;
};

}  // namespace trainsim::workload
