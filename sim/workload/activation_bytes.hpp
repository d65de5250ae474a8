// The activations one transformer layer keeps for the backward, per
// micro-batch on one tensor rank, by recompute policy and kernels.
#pragma once

#include "workload/plan.hpp"
#include "workload/transformer.hpp"

namespace trainsim::workload {

// Korthikanti et al. 2022 (arXiv 2205.05198) Table 2: bytes of activations one
// layer keeps for one micro-batch on one tensor rank, with unfused attention
// (Table 2's 5as/h term: scores, softmax output, dropout mask); with
// FlashAttention (the default) that term is not kept. For GPT (ffn = 4h, as
// many K/V heads as heads):
//                   tensor parallel                 + sequence parallel
//   no recompute    s*b*h*(10 + 24/t + 5*a*s/(h*t))  s*b*h/t*(34 + 5*a*s/h)
//   selective       s*b*h*(10 + 24/t)                34*s*b*h/t
//   full            2*s*b*h                          2*s*b*h
// The same terms follow the model's MLP width, its K/V width (grouped-query
// attention) and, for LLaMA, SwiGLU's two up outputs and no dropout.
// Eager element-wise kernels (Elementwise::kEager, Llama-style models) keep
// more for autograd: each RMSNorm its FP32 input (4h), the rotary
// embedding's complex FP32 inputs (4q + 4kv), SwiGLU's mul the silu output
// (2f). With `kv_repeat` (Plan::kv_repeat) attention keeps the expanded K
// and V (4q - 4kv more than grouped).
double layer_activation_bytes(const TransformerSpec& model, int microbatch, int tp,
                              Recompute recompute = Recompute::kNone, bool sequence_parallel = false,
                              Attention attention = Attention::kUnfused, Elementwise kernels = Elementwise::kFused,
                              bool kv_repeat = false);
// Of what W reads (each weight GEMM's input X and output gradient dY), the
// inputs a layer's kept activations already hold: none under full recompute.
double layer_kept_gemm_input_bytes(const TransformerSpec& model, int microbatch, int tp,
                                   Recompute recompute = Recompute::kNone, bool sequence_parallel = false);

}  // namespace trainsim::workload
