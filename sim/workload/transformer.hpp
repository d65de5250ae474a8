// A decoder-only transformer given by its shape, and its expansion into the
// operations of one layer (and of the embedding and output head) for one
// micro-batch on one tensor-parallel rank.
//
// FLOPs count a multiply-add as 2. Backward is split into I (gradient with
// respect to the input, needed by the previous layer at once) and W (gradient
// with respect to the weights, which can wait): for a GEMM both equal the
// forward FLOPs, so B = I + W = 2F as usual.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workload/moe_spec.hpp"

namespace trainsim::workload {

enum class Arch {
  kGpt,    // LayerNorm, GeLU MLP with biases, learned positions, tied embeddings
  kLlama,  // RMSNorm, SwiGLU MLP without biases, rotary positions, untied embeddings
};

// Multi-head Latent Attention (DeepSeek-V2, arXiv 2405.04434; DeepSeek-V3):
// queries through a low-rank down projection (h -> q_lora_rank, normed) and
// an up projection to every head's head_dim + qk_rope_head_dim; keys and
// values through a shared down projection (h -> kv_lora_rank + the rope
// part of the key, normed) and an up projection to every head's head_dim
// (key) + v_head_dim (value); the output projection reads heads x
// v_head_dim. head_dim is the non-rotary part of a query or key head.
struct MlaSpec {
  int q_lora_rank = 0;   // 0: queries without compression (h -> heads x (head_dim + rope) directly)
  int kv_lora_rank = 0;  // 0: standard attention
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
  bool enabled() const { return kv_lora_rank > 0; }
};

struct TransformerSpec {
  std::string name;
  Arch arch = Arch::kGpt;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;  // = heads unless grouped-query attention
  int ffn = 0;
  int seq = 0;
  int vocab = 0;
  // model.head_dim: each head's width where heads x head_dim is not the
  // hidden size (Qwen3: 64 heads of 128 on a hidden size of 4096); 0: hidden / heads.
  int head_dim_given = 0;
  // RMSNorm on each head's queries and keys before attention (Qwen3).
  bool qk_norm = false;
  MoeSpec moe;  // experts: 0 for a dense model
  MlaSpec mla;  // model.attention "mla"

