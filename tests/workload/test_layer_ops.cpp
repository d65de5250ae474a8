// One layer op by op (StageCosts::layer_ops, `trainsim run --ops`): the rows
// are the ops as costed, and they add up to the layer's figures.
#include <doctest/doctest.h>

#include <string>

#include "small_setups.hpp"
#include "workload/stage_costs.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_layer_ops_test {

using namespace trainsim;
using namespace trainsim::workload;
using trainsim::workload::testing::small_cluster;
using trainsim::workload::testing::small_gpt;
using trainsim::workload::testing::small_moe;

namespace {
const LayerOpCost* find(const LayerOps& l, const std::string& name) {
  for (const LayerOpCost& op : l.ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}
struct Sums {
  double forward = 0.0, backward = 0.0;
};
Sums sums(const LayerOps& l) {
  Sums s;
  for (const LayerOpCost& op : l.ops) {
    s.forward += op.forward.seconds();
    s.backward += op.input_grad.seconds() + op.weight_grad.seconds() + recompute_seconds(op);
  }
  s.backward += l.grad_add_s;
  return s;
}
}  // namespace

TEST_CASE("a GEMM's row is its FLOPs at its own shape's rate") {
  // small_gpt on one GPU, a micro-batch of one: the fused QKV projection is
  // a 1024 x 1024 x 3072 GEMM, 2 x 1024 x 1024 x 3072 = 6,442,450,944 FLOPs.
  // small_cluster's curve (100 TFLOP/s at 1024, 200 at 4096, log-interpolated)
  // at its cube root 1024 x 3^(1/3) = 1476.9: 100 + 100 x ln(1.44225) / ln(4)
  // = 126.416 TFLOP/s, so 50.962 us. Its bytes, (1024 x 1024 + 1024 x 3072 +
  // 1024 x 3072) x 2 = 14,680,064, take 9.175 us at 1.6 TB/s: the tensor
  // cores bound it. small_cluster charges no launches.
  Plan p;
  p.global_batch = 1;
  const StageCosts c = stage_costs(small_gpt(), p, small_cluster(), hw::CollectiveAlgorithm::kAuto, true);
  const LayerOpCost* qkv = find(c.layer_ops, "qkv_proj");
  REQUIRE(qkv != nullptr);
  CHECK(qkv->kind == OpKind::kGemm);
  CHECK(qkv->forward.work_flops == 6'442'450'944.0);
  CHECK(qkv->forward.math_s == doctest::Approx(50.962290e-6).epsilon(1e-6));
  CHECK(qkv->forward.memory_s == doctest::Approx(9.17504e-6).epsilon(1e-9));
  CHECK(qkv->forward.launch_s == 0.0);
  CHECK(qkv->forward.compute_s == qkv->forward.math_s);
  CHECK(qkv->forward.bytes == 14'680'064.0);
  CHECK(qkv->redone == 0.0);
}

TEST_CASE("the rows add up to the layer's forward and backward, whatever recompute redoes") {
  for (const Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    CAPTURE(static_cast<int>(r));
    Plan p;
    p.tp = 2;
    p.sequence_parallel = true;
    p.global_batch = 1;
    p.recompute = r;
    const StageCosts c = stage_costs(small_gpt(), p, small_cluster(), hw::CollectiveAlgorithm::kAuto, true);
    const Sums s = sums(c.layer_ops);
    CHECK(s.forward == doctest::Approx(c.layer_forward.to_seconds()).epsilon(1e-9));
    CHECK(s.backward == doctest::Approx(c.layer_backward.to_seconds()).epsilon(1e-9));
    // Full recompute redoes every op's forward, selective the attention core's alone.
    double redone = 0.0;
    for (const LayerOpCost& op : c.layer_ops.ops) redone += recompute_seconds(op);
    if (r == Recompute::kNone) CHECK(redone == 0.0);
    if (r == Recompute::kFull) CHECK(redone == doctest::Approx(s.forward).epsilon(1e-12));
    if (r == Recompute::kSelective) {
      CHECK(redone > 0.0);
      CHECK(redone < s.forward);
    }
    // With tp 2 the tensor-parallel collectives are rows of their own, bound by communication.
    const LayerOpCost* tp = find(c.layer_ops, "mlp_tp_collective");
    REQUIRE(tp != nullptr);
    CHECK(tp->forward.tp_comm_s > 0.0);
    CHECK(c.dense_layer_ops.empty());
  }
}

TEST_CASE("what recompute redoes is the forward as the backward runs it") {
  // Async TP on the forward alone (TorchTitan's): the forward pipelines its
  // tensor-parallel collectives with the GEMMs, the recomputation inside the
  // backward runs them whole, so a collective's R is longer than its F, and
  // the rows still add up to the layer's backward.
  Plan p;
  p.tp = 2;
  p.sequence_parallel = true;
  p.global_batch = 1;
  p.recompute = Recompute::kFull;
  p.overlap.tp_comm = true;
  p.overlap.tp_comm_backward = false;
  const StageCosts c = stage_costs(small_gpt(), p, small_cluster(), hw::CollectiveAlgorithm::kAuto, true);
  const LayerOpCost* tp = find(c.layer_ops, "mlp_tp_collective");
  REQUIRE(tp != nullptr);
  CHECK(recompute_seconds(*tp) > tp->forward.seconds());
  CHECK(sums(c.layer_ops).backward == doctest::Approx(c.layer_backward.to_seconds()).epsilon(1e-9));
}

TEST_CASE("a MoE model with dense layers breaks down both kinds of layer") {
  // small_moe with its first layer a dense MLP of 4096.
  TransformerSpec m = small_moe();
  m.moe.dense_layers = 1;
  m.ffn = 4096;
  Plan p;
  p.global_batch = 1;
  const StageCosts c = stage_costs(m, p, small_cluster(), hw::CollectiveAlgorithm::kAuto, true);
  CHECK(find(c.layer_ops, "moe_experts_gate_up") != nullptr);
  CHECK(find(c.layer_ops, "mlp_gate_up") == nullptr);
  REQUIRE_FALSE(c.dense_layer_ops.empty());
  CHECK(find(c.dense_layer_ops, "mlp_gate_up") != nullptr);
  CHECK(find(c.dense_layer_ops, "moe_experts_gate_up") == nullptr);
  // The summary's layer is the MoE one.
  CHECK(sums(c.layer_ops).forward == doctest::Approx(c.layer_forward.to_seconds()).epsilon(1e-9));
  CHECK(sums(c.layer_ops).backward == doctest::Approx(c.layer_backward.to_seconds()).epsilon(1e-9));
}

TEST_CASE("a separate add of the weight gradients, context parallelism and op-level recompute add up too") {
  // grad_accumulation "add": small_gpt's layer holds 12,596,224 parameters
  // (QKV 1024 x 3072 + 3072, out 1024 x 1024 + 1024, MLP 2 x 1024 x 4096 +
  // 4096 + 1024, two LayerNorms 4 x 1024); the add reads two BF16 gradients
  // and writes one, 6 bytes each: 75,577,344 bytes, 47.236 us at 1.6 TB/s.
  Plan add;
  add.global_batch = 1;
  add.grad_accumulation = GradAccumulation::kAdd;
  const StageCosts a = stage_costs(small_gpt(), add, small_cluster(), hw::CollectiveAlgorithm::kAuto, true);
  CHECK(a.layer_ops.grad_add_s == doctest::Approx(47.23584e-6).epsilon(1e-9));
  CHECK(sums(a.layer_ops).backward == doctest::Approx(a.layer_backward.to_seconds()).epsilon(1e-9));

  Plan cp;
  cp.cp = 2;
  cp.global_batch = 1;
  cp.recompute = Recompute::kSelectiveOp;
  const StageCosts c = stage_costs(small_gpt(), cp, small_cluster(), hw::CollectiveAlgorithm::kAuto, true);
  CHECK(find(c.layer_ops, "context_parallel_exchange") != nullptr);
  CHECK(sums(c.layer_ops).forward == doctest::Approx(c.layer_forward.to_seconds()).epsilon(1e-9));
  CHECK(sums(c.layer_ops).backward == doctest::Approx(c.layer_backward.to_seconds()).epsilon(1e-9));
  // Op-level recompute redoes some ops in part: a share strictly between 0 and 1 somewhere.
  bool partial = false;
  for (const LayerOpCost& op : c.layer_ops.ops) partial = partial || (op.redone > 0.0 && op.redone < 1.0);
  CHECK(partial);
}

TEST_CASE("the breakdown is made only when asked for") {
  Plan p;
  p.global_batch = 1;
  CHECK(stage_costs(small_gpt(), p, small_cluster()).layer_ops.empty());
}

}  // namespace workload_layer_ops_test
