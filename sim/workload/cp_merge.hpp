// PyTorch's context parallelism (torch.distributed.tensor.experimental.
// context_parallel, which TorchTitan's context_parallel_degree turns on) as it
// runs a layer's attention, beyond the attention FLOPs it shares with every
// implementation (Plan::cp_merge = CpMerge::kPyTorch):
//
// - one SDPA call per block of keys, each returning an output and its
//   log-sum-exp, merged into the running result by eager FP32 element-wise
//   ops (out - sigmoid(lse_b - lse) * (out - out_b)); causal load balancing
//   gives every rank two chunks of the sequence, so after the first block a
//   call takes all of the rank's queries and half a block of keys, or half
//   its queries and a whole block;
// - backward, the same blocks again, dQ, dK and dV accumulated in FP32, and
//   dK/dV passed one rank on after every block (an all-to-all permute), so
//   each rank ends with its own chunk's gradient;
// - the keys and values reach a rank by the rotate method (all-gather: one
//   all-gather issued before the first block; ring: a permute a block), each
//   waited for when the next block starts; each dK/dV permute is waited for
//   after the next block's SDPA backward, the last one at the end.
// - while a layer's attention runs, the rank holds the keys and values it
//   received, FP32 partial results and their temporaries beyond the layer's
//   activations (pytorch_cp_transient_bytes).
//
// Read from torch/distributed/tensor/experimental/_attention.py of the PyTorch
// 2.5/2.6 TorchTitan ran (_templated_ring_attention, its backward, _SDPAMerger,
// _AllGatherRotater, _partial_update).
#pragma once

#include "workload/plan.hpp"

namespace trainsim::workload {

// HBM traffic of those eager ops in one layer on the busiest rank of the
// group. Forward that is the last: after the first block each of its calls
// takes all its queries, so each merge covers its whole output. Backward the
// last accumulates dQ whole and joins halves of dK/dV, the first the other way
// round; the busier of the two (the last wherever K and V are at least the
// output, as with kv_repeat).
struct CpMergeTraffic {
  double forward_bytes = 0.0;   // merges, dtype casts, K/V concatenations
  double backward_bytes = 0.0;  // FP32 accumulations, concatenations, casts
  int kernels = 0;              // launched in the forward (about as many backward)
};

// out_values: the rank's attention output (its tokens x its heads' width);
// kv_values: the rank's K and V together, as attention receives them (copied
// out to every query head where the layer does so); cp >= 2.
CpMergeTraffic pytorch_cp_merge_traffic(double out_values, double kv_values, int cp);

// The most a rank holds at once, beyond the layer's activations, while one
// layer's attention runs (bytes; BF16 2 a value, FP32 4), the larger of:
//   forward   the keys and values received (all-gather: every rank's, cp x
//             2 kv; ring: the block in use and the next, 2 x 2 kv), their
//             concatenation for the rotater (2 kv), and at a merge the FP32
//             result, the block's BF16 output and its FP32 copy, out - block
//             and its product with the gate (4 + 2 + 4 + 4 + 4 = 18 o);
//   backward  the same keys and concatenation, FP32 dQ, dK, dV (4 o + 4 kv),
//             a block's BF16 gradients (2 o + 2 kv), dK/dV concatenated to
//             send and those received, in FP32 (4 kv + 4 kv).
double pytorch_cp_transient_bytes(double out_values, double kv_values, int cp, CpAlgorithm algorithm);

// Seconds of one pass of a layer that the exchange leaves exposed.
struct CpExchangeTimes {
  double gather_s = 0.0;     // all-gather: every rank's K and V (BF16)
  double kv_step_s = 0.0;    // ring: the rank's K and V one rank on (BF16)
  double grad_step_s = 0.0;  // dK and dV one rank on, in FP32
  double attention_s = 0.0;  // attention over all blocks in this pass; a block takes 1/cp
};
double pytorch_cp_exposed_seconds(CpAlgorithm algorithm, bool forward, int cp, const CpExchangeTimes& t);

}  // namespace trainsim::workload
