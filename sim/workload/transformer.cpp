#include "workload/transformer.hpp"

#include "workload/cp_merge.hpp"
#include "workload/mla.hpp"
#include "workload/moe.hpp"
#include "workload/op_build.hpp"

namespace trainsim::workload {

namespace {

using build::eager_rms_norm;
using build::eager_rotary_embedding;
using build::elementwise;
using build::gemm;
using build::tp_collective;

// The kernels a residual block ends with. GPT (Megatron-LM's
// bias_dropout_add_fused_train): the output projection's bias, dropout and the
// residual add in one kernel that reads the branch and the residual (2 + 2
// bytes a value) and writes the sum and a one-byte dropout mask (2 + 1).
// Backward: dropout's gradient reads the incoming gradient and the mask and
// writes (2 + 1 + 2); autograd then adds the two gradients meeting at the
// block's input, through the norm and through the residual (2 + 2 + 2); the
// bias gradient is a sum over tokens of the incoming gradient (2, counted with
// W). Llama (no bias, no dropout): a plain add (2 + 2 + 2), and in backward
// the same gradient sum.
Op residual_block_end(std::string name, double elements, bool bias_and_dropout) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::kElementwise;
  op.bytes_forward = (bias_and_dropout ? 7.0 : 6.0) * elements;
  op.bytes_input_grad = (bias_and_dropout ? 11.0 : 6.0) * elements;
  op.bytes_weight_grad = bias_and_dropout ? 2.0 * elements : 0.0;
  return op;
}

// The input gradient of `projections` separate GEMMs reading one input of
// `elements` values (LayerCode::separate_projections), summed: backward
// only, nothing to redo. With tensor parallelism the sum is a kernel of its
// own before the collective (read each gradient, write the sum: 2P + 2 bytes
// a value); without, it folds into the norm's backward, which then reads
// P - 1 gradients more (2 bytes each).
Op projection_grad_sum(std::string name, double elements, int projections, int tp) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::kElementwise;
  op.bytes_input_grad = (tp > 1 ? 2.0 * projections + 2.0 : 2.0 * (projections - 1)) * elements;
  op.kernels = tp > 1 ? 1 : 0;
  op.op_sac_redo = 0.0;
  return op;
}

}  // namespace

const char* attention_name(Attention a) {
  switch (a) {
    case Attention::kFlash: return "flash";
    case Attention::kFlashV1: return "flash-v1";
    case Attention::kCudnn: return "cudnn";
    case Attention::kUnfused: return "unfused";
  }
  return "?";
}

bool fused_attention(Attention a) { return a != Attention::kUnfused; }

namespace {
// A MoE block's weights beside the routed experts': the router's (h x E)
// and the shared experts' SwiGLU MLPs.
double moe_dense_params(const TransformerSpec& m) {
  return static_cast<double>(m.hidden) * m.moe.experts +
         3.0 * m.hidden * static_cast<double>(m.moe.shared_experts) * m.moe.shared_expert_ffn;
}
}  // namespace

double TransformerSpec::params_per_layer() const {
  const double h = hidden, q = q_dim();
  const double kv = static_cast<double>(kv_heads) * head_dim();
  const bool gpt = arch == Arch::kGpt;
  const double attention = mla.enabled() ? mla_attention_params(*this)
                                         : h * (q + 2.0 * kv) + q * h + (gpt ? (q + 2.0 * kv) + h : 0.0);
  const double mlp = moe.enabled() ? moe_dense_params(*this) + expert_params_per_layer()
                     : gpt         ? 2.0 * h * ffn + ffn + h
                                   : 3.0 * h * ffn;
  const double norms = (gpt ? 4.0 * h : 2.0 * h) + (qk_norm ? 2.0 * head_dim() : 0.0);  // LayerNorm has a bias, RMSNorm does not
  return attention + mlp + norms;
}

double TransformerSpec::expert_params_per_layer() const {
  return moe.enabled() ? 3.0 * hidden * static_cast<double>(moe.experts) * moe.expert_ffn : 0.0;
}

