#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "workload/op_cost.hpp"
#include "workload/transformer.hpp"
#include "small_setups.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_transformer_test {

using namespace trainsim::workload;

namespace {
TransformerSpec gpt3() { return testing::gpt3_175b(); }
}  // namespace

TEST_CASE("model FLOPs match Korthikanti et al. eq. 7") {
  // 72 B L s h^2 (1 + s/(6h) + V/(12 h L)) per iteration of B sequences, no recompute.
  const TransformerSpec m = gpt3();
  const double B = 1536, L = m.layers, s = m.seq, h = m.hidden, V = m.vocab;
  const double expected = 72 * B * L * s * h * h * (1 + s / (6 * h) + V / (12 * h * L));
  CHECK(model_flops(m, B) == doctest::Approx(expected).scale(0).epsilon(1e-12));
}

TEST_CASE("parameter count matches Narayanan et al. eq. 2 plus the final LayerNorm") {
  // P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)); eq. 2 leaves out the final
  // LayerNorm's 2h parameters, which we count.
  const TransformerSpec m = gpt3();
  const double l = m.layers, h = m.hidden, V = m.vocab, s = m.seq;
  const double eq2 = 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h));
  CHECK(m.total_params() == doctest::Approx(eq2 + 2 * h).scale(0).epsilon(1e-12));
  CHECK(m.total_params() == doctest::Approx(174.6e9).scale(0).epsilon(1e-3));
}

TEST_CASE("tensor parallelism splits the GEMMs and adds two all-reduces each way") {
  const TransformerSpec m = gpt3();
  double f1 = 0, f8 = 0;
  int ar_forward = 0, ar_backward = 0;
  for (const Op& op : layer_ops(m, 1, 1)) f1 += op.flops_forward;
  for (const Op& op : layer_ops(m, 1, 8)) {
    f8 += op.flops_forward;
    ar_forward += op.collectives_forward;
    ar_backward += op.collectives_input_grad;
  }
  // Every FLOP of a layer sits in GEMMs or attention, both split 8 ways.
  CHECK(f8 == doctest::Approx(f1 / 8).scale(0).epsilon(1e-12));
  CHECK(ar_forward == 2);
  CHECK(ar_backward == 2);
}

TEST_CASE("backward splits into I and W, and B = 2F for a GEMM") {
  for (const Op& op : layer_ops(gpt3(), 2, 4)) {
    if (op.kind != OpKind::kGemm) continue;
    CHECK(op.flops_input_grad == op.flops_forward);
    CHECK(op.flops_weight_grad == op.flops_forward);
  }
}

TEST_CASE("Llama layers use grouped-query attention and a SwiGLU MLP") {
  TransformerSpec m;
  m.arch = Arch::kLlama;
  m.layers = 80;
  m.hidden = 8192;
  m.heads = 64;
  m.kv_heads = 8;
  m.ffn = 28672;
  m.seq = 4096;
  m.vocab = 32000;
  // Attention: q and o are h x h, k and v are h x (8 * 128): 2h^2 + 2 * 8192 * 1024.
  // MLP: 3 h ffn. Norms: 2h (RMSNorm, no bias).
  const double h = 8192;
  CHECK(m.params_per_layer() == doctest::Approx(2 * h * h + 2 * h * 1024 + 3 * h * 28672 + 2 * h).scale(0));
  // Llama-2 70B: about 69.0e9 parameters.
  CHECK(m.total_params() == doctest::Approx(68.98e9).scale(0).epsilon(2e-3));
}

namespace {
double bytes_of(const std::vector<Op>& ops, const std::string& name, Pass pass) {
  for (const Op& op : ops) {
    if (op.name != name) continue;
    return pass == Pass::kForward ? op.bytes_forward : pass == Pass::kInputGrad ? op.bytes_input_grad : op.bytes_weight_grad;
  }
  FAIL("no op named " << name);
  return 0.0;
}
}  // namespace

