// FP8 training: which GEMMs run in FP8, the casts that feed them, and what
// the recipes keep in memory.
//
// Under parallel.precision "fp8" the transformer layers' linear GEMMs (QKV,
// output projection, the MLP's) run their forward, input-gradient and
// weight-gradient GEMMs at the GPU's FP8 rate; attention's core, softmax,
// norms, the embedding, the output head and the optimizer stay in BF16/FP32,
// as Transformer Engine and torchao's Float8Linear both leave them. Each FP8
// GEMM operand is first cast from BF16: a memory-bound pass whose bytes
// depend on the recipe (Fp8CastBytes).
#pragma once

#include <vector>

#include "workload/transformer.hpp"

namespace trainsim::workload {

// How FP8 tensors are scaled (parallel.fp8_recipe):
//   delayed     Transformer Engine's DelayedScaling: one scale a tensor from
//               the amax history, so a cast needs no amax pass of its own;
//   tensorwise  current scaling, one scale a tensor from its own amax
//               (torchao Float8Linear "tensorwise", TE Float8CurrentScaling);
//   rowwise     one scale a row (torchao "rowwise");
//   blockwise   DeepSeek-V3's tiles: 1 x 128 for activations and gradients,
//               128 x 128 for weights (TE Float8BlockScaling);
//   mxfp8       OCP microscaling, one E8M0 scale per 32 values, on
//               Blackwell's block-scaled tensor cores only.
enum class Fp8Recipe { kDelayed, kTensorwise, kRowwise, kBlockwise, kMxfp8 };
const char* fp8_recipe_name(Fp8Recipe r);

// The library that runs the recipe (parallel.fp8_library), which decides what
// the casts move and what is kept:
//   transformer-engine  Megatron-Core's and NeMo's linear layers: each
//                       layer's saved input kept in FP8, an FP8 copy of each
//                       weight (with its transpose) cast once an iteration;
//                       recipes delayed, tensorwise (Float8CurrentScaling),
//                       blockwise, mxfp8 (MXFP8BlockScaling);
//   torchao             TorchTitan's Float8Linear / MX linear: BF16 inputs
//                       saved, weights cast every micro-batch; recipes
//                       tensorwise, rowwise, mxfp8.
enum class Fp8Library { kTransformerEngine, kTorchao };
const char* fp8_library_name(Fp8Library l);
// The library a recipe runs in when none is named: the one that has it, and
// Transformer Engine for the recipes both have but tensorwise, whose
// published runs are TorchTitan's.
Fp8Library default_fp8_library(Fp8Recipe recipe);
bool fp8_library_has(Fp8Library library, Fp8Recipe recipe);

// HBM bytes a value of each GEMM operand moves to become FP8, in every pass
// that casts it, and where each part falls. Hopper's FP8 GEMMs take only
// row-major x column-major (TN) operands, so an operand that a backward GEMM
// reads transposed is written in both layouts.
struct Fp8CastBytes {
  double input_forward = 0.0;    // X, cast before the forward GEMM
  double weight_forward = 0.0;   // W, cast before the forward GEMM (each micro-batch)
  double weight_backward = 0.0;  // W again, for the input-gradient GEMM
  double grad_backward = 0.0;    // dY, cast before both backward GEMMs
  int kernels_forward = 0;       // cast kernels a linear layer launches
  int kernels_backward = 0;
};
Fp8CastBytes fp8_cast_bytes(Fp8Recipe recipe, Fp8Library library);

// Whether a column-parallel GEMM's input is cast before the
// sequence-parallel all-gather, so the gather moves FP8. Transformer Engine
// gathers FP8 under its recipes; TorchTitan only under tensorwise scaling:
// its rowwise recipes run plain tensor parallelism, the gather in BF16 and
// each linear layer casting the whole gathered input
// (torchtitan models/llama3/parallelize_llama.py, enable_float8_tensorwise_tp,
// since commit 069bae2 of 2025-02-27).
bool fp8_gathers_fp8(Fp8Recipe recipe, Fp8Library library);

// Whether each backward GEMM's output is scaled in a kernel of its own.
// torchao runs a rowwise-scaled GEMM without fast accumulation (its
// input-gradient and weight-gradient GEMMs) as cuBLAS's tensorwise GEMM and
// then multiplies the output by the row and column scales
// (torchao float8/float8_ops.py, addmm_float8_unwrapped, commit 6243040);
// under torch.compile that is one more kernel a GEMM (pytorch/ao#2184).
bool fp8_rescales_backward_outputs(Fp8Recipe recipe, Fp8Library library);

// Transformer Engine saves each linear layer's input for backward in FP8
// (one byte a value, in the layout the weight-gradient GEMM reads) and keeps
// an FP8 copy of every weight with its transpose, cast once an iteration;
// torchao saves BF16 inputs and casts weights every micro-batch.
bool fp8_saves_fp8_inputs(Fp8Library library);
double fp8_weight_cache_bytes_per_param(Fp8Library library);

// The layer's ops (of one of `tp` tensor ranks) with their linear GEMMs
// marked FP8 (Op::fp8) and, before each, an element-wise op holding its
// operands' casts. A column-parallel GEMM under sequence parallelism casts
// its 1/tp input shard before the all-gather, which then moves FP8, half the
// bytes (torchao's Float8ColwiseParallel, Transformer Engine's FP8
// all-gather), where fp8_gathers_fp8; the backward's collectives stay BF16.
// Where fp8_rescales_backward_outputs, an element-wise op after each GEMM
// holds its backward outputs' scaling.
std::vector<Op> with_fp8(const std::vector<Op>& ops, Fp8Recipe recipe, Fp8Library library, int tp = 1);

}  // namespace trainsim::workload
