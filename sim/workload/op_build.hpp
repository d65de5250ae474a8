// Builders of the ops a layer is made of, shared by the dense layer
// (transformer.cpp) and the MoE block (moe.cpp).
#pragma once

#include <string>

#include "workload/op_cost.hpp"
#include "workload/transformer.hpp"

namespace trainsim::workload::build {

// An m x k by k x n GEMM: forward, the input gradient (dX = dY W^T) and, with
// weights, the weight gradient (dW = X^T dY), each 2mnk FLOPs and reading
// and writing its three matrices once (gemm_pass_bytes, in BF16).
inline Op gemm(std::string name, double m, double k, double n, bool has_weights = true) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::kGemm;
  op.m = m;
  op.k = k;
  op.n = n;
  const double flops = 2.0 * m * n * k;
  op.flops_forward = flops;
  op.bytes_forward = gemm_pass_bytes(m, n, k, Pass::kForward, false);
  op.flops_input_grad = flops;
  op.bytes_input_grad = gemm_pass_bytes(m, n, k, Pass::kInputGrad, false);
  if (has_weights) {
    op.flops_weight_grad = flops;
    op.bytes_weight_grad = gemm_pass_bytes(m, n, k, Pass::kWeightGrad, false);
  }
  return op;
}

// `groups` GEMMs of m / groups rows each, each with its own k x n weight (a
// rank's experts): the FLOPs of one m x k x n GEMM, the weights read groups times.
inline Op grouped_gemm(std::string name, double m, double k, double n, int groups) {
  Op op = gemm(std::move(name), m, k, n);
  op.gemm_groups = groups;
  const double weights = (groups - 1) * k * n * kActivationBytes;
  op.bytes_forward += weights;
  op.bytes_input_grad += weights;
  op.bytes_weight_grad += weights;
  return op;
}

// An element-wise kernel over `elements` values: forward reads and writes them,
// backward reads the incoming gradient and the saved input and writes one.
inline Op elementwise(std::string name, double elements, double bytes_per_value = kActivationBytes) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::kElementwise;
  op.bytes_forward = 2.0 * elements * bytes_per_value;
  op.bytes_input_grad = 3.0 * elements * bytes_per_value;
  return op;
}

// Eager PyTorch's RMSNorm over `elements` values (see Elementwise): 8
// kernels, 32 bytes a value forward; backward about 90, plus a 6-byte
// gradient add for each GEMM beyond the first that reads its output.
inline Op eager_rms_norm(std::string name, double elements, int consumers) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::kElementwise;
  op.bytes_forward = 32.0 * elements;
  op.bytes_input_grad = (90.0 + 6.0 * (consumers - 1)) * elements;
  op.kernels = 8;
  return op;
}

// Eager rotary embeddings on `values` query and key values through complex
// FP32: 6 kernels, 20 bytes a value each way.
inline Op eager_rotary_embedding(std::string name, double values) {
  Op op = elementwise(std::move(name), values);
  op.bytes_forward = 20.0 * values;
  op.bytes_input_grad = op.bytes_forward;
  op.kernels = 6;
  return op;
}

// SwiGLU over `outputs` values (its two inputs, gate and up, are twice
// that): one fused kernel, or eager PyTorch's silu (read and write f) then
// mul (read 2f, write f), 18 bytes a value backward.
inline Op swiglu(std::string name, double outputs, bool eager) {
  Op op = elementwise(std::move(name), 2.0 * outputs);
  if (eager) {
    op.bytes_forward = 10.0 * outputs;
    op.bytes_input_grad = 18.0 * outputs;
    op.kernels = 2;
  }
  return op;
}

// Tensor-parallel collectives on a buffer of `bytes`: `forward` and
// `input_grad` of them, each an all-reduce, or with sequence parallelism a
// reduce-scatter and an all-gather.
inline Op tp_collective(std::string name, double bytes, int forward, int input_grad, bool sequence_parallel) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::kTpCollective;
  op.collective_bytes = bytes;
  op.collectives_forward = forward;
  op.collectives_input_grad = input_grad;
  op.sequence_parallel = sequence_parallel;
  return op;
}

}  // namespace trainsim::workload::build
