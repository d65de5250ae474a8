// FP8 training: which GEMMs run in FP8, the casts before them, and what the
// recipes keep in memory and gather.
#include <doctest/doctest.h>

#include <string>

#include "workload/fp8.hpp"
#include "workload/op_cost.hpp"
#include "workload/stage_costs.hpp"
#include "small_setups.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_fp8_test {

using namespace trainsim;
using namespace trainsim::workload;
using trainsim::workload::testing::small_cluster;
using trainsim::workload::testing::small_gpt;
using trainsim::workload::testing::op_named;

namespace {
// small_cluster with FP8 tensor cores: an FP8 curve twice the BF16 one
// (200 TFLOP/s at 1024, 400 at 4096), capped at 300.
hw::ClusterSpec cluster() {
  hw::ClusterSpec c = small_cluster();
  c.node.gpu.peak_fp8_tflops = 624;
  c.node.gpu.gemm_fp8_tflops = {{1024, 200}, {4096, 400}};
  c.node.gpu.gemm_fp8_max_tflops = 300;
  return c;
}

Plan plan(Precision precision, Fp8Recipe recipe = Fp8Recipe::kTensorwise) {
  Plan p;
  p.dp = 8;
  p.global_batch = 8;
  p.precision = precision;
  p.fp8_recipe = recipe;
  return p;
}
}  // namespace

TEST_CASE("cast bytes a value: torchao's roofline counts, and one pass for scales known before the cast") {
  // tensorwise: X and dY 2 (amax) + 2 + 1 + 1 = 6; W 2 + 3 forward, 3 backward = 8.
  const Fp8CastBytes t = fp8_cast_bytes(Fp8Recipe::kTensorwise, Fp8Library::kTorchao);
  CHECK(t.input_forward == 6.0);
  CHECK(t.grad_backward == 6.0);
  CHECK(t.weight_forward + t.weight_backward == 8.0);
  // rowwise: X and dY 5 + 3 = 8; W 3 + 4 + 3 = 10.
  const Fp8CastBytes r = fp8_cast_bytes(Fp8Recipe::kRowwise, Fp8Library::kTorchao);
  CHECK(r.input_forward == 8.0);
  CHECK(r.weight_forward + r.weight_backward == 10.0);
  // delayed: 2 + 1 + 1 = 4 for X and dY; the cached weight casts once an iteration (left out).
  const Fp8CastBytes d = fp8_cast_bytes(Fp8Recipe::kDelayed, Fp8Library::kTransformerEngine);
  CHECK(d.input_forward == 4.0);
  CHECK(d.weight_forward + d.weight_backward == 0.0);
  CHECK(fp8_saves_fp8_inputs(Fp8Library::kTransformerEngine));
  CHECK_FALSE(fp8_saves_fp8_inputs(Fp8Library::kTorchao));
  // Transformer Engine's current scaling (tensorwise): an amax pass and one
  // cast writing both layouts, 2 + 2 + 1 + 1 = 6 for X and dY; its weights
  // cached like delayed's. Its MXFP8: the blocks' scales found in the cast,
  // 2 + 1 + 1 = 4; torchao's MXFP8: each layout cast apart, 6.
  const Fp8CastBytes te_tensorwise = fp8_cast_bytes(Fp8Recipe::kTensorwise, Fp8Library::kTransformerEngine);
  CHECK(te_tensorwise.input_forward == 6.0);
  CHECK(te_tensorwise.weight_forward + te_tensorwise.weight_backward == 0.0);
  CHECK(fp8_cast_bytes(Fp8Recipe::kMxfp8, Fp8Library::kTransformerEngine).input_forward == 4.0);
  CHECK(fp8_cast_bytes(Fp8Recipe::kMxfp8, Fp8Library::kTorchao).input_forward == 6.0);
  // The libraries' recipes, and the one a recipe runs in when none is named.
  CHECK_FALSE(fp8_library_has(Fp8Library::kTransformerEngine, Fp8Recipe::kRowwise));
  CHECK_FALSE(fp8_library_has(Fp8Library::kTorchao, Fp8Recipe::kBlockwise));
  CHECK(default_fp8_library(Fp8Recipe::kTensorwise) == Fp8Library::kTorchao);
  CHECK(default_fp8_library(Fp8Recipe::kMxfp8) == Fp8Library::kTransformerEngine);
}

