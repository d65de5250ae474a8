#include "workload/fp8.hpp"

#include <algorithm>

#include "workload/op_cost.hpp"

namespace trainsim::workload {

const char* fp8_recipe_name(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::kDelayed: return "delayed";
    case Fp8Recipe::kTensorwise: return "tensorwise";
    case Fp8Recipe::kRowwise: return "rowwise";
    case Fp8Recipe::kBlockwise: return "blockwise";
    case Fp8Recipe::kMxfp8: return "mxfp8";
  }
  return "?";
}

const char* fp8_library_name(Fp8Library l) {
  return l == Fp8Library::kTransformerEngine ? "transformer-engine" : "torchao";
}

Fp8Library default_fp8_library(Fp8Recipe recipe) {
  return recipe == Fp8Recipe::kTensorwise || recipe == Fp8Recipe::kRowwise ? Fp8Library::kTorchao
                                                                            : Fp8Library::kTransformerEngine;
}

bool fp8_library_has(Fp8Library library, Fp8Recipe recipe) {
  if (library == Fp8Library::kTransformerEngine) return recipe != Fp8Recipe::kRowwise;
  return recipe == Fp8Recipe::kTensorwise || recipe == Fp8Recipe::kRowwise || recipe == Fp8Recipe::kMxfp8;
}

Fp8CastBytes fp8_cast_bytes(Fp8Recipe recipe, Fp8Library library) {
  // BF16 is 2 bytes a value, FP8 1.
  if (library == Fp8Library::kTransformerEngine) {
    // The weight's FP8 copies are cast once an iteration and cached
    // (Transformer Engine's is_first_microbatch); that one cast is left out.
    if (recipe == Fp8Recipe::kTensorwise) {
      // Current scaling: an amax pass (read 2), then one cast writing both
      // layouts (2 + 1 + 1): 6 for X and dY.
      return {6.0, 0.0, 0.0, 6.0, 2, 2};
    }
    // Delayed (the scale from the amax history), blockwise and MXFP8 (each
    // block's scale found in the casting kernel): one cast reads BF16 once
    // and writes both layouts (2 + 1 + 1), 4 for X and dY (MXFP8's E8M0
    // scales, one byte per 32 values a layout, left out).
    return {4.0, 0.0, 0.0, 4.0, 1, 1};
  }
  // torchao's counts are its own roofline model of its cast kernels (torchao
  // testing/training/roofline_utils.py, get_tensor_memory_traffic_ovhd_s,
  // commit 36027d8, unfused with the op before).
  switch (recipe) {
    case Fp8Recipe::kTensorwise:
      // X and dY: an amax pass (read 2), then one cast writing both layouts
      // (read 2, write 1 + 1): 6. W: amax (2) and a row-major cast (2 + 1)
      // forward, a column-major cast (2 + 1) backward: 8.
      return {6.0, 5.0, 3.0, 6.0, 3, 2};
    case Fp8Recipe::kRowwise:
      // X and dY: a cast that also writes a BF16 transpose (2 + 1 + 2), then
      // a cast of the transpose (2 + 1): 8. W: a cast (2 + 1) forward; a BF16
      // transpose (2 + 2) and its cast (2 + 1) backward: 10.
      return {8.0, 3.0, 7.0, 8.0, 3, 4};
    case Fp8Recipe::kMxfp8:
      // Every operand cast along each dimension it is reduced over, each
      // cast reading BF16 and writing FP8 (2 + 1, twice): 6; torchao recasts
      // the weight every micro-batch.
      return {6.0, 3.0, 3.0, 6.0, 3, 2};
    case Fp8Recipe::kDelayed:
    case Fp8Recipe::kBlockwise:
      break;  // Transformer Engine's only (fp8_library_has)
  }
  return {};
}

bool fp8_gathers_fp8(Fp8Recipe recipe, Fp8Library library) {
  return library == Fp8Library::kTransformerEngine || recipe != Fp8Recipe::kRowwise;
}

bool fp8_rescales_backward_outputs(Fp8Recipe recipe, Fp8Library library) {
  return library == Fp8Library::kTorchao && recipe == Fp8Recipe::kRowwise;
}

bool fp8_saves_fp8_inputs(Fp8Library library) { return library == Fp8Library::kTransformerEngine; }