double TransformerSpec::replicated_params_per_layer() const {
  const double router = moe.enabled() ? static_cast<double>(hidden) * moe.experts : 0.0;
  const double downs = mla.enabled() ? static_cast<double>(hidden) * mla.q_lora_rank + mla.q_lora_rank +
                                           static_cast<double>(hidden) * (mla.kv_lora_rank + mla.qk_rope_head_dim) +
                                           mla.kv_lora_rank
                                     : 0.0;
  return router + downs;
}

double TransformerSpec::linear_params_per_layer() const {
  const double h = hidden, q = q_dim(), kv = static_cast<double>(kv_heads) * head_dim();
  // A MoE block's: its experts', routed and shared; the router stays in higher precision.
  const double mlp = moe.enabled() ? moe_dense_params(*this) - h * moe.experts + expert_params_per_layer()
                                   : (arch == Arch::kGpt ? 2.0 : 3.0) * h * ffn;
  // MLA's: every projection but its two norms' weights.
  const double attention = mla.enabled() ? mla_attention_params(*this) - mla.q_lora_rank - mla.kv_lora_rank
                                         : h * (q + 2.0 * kv) + q * h;
  return attention + mlp;
}

std::vector<double> TransformerSpec::layer_tensors(int tp) const {
  const double h = hidden, t = tp, f = ffn, q = q_dim();
  const double kv = static_cast<double>(kv_heads) * head_dim();
  std::vector<double> out;
  if (arch == Arch::kGpt) {
    // LayerNorm weight and bias twice; QKV weight and bias, output projection
    // and its bias; MLP up and its bias, down and its bias.
    out = {h, h, h * (q + 2.0 * kv) / t, (q + 2.0 * kv) / t, q * h / t, h, h, h};
  } else if (mla.enabled()) {
    // RMSNorm; MLA's down projections and their norms (whole on every tensor
    // rank), its up projections and the output projection (over tp); the MLP's norm.
    const double heads_d = heads, d = head_dim(), r = mla.qk_rope_head_dim, v = mla.v_head_dim;
    const double ql = mla.q_lora_rank, kl = mla.kv_lora_rank;
    if (ql > 0) out = {h, h * ql, ql, ql * heads_d * (d + r) / t};
    else out = {h, h * heads_d * (d + r) / t};  // queries without compression: one projection over tp
    out.insert(out.end(), {h * (kl + r), kl, kl * heads_d * (d + v) / t, heads_d * v * h / t, h});
  } else {
    // RMSNorm weights; Q, K, V, output projection; the MLP's norm.
    out = {h, h * q / t, h * kv / t, h * kv / t, q * h / t, h};
  }
  if (qk_norm) out.insert(out.end(), {static_cast<double>(head_dim()), static_cast<double>(head_dim())});
  if (!moe.enabled()) {
    // GPT: up and its bias, down and its bias; Llama: gate, up, down.
    if (arch == Arch::kGpt) out.insert(out.end(), {h * f / t, f / t, f * h / t, h});
    else out.insert(out.end(), {h * f / t, h * f / t, f * h / t});
    return out;
  }
  // The router, each routed expert's gate, up and down (whole on their
  // expert-parallel rank), each shared expert's over tp.
  out.push_back(h * moe.experts);
  const double ef = moe.expert_ffn, sf = moe.shared_expert_ffn;
  for (int e = 0; e < moe.experts; ++e) out.insert(out.end(), {h * ef, h * ef, ef * h});
  for (int e = 0; e < moe.shared_experts; ++e) out.insert(out.end(), {h * sf / t, h * sf / t, sf * h / t});
  return out;
}

double TransformerSpec::embedding_params() const {
  return static_cast<double>(vocab) * hidden + (arch == Arch::kGpt ? static_cast<double>(seq) * hidden : 0.0);
}

double TransformerSpec::head_params() const {
  const double norm = arch == Arch::kGpt ? 2.0 * hidden : hidden;
  return norm + static_cast<double>(vocab) * hidden;
}

int TransformerSpec::moe_layers_in(int first, int count) const {
  int n = 0;
  for (int l = first; l < first + count; ++l) n += moe.is_moe_layer(l);
  return n;
}