TEST_CASE("with_fp8 marks the linear GEMMs, casts before each, and keeps the collectives on their GEMMs") {
  const TransformerSpec m = small_gpt();
  const std::vector<Op> bf16 = layer_ops(m, 1, 2, true);
  const std::vector<Op> fp8 = with_fp8(bf16, Fp8Recipe::kTensorwise, Fp8Library::kTorchao);
  int linear = 0;
  for (const Op& op : bf16) linear += op.kind == OpKind::kGemm && op.flops_weight_grad > 0.0;
  CHECK(linear == 4);  // GPT: QKV, output projection, MLP up and down
  CHECK(fp8.size() == bf16.size() + 4);
  for (std::size_t i = 0; i < fp8.size(); ++i) {
    const Op& op = fp8[i];
    CAPTURE(op.name);
    const bool is_linear = op.kind == OpKind::kGemm && op.flops_weight_grad > 0.0;
    CHECK(op.fp8 == is_linear);
    if (is_linear) CHECK(fp8[i - 1].name == op.name + "_fp8_cast");
    if (op.kind == OpKind::kAttention) CHECK_FALSE(op.fp8);
    if (op.column_gemm >= 0) {
      CHECK(fp8[static_cast<std::size_t>(op.column_gemm)].fp8);
      CHECK(fp8[static_cast<std::size_t>(op.row_gemm)].fp8);
    }
  }
  // QKV on 1024 tokens, h 1024, 3h/2 columns a rank: X 1024 x 1024, W 1024 x 1536,
  // dY 1024 x 1536. Forward 6 X + 5 W, backward 6 dY + 3 W bytes.
  const Op& cast = fp8[1];
  CHECK(cast.name == "qkv_proj_fp8_cast");
  CHECK(cast.bytes_forward == doctest::Approx(6.0 * 1024 * 1024 + 5.0 * 1024 * 1536));
  CHECK(cast.bytes_input_grad == doctest::Approx(6.0 * 1024 * 1536 + 3.0 * 1024 * 1536));
  // The GEMM reads its FP8 operands at a byte a value and writes BF16:
  // forward X and W in, Y out; backward dY and W in, dX out; X and dY in, dW out.
  const Op& qkv = fp8[2];
  CHECK(qkv.bytes_forward == doctest::Approx(1024.0 * 1024 + 1024.0 * 1536 + 2.0 * 1024 * 1536));
  CHECK(qkv.bytes_input_grad == doctest::Approx(1024.0 * 1536 + 1024.0 * 1536 + 2.0 * 1024 * 1024));
  CHECK(qkv.bytes_weight_grad == doctest::Approx(1024.0 * 1024 + 1024.0 * 1536 + 2.0 * 1024 * 1536));
}

TEST_CASE("rowwise gathers BF16, casts the whole gathered input and scales each backward output; tensorwise gathers FP8") {
  // small_gpt, one sequence, tp 2 with sequence parallelism: QKV takes
  // X 1024 x 1024 (the gathered tokens) to 1536 columns a rank.
  const TransformerSpec m = small_gpt();
  const std::vector<Op> bf16 = layer_ops(m, 1, 2, true);
  const std::vector<Op> tensorwise = with_fp8(bf16, Fp8Recipe::kTensorwise, Fp8Library::kTorchao, 2);
  const std::vector<Op> rowwise = with_fp8(bf16, Fp8Recipe::kRowwise, Fp8Library::kTorchao, 2);
  CHECK(fp8_gathers_fp8(Fp8Recipe::kTensorwise, Fp8Library::kTorchao));
  CHECK_FALSE(fp8_gathers_fp8(Fp8Recipe::kRowwise, Fp8Library::kTorchao));
  CHECK_FALSE(fp8_rescales_backward_outputs(Fp8Recipe::kTensorwise, Fp8Library::kTorchao));
  // Tensorwise: the cast reads the 1/2 shard before the gather: 6 x 1024 x 512
  // for X, 5 x 1024 x 1536 for W; the forward gather moves half its buffer.
  const Op& tw_cast = op_named(tensorwise, "qkv_proj_fp8_cast");
  CHECK(tw_cast.bytes_forward == doctest::Approx(6.0 * 1024 * 512 + 5.0 * 1024 * 1536));
  const Op& tw_gather = op_named(tensorwise, "attention_tp_collective");
  CHECK(tw_gather.gather_bytes(true) == doctest::Approx(tw_gather.collective_bytes / 2.0));
  CHECK(tensorwise.size() == bf16.size() + 4);
  // Rowwise: the gather moves BF16 (its whole buffer) and the cast reads the
  // whole gathered X: 8 x 1024 x 1024, and 3 x 1024 x 1536 for W.
  const Op& rw_cast = op_named(rowwise, "qkv_proj_fp8_cast");
  CHECK(rw_cast.bytes_forward == doctest::Approx(8.0 * 1024 * 1024 + 3.0 * 1024 * 1536));
  const Op& rw_gather = op_named(rowwise, "attention_tp_collective");
  CHECK(rw_gather.gather_bytes(true) == doctest::Approx(rw_gather.collective_bytes));
  // And after each of the 4 linear GEMMs a scaling pass: read + write of the
  // BF16 dX (1024 x 1024: 4 MiB x 4 bytes) and dW (1024 x 1536), nothing forward.
  CHECK(rowwise.size() == bf16.size() + 8);
  const Op& rescale = op_named(rowwise, "qkv_proj_fp8_rescale");
  CHECK(rescale.bytes_forward == 0.0);
  CHECK(rescale.bytes_input_grad == doctest::Approx(4.0 * 1024 * 1024));
  CHECK(rescale.bytes_weight_grad == doctest::Approx(4.0 * 1024 * 1536));
  CHECK(rescale.kernels == 1);
  // The collectives still name their GEMMs after the insertions.
  CHECK(rowwise[static_cast<std::size_t>(rw_gather.column_gemm)].name == "qkv_proj");
  CHECK(rowwise[static_cast<std::size_t>(rw_gather.row_gemm)].name == "attention_out_proj");
}