double fp8_weight_cache_bytes_per_param(Fp8Library library) {
  // The FP8 weight and its transpose (Hopper's TN-only FP8 GEMMs; MXFP8's
  // two layouts on Blackwell).
  return fp8_saves_fp8_inputs(library) ? 2.0 : 0.0;
}

std::vector<Op> with_fp8(const std::vector<Op>& ops, Fp8Recipe recipe, Fp8Library library, int tp) {
  const Fp8CastBytes c = fp8_cast_bytes(recipe, library);
  // Under sequence parallelism a column-parallel GEMM's input arrives by an
  // all-gather of 1/tp shards; the FP8 tensor-parallel styles cast each shard
  // before the gather (torchao Float8ColwiseParallel, Transformer Engine's
  // FP8 all-gather), so the cast reads 1/tp of the input. Without them the
  // gather moves BF16 and the cast reads the whole gathered input.
  const bool gathers_fp8 = fp8_gathers_fp8(recipe, library);
  // A collective whose forward all-gather moves the cast FP8 shard.
  const auto gathers_cast_shard = [&](const Op& op) { return gathers_fp8 && op.sequence_parallel && op.column_gemm >= 0; };
  std::vector<double> input_share(ops.size(), 1.0);
  for (const Op& op : ops) {
    if (gathers_cast_shard(op)) input_share[static_cast<std::size_t>(op.column_gemm)] = 1.0 / tp;
  }
  const bool rescales = fp8_rescales_backward_outputs(recipe, library);
  std::vector<Op> out;
  out.reserve(2 * ops.size());
  std::vector<int> moved(ops.size());  // where each op lands in `out`
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    const bool linear = op.kind == OpKind::kGemm && op.flops_weight_grad > 0.0 && !op.keeps_precision;
    if (!linear) {
      moved[i] = static_cast<int>(out.size());
      out.push_back(op);
      continue;
    }
    Op cast;
    cast.name = op.name + "_fp8_cast";
    cast.kind = OpKind::kElementwise;
    // A grouped GEMM (a rank's experts) casts each of its experts' weights.
    const double x = op.m * op.k * input_share[i], w = op.k * op.n * op.gemm_groups, dy = op.m * op.n;
    cast.bytes_forward = c.input_forward * x + c.weight_forward * w;
    cast.bytes_input_grad = c.grad_backward * dy + c.weight_backward * w;
    cast.kernels = std::max(c.kernels_forward, c.kernels_backward);  // one count serves both passes: the larger
    cast.op_sac_redo = 1.0;            // an element-wise op: redone under per-op checkpointing
    out.push_back(cast);
    moved[i] = static_cast<int>(out.size());
    Op g = op;
    g.fp8 = true;
    // Its operands read in FP8, one byte a value, its result written in BF16.
    g.bytes_forward = gemm_pass_bytes(op.m, op.n, op.k, Pass::kForward, true, op.gemm_groups);
    g.bytes_input_grad = gemm_pass_bytes(op.m, op.n, op.k, Pass::kInputGrad, true, op.gemm_groups);
    g.bytes_weight_grad = gemm_pass_bytes(op.m, op.n, op.k, Pass::kWeightGrad, true, op.gemm_groups);
    out.push_back(g);
    if (rescales) {
      // The scaling pass reads and writes each backward GEMM's BF16 output:
      // dX (m x k) after the input gradient, dW (k x n a group) after the
      // weight gradient, one kernel each.
      Op rescale;
      rescale.name = op.name + "_fp8_rescale";
      rescale.kind = OpKind::kElementwise;
      rescale.bytes_input_grad = 4.0 * op.m * op.k;
      rescale.bytes_weight_grad = 4.0 * op.k * op.n * op.gemm_groups;
      rescale.kernels = 1;
      out.push_back(rescale);
    }
  }
  // Re-point the ops that name others by index (the collectives' GEMMs, the
  // context-parallel exchange's attention) at their new places.
  for (Op& op : out) {
    // The cast shard travels in FP8: the forward all-gather moves half the bytes.
    if (gathers_cast_shard(op)) op.forward_gather_bytes = op.collective_bytes / 2.0;
    if (op.column_gemm >= 0) op.column_gemm = moved[static_cast<std::size_t>(op.column_gemm)];
    if (op.attention_op >= 0) op.attention_op = moved[static_cast<std::size_t>(op.attention_op)];
    if (op.row_gemm >= 0) op.row_gemm = moved[static_cast<std::size_t>(op.row_gemm)];
  }
  return out;
}

}  // namespace trainsim::workload