double TransformerSpec::total_params() const {
  const double tied = arch == Arch::kGpt ? static_cast<double>(vocab) * hidden : 0.0;
  const int moe_layers = moe_layers_in(0, layers);
  const double dense = moe_layers < layers ? dense_part().params_per_layer() : 0.0;
  return moe_layers * params_per_layer() + (layers - moe_layers) * dense + embedding_params() + head_params() - tied;
}

void mark_sp_copies(std::vector<Op>& ops, const LayerCode& code) {
  for (Op& op : ops) op.sp_copies = code.batch_first && op.kind == OpKind::kTpCollective && op.sequence_parallel;
}

int attention_matmuls(const TransformerSpec& model) {
  return model.mla.enabled() && model.mla.q_lora_rank > 0 ? 5 : 4;
}

bool op_sac_keeps_matmul(int n) { return n % 2 == 1; }

bool kv_copied(const TransformerSpec& model, bool kv_repeat) {
  return kv_repeat && model.kv_heads < model.heads && !model.mla.enabled();
}

double attention_kv_width(const TransformerSpec& model, bool kv_repeat) {
  return kv_copied(model, kv_repeat) ? model.q_dim() : static_cast<double>(model.kv_heads) * model.head_dim();
}

std::vector<Op> layer_ops(const TransformerSpec& model, int microbatch, int tp, bool sequence_parallel,
                          Attention attention, Elementwise kernels, int cp, const MoeLayout& moe, const LayerCode& code) {
  const bool expanded = kv_copied(model, code.kv_repeat);
  const double b = microbatch, s = model.seq, h = model.hidden, t = tp, f = model.ffn;
  const double tokens = b * s;
  const double kv = static_cast<double>(model.kv_heads) * model.head_dim();
  const double q = model.q_dim();  // = h unless model.head_dim says otherwise
  const bool gpt = model.arch == Arch::kGpt;
  const bool sp = sequence_parallel && tp > 1;
  // Norms, dropouts and residual adds run on the full hidden state on every
  // tensor-parallel rank, or on 1/tp of the tokens with sequence parallelism.
  const double replicated = sp ? tokens * h / t : tokens * h;
  const bool eager = kernels == Elementwise::kEager && !gpt;
  std::vector<Op> ops;
  // TorchTitan's Q, K and V are three GEMMs reading the norm's output (MLA's
  // two: wq or wq_a, and wkv_a).
  const int norm_readers = model.mla.enabled() ? 2 : 3;
  ops.push_back(eager ? eager_rms_norm("input_norm", replicated, norm_readers) : elementwise("input_norm", replicated));
  ops.back().modules = kModuleLayernorm;
  int qkv = static_cast<int>(ops.size());
  if (model.mla.enabled()) {
    qkv = append_mla_attention(ops, model, tokens, tp, cp, attention, eager);
  } else {
    ops.push_back(gemm("qkv_proj", tokens, h, (q + 2.0 * kv) / t));
    ops.back().op_sac_redo = kv / (q + 2.0 * kv);  // wk redone; wq, wv kept
    if (code.separate_projections) {
      ops.back().column_parts[0] = q / t;
      ops.back().column_parts[1] = kv / t;
      ops.back().column_parts[2] = kv / t;
      if (!eager) ops.push_back(projection_grad_sum("qkv_grad_sum", tokens * h, 3, tp));
    }
    if (model.qk_norm) {
      // RMSNorm over each head's queries and keys.
      ops.push_back(eager ? eager_rms_norm("qk_norm", tokens * (q + kv) / t, 1) : elementwise("qk_norm", tokens * (q + kv) / t));
    }
    if (eager) {
      ops.push_back(eager_rotary_embedding("rotary_embedding", tokens * (q + kv) / t));
    } else if (!gpt) {
      // Rotary embeddings on Q and K as one fused kernel (Transformer
      // Engine's fused RoPE, the kernel torch.compile generates): each value
      // read and written once, 2 + 2 bytes; backward rotates the gradient back
      // the same way.
      Op rope = elementwise("rotary_embedding", tokens * (q + kv) / t);
      rope.bytes_input_grad = rope.bytes_forward;
      ops.push_back(rope);
    }
    if (expanded) {
      // Grouped K and V copied out to every query head. Op by op, two
      // copies reading kv and writing q each (2 + 2 bytes a value); backward
      // sums each group's gradients back (read q, write kv). Fused, the
      // rotation's kernel writes the expanded K where it wrote K (2q - 2kv
      // more) and V's copy is a kernel of its own (2kv + 2q): 4q bytes a
      // token more either way, each pass.
      Op expand = elementwise("repeat_kv", tokens * (q + kv) / t);
      expand.bytes_forward = (eager ? 4.0 * (q + kv) : 4.0 * q) * tokens / t;
      expand.bytes_input_grad = expand.bytes_forward;
      expand.kernels = eager ? 2 : 1;
      ops.push_back(expand);
    }
    if (gpt) {
      // Megatron-LM's column-parallel linear adds the bias after the GEMM
      // (read and write each output, 2 + 2 bytes); backward, splitting the
      // output into Q, K and V makes autograd join their gradients into one
      // buffer (2 + 2), and the bias gradient sums the output gradient over
      // tokens (2, with W).
      const double outputs = tokens * (q + 2.0 * kv) / t;
      Op bias = elementwise("qkv_bias", outputs);
      bias.bytes_input_grad = 4.0 * outputs;
      bias.bytes_weight_grad = 2.0 * outputs;
      ops.push_back(bias);
    }
    if (fused_attention(attention)) {
      if (cp > 1) {
        // This rank's keys and values (and, for all-to-all, its queries and
        // output), 2 bytes a value, for the exchange the plan's algorithm runs;
        // copied out to every query head first (kv_repeat), the copies.
        Op exchange;
        exchange.name = "context_parallel_exchange";
        exchange.kind = OpKind::kCpExchange;
        const double kv_width = attention_kv_width(model, code.kv_repeat);
        exchange.cp_kv_bytes = 2.0 * tokens * kv_width / t * kActivationBytes;
        exchange.cp_qo_bytes = 2.0 * tokens * q / t * kActivationBytes;
        exchange.attention_op = static_cast<int>(ops.size()) + 1;
        exchange.attention_core = true;
        exchange.op_sac_redo = 0.0;  // attention's output is kept; its inputs need no second exchange
        ops.push_back(exchange);
      }
      // Scores QK^T and the weighted sum over V: 2 x 2*b*s*s*h/t FLOPs forward,
      // twice that backward, no weights; with context parallelism this rank's
      // s queries against all cp*s keys.
      Op att;
      att.name = "attention";
      att.kind = OpKind::kAttention;
      att.flops_forward = 4.0 * b * s * (s * cp) * q / t;
      att.flops_input_grad = 2.0 * att.flops_forward;
      att.bytes_forward = 4.0 * tokens * q / t * kActivationBytes;  // read Q, K, V, write O
      att.bytes_input_grad = 2.0 * att.bytes_forward;
      att.attention_core = true;
      att.attention_kernel = attention;
      att.op_sac_redo = 0.0;
      ops.push_back(att);
      if (cp > 1 && code.cp_pytorch_merge) {
        // PyTorch's context parallelism merges the blocks' outputs, and
        // accumulates their gradients, in eager FP32 ops (cp_merge.hpp).
        const CpMergeTraffic traffic =
            pytorch_cp_merge_traffic(tokens * q / t, 2.0 * tokens * attention_kv_width(model, code.kv_repeat) / t, cp);
        Op merge;
        merge.name = "context_parallel_merge";
        merge.kind = OpKind::kElementwise;
        merge.bytes_forward = traffic.forward_bytes;
        merge.bytes_input_grad = traffic.backward_bytes;
        merge.kernels = traffic.kernels;
        merge.attention_core = true;
        merge.op_sac_redo = 0.0;  // part of the attention call, whose output is kept
        ops.push_back(merge);
      }
    } else {
      // The same FLOPs as two batched GEMMs over the rank's a/t heads, each
      // timed as one GEMM of b*(a/t)*s rows; between them the b*(a/t)*s*s
      // scores pass through memory. Forward: scale-mask-softmax reads and writes
      // them (2 + 2 bytes a value), dropout reads them and writes its output and
      // a one-byte mask (2 + 2 + 1). Backward: dropout's gradient reads the
      // incoming gradient and the mask and writes (2 + 1 + 2), softmax's reads
      // its output and that gradient and writes (2 + 2 + 2).
      const double heads = static_cast<double>(model.heads) / t, d = model.head_dim();
      const double rows = b * heads * s;
      Op scores = gemm("attention_scores", rows, d, s, false);
      Op values = gemm("attention_values", rows, s, d, false);
      for (Op* g : {&scores, &values}) {
        g->flops_input_grad = 2.0 * g->flops_forward;  // gradients for both operands
        g->bytes_input_grad = 2.0 * g->bytes_forward;
        g->attention_core = true;
      }
      const double probabilities = rows * s;
      Op softmax;
      softmax.name = "attention_softmax_dropout";
      softmax.kind = OpKind::kElementwise;
      softmax.bytes_forward = 9.0 * probabilities;
      softmax.bytes_input_grad = 11.0 * probabilities;
      softmax.attention_core = true;
      ops.push_back(scores);
      ops.push_back(softmax);
      ops.push_back(values);
      // The weighted sum comes out head-major ([b a/t, s, d]); Megatron-LM
      // permutes it back to [s, b, h/t] with a copy (read and write, 2 + 2
      // bytes a value), and backward copies its gradient the other way.
      Op to_tokens = elementwise("attention_context_copy", tokens * q / t);
      to_tokens.bytes_input_grad = to_tokens.bytes_forward;
      to_tokens.attention_core = true;
      ops.push_back(to_tokens);
    }
  }
  const int out_proj = static_cast<int>(ops.size());
  ops.push_back(gemm("attention_out_proj", tokens, model.v_width() / t, h));
  ops.back().op_sac_redo = op_sac_keeps_matmul(attention_matmuls(model)) ? 0.0 : 1.0;  // wo: attention's last matmul
  ops.push_back(tp_collective("attention_tp_collective", tokens * h * kActivationBytes, 1, 1, sp));
  // Per-op checkpointing keeps reduce-scatter outputs and redoes the
  // all-gather before the QKV GEMM; an all-reduce's output is redone.
  ops.back().op_sac_redo = sp ? 0.5 : 1.0;
  ops.back().column_gemm = qkv;
  ops.back().row_gemm = out_proj;
  // (Fused: the add that sums them writes the scattered order. Eager autograd
  // adds them into a buffer the collective's own copy then reads.)
  ops.back().scatter_after_sum = code.separate_projections && !model.mla.enabled() && !eager;
  ops.push_back(residual_block_end("attention_residual", replicated, gpt));
  ops.push_back(eager ? eager_rms_norm("mlp_norm", replicated, 2) : elementwise("mlp_norm", replicated));
  ops.back().modules = kModuleLayernorm;
  if (model.moe.enabled()) {
    const std::size_t block = ops.size();
    append_moe_ops(ops, model, tokens, tp, sequence_parallel, moe, eager);
    for (std::size_t i = block; i < ops.size(); ++i) ops[i].modules |= kModuleMoe;
    ops.push_back(residual_block_end("mlp_residual", replicated, gpt));
    mark_sp_copies(ops, code);
    return ops;
  }
  const int up = static_cast<int>(ops.size());
  const std::size_t mlp = ops.size();
  if (gpt) {
    ops.push_back(gemm("mlp_up", tokens, h, f / t));
    ops.back().op_sac_redo = 0.0;
    // Megatron-LM's bias_gelu: bias and GeLU in one kernel; the bias
    // gradient sums GeLU's input gradient over tokens (2 bytes, with W).
    Op gelu = elementwise("bias_gelu", tokens * f / t);
    gelu.bytes_weight_grad = 2.0 * tokens * f / t;
    ops.push_back(gelu);
  } else {
    ops.push_back(gemm("mlp_gate_up", tokens, h, 2.0 * f / t));
    ops.back().op_sac_redo = 0.5;  // one of w1 and w3 redone, the other kept
    if (code.separate_projections) {
      ops.back().column_parts[0] = f / t;
      ops.back().column_parts[1] = f / t;
      if (!eager) ops.push_back(projection_grad_sum("mlp_grad_sum", tokens * h, 2, tp));
    }
    ops.push_back(build::swiglu("swiglu", tokens * f / t, eager));
  }
  const int down = static_cast<int>(ops.size());
  ops.push_back(gemm("mlp_down", tokens, f / t, h));
  ops.back().op_sac_redo = op_sac_keeps_matmul(attention_matmuls(model) + 3) ? 0.0 : 1.0;  // w2
  ops.push_back(tp_collective("mlp_tp_collective", tokens * h * kActivationBytes, 1, 1, sp));
  ops.back().op_sac_redo = sp ? 0.5 : 1.0;
  ops.back().column_gemm = up;
  ops.back().row_gemm = down;
  ops.back().scatter_after_sum = code.separate_projections && !gpt && !eager;
  for (std::size_t i = mlp; i < ops.size(); ++i) ops[i].modules |= kModuleMlp;
  ops.push_back(residual_block_end("mlp_residual", replicated, gpt));
  mark_sp_copies(ops, code);
  return ops;
}