  int head_dim() const { return head_dim_given > 0 ? head_dim_given : hidden / heads; }
  // The queries' width, heads x head_dim: the attention output's too.
  int q_dim() const { return heads * head_dim(); }
  // Widths a token has across all heads: a query or key (with MLA, its
  // rotary part too), a value, and so the attention output.
  double qk_width() const { return static_cast<double>(heads) * (head_dim() + mla.qk_rope_head_dim); }
  double v_width() const { return static_cast<double>(heads) * (mla.enabled() ? mla.v_head_dim : head_dim()); }
  // Of a MoE model's layers, those with a MoE block (MoeSpec::is_moe_layer),
  // among the `count` layers from `first` on; the rest are dense.
  int moe_layers_in(int first, int count) const;
  // The model's dense layers as a model of their own (no experts): what a
  // dense layer of a MoE model costs and holds.
  TransformerSpec dense_part() const {
    TransformerSpec d = *this;
    d.moe = MoeSpec{};
    return d;
  }
  double params_per_layer() const;
  // Of those, the routed experts' weights, which expert parallelism splits
  // (parallel.ep) instead of tensor parallelism; 0 for a dense model.
  double expert_params_per_layer() const;
  // Of the rest, the weights every tensor rank holds whole rather than 1/tp
  // of: a MoE router's, and MLA's down projections with their norms.
  double replicated_params_per_layer() const;
  // Of those, the weight matrices of the linear layers (QKV, output
  // projection, the MLP's): what FP8 recipes cast and gather in FP8.
  double linear_params_per_layer() const;
  // The layer's parameters tensor by tensor, as one of `tp` tensor ranks
  // holds them (weights split by tp; biases of column-parallel layers split
  // too; norms and row-parallel biases whole). They sum to
  // params_per_layer() when tp = 1. DeepSpeed's ZeRO-3 leaves tensors at or
  // below its persistence threshold unsharded.
  std::vector<double> layer_tensors(int tp) const;
  double embedding_params() const;  // input embedding (+ learned positions)
  double head_params() const;       // final norm + output projection
  double total_params() const;      // the model as a whole, counting tied weights once
};

// kCpExchange: context parallelism's movement of keys and values between
// the cp ranks (Plan::cp_algorithm), timed over the context-parallel group.
// kEpDispatch: a MoE layer's tokens sent to their experts' ranks, or the
// experts' outputs sent back, over the expert-parallel group (MoeDispatcher).
enum class OpKind { kGemm, kAttention, kElementwise, kTpCollective, kCpExchange, kEpDispatch };
// The collective a kEpDispatch op runs: an all-to-all each way; or, under the
// all-gather dispatcher, an all-gather forward and a reduce-scatter backward
// (dispatch: tokens arrive) or the reverse (combine: outputs leave).
enum class EpExchange { kAllToAll, kGather, kScatter };

// How the attention core (scores, softmax, weighted sum) runs:
//   flash     one fused kernel (FlashAttention-2, Dao 2023, arXiv 2307.08691):
//             the s x s scores never reach memory and are not kept for backward;
//   flash-v1  the same fused kernel of the generation before (FlashAttention,
//             Dao et al. 2022, and the Triton port of it that flash-attn 1.x
//             shipped, which MPT's attn_impl "triton" runs): the same work and
//             memory, timed at the GPU's FlashAttention-1 figures
//             (GpuSpec::attention_v1_tflops), about half FlashAttention-2's;
//   cudnn     the same fused work in cuDNN's kernel, which Transformer Engine
//             (Megatron-Core) prefers on Hopper and newer: timed at the GPU's
//             cuDNN figures (GpuSpec::attention_cudnn_tflops), about 1.6 times
//             FlashAttention-2's on an H100;
//   unfused   Megatron-LM's kernels before FlashAttention: a batched GEMM for
//             Q K^T, a fused scale-mask-softmax, dropout, a batched GEMM with V;
//             the scores go through memory and are kept for backward
//             (Korthikanti et al. 2022's 5as/h activation term).
enum class Attention { kFlash, kFlashV1, kCudnn, kUnfused };
const char* attention_name(Attention a);
bool fused_attention(Attention a);  // all but unfused: one kernel, no scores in memory

// How the element-wise work between the GEMMs and attention runs:
//   fused  one kernel per fused op, as Megatron-LM and Transformer Engine
//          write them, and as torch.compile's Inductor generates them (each
//          run of element-wise ops between two GEMMs becomes one kernel that
//          reads its inputs once and writes its outputs once; a Llama
//          block's rotary embeddings one kernel over Q and K);
//   eager  PyTorch without torch.compile, one kernel per tensor op. For a
//          Llama block as TorchTitan's model writes it (torchtitan
//          models/llama/model.py and models/norms.py, commit 9dec370, with
//          torch 2.5's composite nn.RMSNorm the same): RMSNorm in 8 kernels
//          through FP32 (x.float, pow, mean, add, rsqrt, mul, type_as, mul
//          by the weight: 32 bytes a value forward), rotary embeddings on Q
//          and K through complex FP32 (float, complex mul, type_as: 20 bytes
//          a value), grouped K/V expanded by copies (repeat_kv), SwiGLU as
//          silu then mul (10 bytes a value of the MLP width). Backward is
//          autograd's: about 90 bytes a value per RMSNorm, 20 per rotary
//          value, 18 per SwiGLU value, and a 6-byte add wherever a tensor
//          feeds several GEMMs (Q, K, V from one norm; gate and up from
//          the other). Counted from the code, not measured.
// GPT's LayerNorm and GeLU are single kernels in eager PyTorch too, so the
// difference is modelled for Llama-style models only.
enum class Elementwise { kFused, kEager };

struct Op {
  std::string name;
  OpKind kind = OpKind::kElementwise;
  // Per micro-batch, per tensor-parallel rank.
  double flops_forward = 0.0;
  double flops_input_grad = 0.0;
  double flops_weight_grad = 0.0;
  double bytes_forward = 0.0;  // HBM traffic
  double bytes_input_grad = 0.0;
  double bytes_weight_grad = 0.0;
  // What W still reads once I has ended, for an op that is not a GEMM (a
  // GEMM's X and dY are counted from its shape): the embedding's scatter-add
  // keeps its output gradient. Bias gradients read their GEMM's dY, already
  // counted, so they keep nothing of their own.
  double weight_grad_held_bytes = 0.0;
  // GEMM shape (m x k times k x n), for the efficiency curve.
  double m = 0.0, n = 0.0, k = 0.0;
  // A grouped GEMM (a rank's experts): `gemm_groups` GEMMs of m / gemm_groups
  // rows each, every one at its own shape's rate.
  int gemm_groups = 1;
  // kEpDispatch: the bytes this rank sends (all-to-all), or the whole
  // gathered buffer (all-gather, reduce-scatter: collective_time's buffer),
  // and how many run in forward / input grad.
  double ep_bytes = 0.0;
  int ep_forward = 0, ep_input_grad = 0;
  EpExchange ep_exchange = EpExchange::kAllToAll;
  // Over the expert-tensor-parallel group (MoeLayout::etp) rather than the
  // expert-parallel one: the gather of a rank's tokens before the experts
  // and the reduce-scatter of their outputs after.
  bool over_etp = false;
  // MoeDispatcher::kDeepEp: the model's experts and top_k, from which the
  // copies a token sends across nodes follow (one a node, see moe_spec.hpp);
  // 0 for an all-to-all of every copy.
  int ep_dedup_experts = 0, ep_dedup_top_k = 0;
  // Tensor-parallel collectives: the full buffer's size and how many run in
  // forward / input grad. Each is an all-reduce, or with sequence parallelism a
  // reduce-scatter and an all-gather of that buffer.
  double collective_bytes = 0.0;
  int collectives_forward = 0;
  int collectives_input_grad = 0;
  bool sequence_parallel = false;
  // Bytes the forward all-gather moves under sequence parallelism, when not
  // collective_bytes: FP8 inputs gathered as FP8 (workload/fp8.hpp), half.
  double forward_gather_bytes = 0.0;
  double gather_bytes(bool forward) const {
    return forward && forward_gather_bytes > 0.0 ? forward_gather_bytes : collective_bytes;
  }
  // A layer's two collectives with sequence parallelism: the all-gather that
  // feeds the block's column-parallel GEMM (QKV, MLP up) and the
  // reduce-scatter that follows its row-parallel GEMM (output projection,
  // MLP down); their indices in the op list, which tensor-parallel overlap
  // pipelines them with. -1 elsewhere.
  int column_gemm = -1, row_gemm = -1;
  // Part of the attention core, which selective recompute redoes in backward.
  bool attention_core = false;
  // A kAttention op's kernel, whose figures time it (see Attention).
  Attention attention_kernel = Attention::kFlash;
  // kCpExchange: the index of the attention op it feeds (a ring's steps hide
  // behind its blocks), and the bytes of this rank's tensors it moves.
  int attention_op = -1;
  double cp_kv_bytes = 0.0;   // this rank's K and V, one sequence chunk
  double cp_qo_bytes = 0.0;   // this rank's Q and attention output (all-to-all moves them too)
  // Kernels it launches in each pass (each pays the launch overhead).
  int kernels = 1;
  // A GEMM run in FP8 (workload/fp8.hpp): timed at the GPU's FP8 rate.
  bool fp8 = false;
  // A GEMM with weights that FP8 recipes leave in higher precision (a MoE
  // router: Transformer Engine and Megatron-Core keep it in FP32/BF16).
  bool keeps_precision = false;
  // Under per-op selective checkpointing (Recompute::kSelectiveOp), the share
  // of its forward redone before the backward: all of an element-wise op's;
  // none of attention's or of a matmul whose output is kept; of a fused
  // GEMM, the share of its columns that are the recomputed matmul's (wk of
  // QKV, w3 of gate-and-up).
  double op_sac_redo = 1.0;
  // A GEMM whose columns are projections of one input that the framework
  // runs as GEMMs of their own (LayerCode::separate_projections): each one's
  // width (n), at most three, 0 for none. Each is timed at its own shape's
  // rate and launched on its own.
  double column_parts[3] = {0.0, 0.0, 0.0};
  // A sequence-parallel collective on batch-first tensors (LayerCode::
  // batch_first): each all-gather's output and each reduce-scatter's input
  // copied once more, whole, on the compute stream (see Plan::sp_batch_first).
  bool sp_copies = false;
  // Its backward reduce-scatter takes the sum of separate projections' input
  // gradients: the add that sums them writes the scattered layout (no copy
  // of its own), and no GEMM's output feeds it, so async TP cannot pipeline it.
  bool scatter_after_sum = false;
  // The RecomputeModule bits of the parts it belongs to, beside attention_core.
  unsigned modules = 0;
};

// How a framework writes a layer where it differs from Megatron-LM's
// (the Plan's keys of the same names).
struct LayerCode {
  // Grouped-query K and V copied to every query head before attention.
  bool kv_repeat = false;
  // Q, K and V (and SwiGLU's gate and up) as GEMMs of their own, not one
  // fused GEMM: in backward their input gradients are summed by an add.
  bool separate_projections = false;
  // Sequence parallelism on [b, s, h] tensors through DTensor's collectives.
  bool batch_first = false;
  // Context parallelism through PyTorch's context_parallel (CpMerge::kPyTorch):
  // attention's blocks merged by eager FP32 ops (workload/cp_merge.hpp).
  bool cp_pytorch_merge = false;
};

// The parts of a layer Megatron-Core's selective recompute can redo
// (--recompute-modules, parallel.recompute_modules), as bits of a mask: the
// attention core (Op::attention_core), the two norms before attention and
// the MLP, a dense layer's MLP, a MoE block whole, and the experts' activation.
enum RecomputeModule : unsigned {
  kModuleCoreAttn = 1u,
  kModuleLayernorm = 2u,
  kModuleMlp = 4u,
  kModuleMoe = 8u,
  kModuleMoeAct = 16u,
  kModuleMlaUpProj = 32u,  // MLA's up projections and rotary embeddings (their Q, K and V not kept)
};

// Bytes of one BF16/FP16 value.
inline constexpr double kActivationBytes = 2.0;

// `sequence_parallel`: norms and dropouts on 1/tp of the tokens, TP
// all-reduces as reduce-scatter + all-gather (Korthikanti et al. §4.2.2).
// `cp` > 1: `model.seq` is one context-parallel rank's part of the sequence
// (of cp); its queries attend to all cp parts, so attention does cp times
// the work of its own part's, and a kCpExchange op before it brings the keys
// and values.
// A MoE model's layers replace the MLP with the ops of workload/moe.hpp, its
// experts laid out by `moe`.
// LayerCode::batch_first: every sequence-parallel collective among `ops`
// (a layer's attention, MLP or MoE shared experts, the embedding's, the
// head's) copies its buffer once more (Op::sp_copies).
void mark_sp_copies(std::vector<Op>& ops, const LayerCode& code);

// Whether a layer of `model` copies grouped K and V out to every query head
// (LayerCode::kv_repeat, and the model has grouped heads; MLA has none).
bool kv_copied(const TransformerSpec& model, bool kv_repeat);

// Per-op checkpointing (Recompute::kSelectiveOp, TorchTitan's policy) keeps
// the output of every other matmul of a block, counting from the block's
// first: the attention block's matmuls (Llama's wq, wk, wv, wo: 4; MLA's wq
// or wq_a and wq_b, wkv_a, wkv_b, wo: 4 or 5) set the parity of the MLP's
// (w1, w3, w2) or a MoE block's shared experts' (the router's gate is
// recomputed and left out of the count, TorchTitan's default since July
// 2025: activation_checkpoint.py, force_recompute_mm_shapes_by_fqns
// ["moe.router.gate"]).
int attention_matmuls(const TransformerSpec& model);
// Whether that policy keeps the n-th matmul of a block (from 1): the odd ones.
// The MLP's (or shared experts') down projection is the
// (attention_matmuls + 3)-th.
bool op_sac_keeps_matmul(int n);
// The width of K (and of V) a token as attention receives them: the query
// width where they were copied out (kv_copied), else kv_heads x head_dim.
double attention_kv_width(const TransformerSpec& model, bool kv_repeat);

// How the loss is computed over the logits: what it keeps for backward and
// holds for a moment (loss_memory), and the passes it makes through memory
// (loss_passes).
//   vocab-parallel  Megatron-LM's _VocabParallelCrossEntropy: the FP32 copy
//                   of the logits becomes the softmax in place and is kept
//                   for backward, 4 bytes a logit of the rank's vocabulary
//                   shard (megatron/core/tensor_parallel/cross_entropy.py);
//                   its gradient is computed in place too: nothing more;
//   pytorch         torch.nn.functional.cross_entropy on logits.float()
//                   (TorchTitan and other PyTorch training loops, eager),
//                   and with tp > 1 the same call under PyTorch's
//                   loss_parallel, which computes it on the rank's
//                   vocabulary shard (TorchTitan's default with tensor
//                   parallelism): log_softmax's FP32 output kept for
//                   backward, 4 bytes a logit, and beside it for a moment
//                   the FP32 copy and the tensors each eager op makes (see
//                   loss_memory);
//   compiled        the same call under torch.compile (TorchTitan compiles
//                   its loss function with the model, components/loss.py
//                   since April 2025): Inductor fuses the cast, the row's
//                   maximum and sum of exponentials and the target's pick
//                   into reductions over the 16-bit logits, and keeps those
//                   logits (2 bytes a logit) with one log-sum-exp a token for
//                   a backward that recomputes the softmax in one pass: no
//                   FP32 tensor of the logits' size is made.
// Not counted: beside vocab-parallel's FP32 copy, the 16-bit logits it was
// made from (as Korthikanti et al.'s count leaves them out); in all three,
// the 16-bit gradient of the logits made as the loss's backward ends; and
// under pipeline parallelism with PyTorch's schedules, the 16-bit logits
// that torch.distributed.pipelining keeps as the last stage's output until
// that micro-batch's backward (and, in PyTorch before return_outputs=False,
// every micro-batch's until the step ends; pytorch/pytorch#159251).
enum class LossKernel { kVocabParallel, kPyTorch, kCompiled };

// Bytes a logit of the rank's vocabulary shard: what the loss keeps from its
// forward to its backward, and what it holds beyond that while its forward
// and while its backward run (at their peaks). `vocab_sharded`: tp > 1, the
// logits split over the tensor ranks.
struct LossMemory {
  double kept = 0.0;
  double forward_transient = 0.0;
  double backward_transient = 0.0;
};
LossMemory loss_memory(LossKernel kernel, bool vocab_sharded);
// Bytes a logit the loss's passes read and write, forward and backward.
struct LossPasses {
  double forward = 0.0;
  double backward = 0.0;
};
LossPasses loss_passes(LossKernel kernel, bool vocab_sharded);

// `code`: how the framework writes the layer where it differs from
// Megatron-LM (see LayerCode).
std::vector<Op> layer_ops(const TransformerSpec& model, int microbatch, int tp, bool sequence_parallel = false,
                          Attention attention = Attention::kFlash, Elementwise kernels = Elementwise::kFused,
                          int cp = 1, const MoeLayout& moe = {}, const LayerCode& code = {});
std::vector<Op> embedding_ops(const TransformerSpec& model, int microbatch, int tp, bool sequence_parallel = false);
std::vector<Op> head_ops(const TransformerSpec& model, int microbatch, int tp, bool sequence_parallel = false,
                         Elementwise kernels = Elementwise::kFused, LossKernel loss = LossKernel::kVocabParallel);

// Model FLOPs of one training step over `samples` sequences, no recompute
// (forward + both backward halves, every layer, embedding and head).
double model_flops(const TransformerSpec& model, double samples);

}  // namespace trainsim::workload