TEST_CASE("a GPT layer carries Megatron-LM's bias, dropout and layout kernels") {
  // GPT-3 shape, micro-batch 2, tp 4: tokens = 2 x 2048 = 4096, h/t = 3072,
  // QKV outputs per rank 3h/t = 9216, MLP width per rank 4h/t = 12288.
  const TransformerSpec m = gpt3();
  const auto ops = layer_ops(m, 2, 4, false, Attention::kUnfused);
  const double tokens = 4096;
  // QKV bias: 2 + 2 bytes forward, Q/K/V gradients joined 2 + 2, bias gradient 2.
  CHECK(bytes_of(ops, "qkv_bias", Pass::kForward) == doctest::Approx(4 * tokens * 9216).scale(0));
  CHECK(bytes_of(ops, "qkv_bias", Pass::kInputGrad) == doctest::Approx(4 * tokens * 9216).scale(0));
  CHECK(bytes_of(ops, "qkv_bias", Pass::kWeightGrad) == doctest::Approx(2 * tokens * 9216).scale(0));
  // Context back to token-major: a copy each way, 2 + 2 bytes per value of h/t.
  CHECK(bytes_of(ops, "attention_context_copy", Pass::kForward) == doctest::Approx(4 * tokens * 3072).scale(0));
  CHECK(bytes_of(ops, "attention_context_copy", Pass::kInputGrad) == doctest::Approx(4 * tokens * 3072).scale(0));
  // Bias-dropout-add on the full hidden state (no sequence parallelism):
  // forward 2 + 2 + 2 + 1 = 7, backward 5 + 6 = 11, bias gradient 2 bytes a value.
  for (const char* name : {"attention_residual", "mlp_residual"}) {
    CHECK(bytes_of(ops, name, Pass::kForward) == doctest::Approx(7 * tokens * 12288).scale(0));
    CHECK(bytes_of(ops, name, Pass::kInputGrad) == doctest::Approx(11 * tokens * 12288).scale(0));
    CHECK(bytes_of(ops, name, Pass::kWeightGrad) == doctest::Approx(2 * tokens * 12288).scale(0));
  }
  // Bias-GeLU: the bias gradient reads GeLU's input gradient, 2 bytes a value.
  CHECK(bytes_of(ops, "bias_gelu", Pass::kWeightGrad) == doctest::Approx(2 * tokens * 12288).scale(0));
}

TEST_CASE("a Llama layer has no bias or dropout kernels") {
  TransformerSpec m = gpt3();
  m.arch = Arch::kLlama;
  const auto ops = layer_ops(m, 1, 1);
  for (const Op& op : ops) CHECK(op.name != "qkv_bias");
  // The residual add reads two values and writes one (2 + 2 + 2 bytes); backward
  // sums the two gradients meeting at the block input (the same); no bias gradient.
  const double values = 2048.0 * 12288;
  CHECK(bytes_of(ops, "mlp_residual", Pass::kForward) == doctest::Approx(6 * values).scale(0));
  CHECK(bytes_of(ops, "mlp_residual", Pass::kInputGrad) == doctest::Approx(6 * values).scale(0));
  CHECK(bytes_of(ops, "mlp_residual", Pass::kWeightGrad) == 0.0);
}

TEST_CASE("the loss makes every FP32 pass of Megatron-LM's vocabulary-parallel cross-entropy") {
  // GPT-3 shape, micro-batch 2, tp 8: 4096 tokens x 51200 / 8 = 6400 logits a
  // token on each rank. Forward: cast 2 + 4, max 4, subtract 4 + 4, exp 4 + 4,
  // sum 4, divide 4 + 4 = 38 bytes a logit; backward: scale 4 + 4, cast back
  // 4 + 2 = 14.
  const auto ops = head_ops(gpt3(), 2, 8, false);
  const double logits = 4096.0 * 6400;
  CHECK(bytes_of(ops, "cross_entropy", Pass::kForward) == doctest::Approx(38 * logits).scale(0));
  CHECK(bytes_of(ops, "cross_entropy", Pass::kInputGrad) == doctest::Approx(14 * logits).scale(0));
  CHECK(bytes_of(ops, "cross_entropy", Pass::kWeightGrad) == 0.0);
}

}  // namespace workload_transformer_test