std::vector<Op> embedding_ops(const TransformerSpec& model, int microbatch, int tp, bool sequence_parallel) {
  const double tokens = static_cast<double>(microbatch) * model.seq;
  const double h = model.hidden;
  std::vector<Op> ops;
  // A gather of rows (plus positions for GPT); its weight gradient is a
  // scatter-add of the same size. The vocabulary-parallel lookup ends in an
  // all-reduce across tensor-parallel ranks.
  Op lookup = elementwise("embedding_lookup", tokens * h);
  lookup.bytes_input_grad = 0.0;  // nothing upstream needs a gradient
  lookup.bytes_weight_grad = 3.0 * tokens * h * kActivationBytes;
  lookup.weight_grad_held_bytes = tokens * h * kActivationBytes;  // the output gradient
  ops.push_back(lookup);
  if (tp > 1) {
    ops.push_back(tp_collective("embedding_tp_collective", tokens * h * kActivationBytes, 1, 0, sequence_parallel));
  }
  return ops;
}

LossPasses loss_passes(LossKernel kernel, bool vocab_sharded) {
  switch (kernel) {
    case LossKernel::kVocabParallel:
      // Megatron-LM (gpt_model.py's output.float(), then cross_entropy.py's
      // _VocabParallelCrossEntropy): forward casts the 16-bit logits to FP32
      // (2 + 4), takes the row maximum (4), subtracts it (4 + 4),
      // exponentiates (4 + 4), sums the row (4) and divides by the sum
      // (4 + 4), keeping the softmax: 38. Backward scales the softmax by the
      // loss gradient in place (4 + 4) and casts the result back to 16 bits
      // for the output layer (4 + 2): 14.
      return {38.0, 14.0};
    case LossKernel::kPyTorch:
      if (vocab_sharded) {
        // loss_parallel (torch/distributed/tensor/parallel/loss.py), eager
        // ops on the shard: forward the cast (2 + 4), amax (4), x - max
        // (4 + 4), exp (4 + 4), its sum (4) and shifted - log-sum-exp
        // (4 + 4): 38. Backward (_nll_loss_and_log_softmax_backward) fills a
        // zero gradient (4), exponentiates the kept output (4 + 4), adds the
        // two (4 + 4 + 4) and scales the sum by the loss gradient (4 + 4),
        // then the cast back to 16 bits (4 + 2): 38.
        return {38.0, 38.0};
      }
      // torch.nn.functional.cross_entropy: forward the cast (2 + 4), then
      // log_softmax's kernel, which reads a row too long for shared memory
      // (Llama 3's 128K-value rows: 513 KB in FP32) once for its maximum,
      // once for its sum of exponentials and once more to write the output
      // (4 + 4 + 4 + 4; aten/src/ATen/native/cuda/SoftMax.cu,
      // cunn_SoftMaxForward). Rows that fit a block's shared memory (some
      // 40-56K FP32 values, by GPU) are read from HBM once, by
      // cunn_SoftMaxForwardSmem and its backward twin: not told apart here,
      // so a smaller vocabulary's passes are counted high. nll_loss picks
      // one value a row. Backward
      // nll_loss fills a zero gradient (4) and sets one value a row;
      // log_softmax's backward reads the gradient for its row sum, then it
      // and the output, writing the input gradient (4 + 4 + 4 + 4,
      // cunn_SoftMaxBackward); then the cast back to 16 bits (4 + 2).
      return {22.0, 26.0};
    case LossKernel::kCompiled:
      // Inductor's reductions read the 16-bit logits for the row maximum and
      // again for the sum of exponentials and the target's logit (2 + 2; the
      // few values a token it writes are left out); backward recomputes the
      // softmax from the logits and writes their 16-bit gradient in one
      // pass (2 + 2).
      return {4.0, 4.0};
  }
  return {};
}