TEST_CASE("an FP8 GEMM runs on the FP8 curve and ceiling") {
  const hw::GpuSpec g = cluster().node.gpu;
  // 4096^3: BF16 min(200, 150) = 150; FP8 min(400, 300) = 300. 1024^3: 100 and 200.
  CHECK(gemm_flops_per_s(g, 4096, 4096, 4096) == doctest::Approx(150e12));
  CHECK(gemm_flops_per_s(g, 4096, 4096, 4096, true) == doctest::Approx(300e12));
  CHECK(gemm_flops_per_s(g, 1024, 1024, 1024, true) == doctest::Approx(200e12));
}

TEST_CASE("FP8 shortens the layers' GEMMs and adds the casts; Transformer Engine keeps FP8 inputs and weights") {
  const TransformerSpec m = small_gpt();
  const hw::ClusterSpec c = cluster();
  const StageCost bf16 = stage_costs(m, plan(Precision::kBf16), c).stages[0];
  const StageCost tensorwise = stage_costs(m, plan(Precision::kFp8), c).stages[0];
  const StageCost delayed = stage_costs(m, plan(Precision::kFp8, Fp8Recipe::kDelayed), c).stages[0];
  CHECK(tensorwise.forward < bf16.forward);
  CHECK(delayed.forward < tensorwise.forward);  // no amax passes, no weight casts a micro-batch
  // torchao's recipes save BF16 inputs: the same activations and state.
  CHECK(tensorwise.activation_bytes == bf16.activation_bytes);
  CHECK(tensorwise.model_state_bytes == bf16.model_state_bytes);
  // Delayed (TE) saves the linear inputs in FP8: half of the kept GEMM inputs,
  // per layer 1024 tokens x (4h + (2h + 2f)) = 1024 x 14336 bytes, 8 layers.
  const double kept = 8.0 * 1024 * (4.0 * 1024 + 2.0 * 1024 + 2.0 * 4096);
  CHECK(static_cast<double>(bf16.activation_bytes - delayed.activation_bytes) == doctest::Approx(kept / 2));
  CHECK(static_cast<double>(delayed.weight_grad_kept_bytes) == doctest::Approx(kept / 2));
  // ... and caches each linear weight in FP8 with its transpose: 2 bytes x
  // 8 layers x (3h^2 + h^2 + 2hf) = 2 x 8 x 12,582,912.
  CHECK(static_cast<double>(delayed.model_state_bytes - bf16.model_state_bytes) ==
        doctest::Approx(2.0 * 8 * 12582912.0));
}

TEST_CASE("fp8_param_gather moves a layer unit's linear weights as one byte a parameter") {
  const TransformerSpec m = small_gpt();
  const hw::ClusterSpec c = cluster();
  Plan p = plan(Precision::kFp8);
  p.zero_stage = 3;
  const StageCost plain = stage_costs(m, p, c).stages[0];
  p.fp8_param_gather = true;
  const StageCost gathered = stage_costs(m, p, c).stages[0];
  REQUIRE(plain.shard_units.size() == gathered.shard_units.size());
  for (std::size_t u = 0; u < plain.shard_units.size(); ++u) {
    CAPTURE(u);
    const ShardUnit& a = plain.shard_units[u];
    const ShardUnit& b = gathered.shard_units[u];
    // A layer unit: 12,582,912 linear parameters a byte less each; the
    // embedding and head units stay 16-bit.
    CHECK(a.gather_bytes - b.gather_bytes == doctest::Approx(a.layers * 12582912.0));
    if (a.layers > 0) CHECK(b.gather < a.gather);
  }
}

}  // namespace workload_fp8_test