LossMemory loss_memory(LossKernel kernel, bool vocab_sharded) {
  switch (kernel) {
    case LossKernel::kVocabParallel:
      return {4.0, 0.0, 0.0};  // the softmax, made in place of the FP32 copy
    case LossKernel::kPyTorch:
      // Kept: log_softmax's FP32 output (the only tensor its backward and
      // nll_loss's save). While the forward runs, the 16-bit logits (the
      // training loop's reference, TorchTitan's pred, dropped only once the
      // loss is computed; pipeline schedules keep them longer, not counted,
      // see LossKernel) and their FP32 copy (2 + 4) sit beside it;
      // loss_parallel's eager log_softmax also holds x - max (4) while it
      // makes the output from it. While the backward runs: nll_loss's FP32
      // gradient and log_softmax's input gradient (4 + 4); under
      // loss_parallel, the zero-filled gradient, exp of the output and
      // their sum, then the sum and its product with the loss gradient
      // (4 + 4 + 4).
      return vocab_sharded ? LossMemory{4.0, 10.0, 12.0} : LossMemory{4.0, 6.0, 8.0};
    case LossKernel::kCompiled:
      return {2.0, 0.0, 0.0};  // the 16-bit logits
  }
  return {};
}

std::vector<Op> head_ops(const TransformerSpec& model, int microbatch, int tp, bool sequence_parallel,
                         Elementwise kernels, LossKernel loss_kernel) {
  const double tokens = static_cast<double>(microbatch) * model.seq;
  const double h = model.hidden;
  std::vector<Op> ops;
  const double normed = sequence_parallel && tp > 1 ? tokens * h / tp : tokens * h;
  ops.push_back(kernels == Elementwise::kEager && model.arch != Arch::kGpt
                    ? eager_rms_norm("final_norm", normed, 1)
                    : elementwise("final_norm", normed));
  ops.push_back(gemm("logits", tokens, h, static_cast<double>(model.vocab) / tp));
  // The loss's passes over the rank's vocabulary shard (loss_passes); its
  // all-reduces over the tensor group (the row maximum, the target logit,
  // the sum; one value a token each) are latency, left out.
  const double logits = tokens * model.vocab / tp;
  const LossPasses passes = loss_passes(loss_kernel, tp > 1);
  Op loss;
  loss.name = "cross_entropy";
  loss.kind = OpKind::kElementwise;
  loss.bytes_forward = passes.forward * logits;
  loss.bytes_input_grad = passes.backward * logits;
  ops.push_back(loss);
  if (tp > 1) {
    ops.push_back(tp_collective("head_tp_collective", tokens * h * kActivationBytes, 0, 1, sequence_parallel));
  }
  return ops;
}

double model_flops(const TransformerSpec& model, double samples) {
  auto sum = [](const std::vector<Op>& ops) {
    double f = 0.0;
    for (const Op& op : ops) f += op.flops_forward + op.flops_input_grad + op.flops_weight_grad;
    return f;
  };
  // With tp = 1 the per-rank FLOPs are the whole model's; a MoE model's
  // dense layers as a dense model's.
  const int moe_layers = model.moe_layers_in(0, model.layers);
  const double dense = moe_layers < model.layers ? sum(layer_ops(model.dense_part(), 1, 1)) : 0.0;
  const double moe = moe_layers > 0 ? sum(layer_ops(model, 1, 1)) : 0.0;
  return samples * (moe_layers * moe + (model.layers - moe_layers) * dense + sum(embedding_ops(model, 1, 1)) +
                    sum(head_ops(model, 1, 1)));
}

}  // namespace trainsim::workload
