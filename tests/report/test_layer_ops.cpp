// The op-by-op table of one layer (`trainsim run --ops`): what bounds each
// op, the rows it prints and leaves out, and the totals line.
#include <doctest/doctest.h>

#include <string>

#include "report/layer_ops.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace report_layer_ops_test {

using namespace trainsim;
using workload::LayerOpCost;
using workload::OpKind;

namespace {
// A GEMM of 2 TFLOP in 10 ms (200 TFLOP/s), its bytes 1 ms at HBM speed, no
// launches, in the forward; twice that in the input gradient, once more in
// the weight gradient.
LayerOpCost gemm() {
  LayerOpCost op;
  op.name = "fc";
  op.kind = OpKind::kGemm;
  op.forward.compute_s = op.forward.math_s = 0.010;
  op.forward.memory_s = 0.001;
  op.forward.work_flops = 2e12;
  op.input_grad = op.forward;
  op.weight_grad = op.forward;
  op.forward.bytes = 1.6e9;
  return op;
}
// An element-wise op: 3.2 GB at 1.6 TB/s (2 ms) and a 1 ms launch.
LayerOpCost norm() {
  LayerOpCost op;
  op.name = "norm";
  op.kind = OpKind::kElementwise;
  op.forward.memory_s = 0.002;
  op.forward.launch_s = 0.001;
  op.forward.compute_s = 0.003;
  op.forward.bytes = 3.2e9;
  return op;
}
}  // namespace

TEST_CASE("an op's bound is the longest part of its time over the passes") {
  CHECK(report::bound_of(gemm()) == "tensor");
  CHECK(report::bound_of(norm()) == "memory");
  LayerOpCost tp;
  tp.kind = OpKind::kTpCollective;
  tp.forward.tp_comm_s = 0.004;
  CHECK(report::bound_of(tp) == "tp");
  // Launches longer than the work itself.
  LayerOpCost tiny = norm();
  tiny.forward.launch_s = 0.005;
  CHECK(report::bound_of(tiny) == "launch");
  // Recompute counts the forward again: 2 x 3 ms of memory beat 5 ms of the exchange.
  LayerOpCost dispatch = norm();
  dispatch.forward.launch_s = 0.0;
  dispatch.forward.memory_s = 0.003;
  dispatch.input_grad.ep_comm_s = 0.005;
  CHECK(report::bound_of(dispatch) == "ep");
  dispatch.redo = dispatch.forward;
  dispatch.redone = 1.0;
  CHECK(report::bound_of(dispatch) == "memory");
  CHECK(report::bound_of(LayerOpCost{}) == "none");
}

TEST_CASE("the table: a row an op that takes time, its rate, and the layer's totals") {
  workload::StageCosts costs;
  LayerOpCost idle;  // takes no time: no row
  idle.name = "idle_collective";
  idle.kind = OpKind::kTpCollective;
  costs.layer_ops.ops = {norm(), gemm(), idle};
  costs.layer_ops.ops[0].redo = costs.layer_ops.ops[0].forward;
  costs.layer_ops.ops[0].redone = 1.0;
  costs.layer_ops.grad_add_s = 0.0005;
  const std::string text = report::layer_ops_text(costs);
  // The norm: 3 ms forward, redone (R) 3 ms; 3.2 GB over its 3 ms is 1.07 TB/s.
  CHECK(text.find("    norm                        3.000         -         -     3.000  memory  1.07 TB/s\n") !=
        std::string::npos);
  // The GEMM: 10 ms each pass, 2 TFLOP over 10 ms.
  CHECK(text.find("    fc                         10.000    10.000    10.000         -  tensor  200 TFLOP/s\n") !=
        std::string::npos);
  CHECK(text.find("idle_collective") == std::string::npos);
  CHECK(text.find("    weight gradients added          -         -     0.500         -  memory\n") !=
        std::string::npos);
  // Forward 3 + 10 = 13 ms; backward 10 (I) + 10.5 (W and the add) + 3 (R) = 23.5 ms.
  CHECK(text.find("    layer                      13.000    10.000    10.500     3.000  forward 13.00 ms, backward "
                  "23.50 ms\n") != std::string::npos);
  CHECK(text.find("dense layer") == std::string::npos);

  const nlohmann::json j = report::layer_ops_json(costs);
  CHECK(j["layer"]["forward_s"].get<double>() == doctest::Approx(0.013));
  CHECK(j["layer"]["backward_s"].get<double>() == doctest::Approx(0.0235));
  CHECK(j["layer"]["ops"].size() == 3);  // JSON keeps every op
  CHECK(j["layer"]["ops"][1]["bound"] == "tensor");
  CHECK(j["layer"]["ops"][1]["forward"]["flops"].get<double>() == 2e12);
  CHECK_FALSE(j.contains("dense_layer"));

  costs.dense_layer_ops.ops = {gemm()};
  const std::string both = report::layer_ops_text(costs);
  CHECK(both.find("  MoE layer, op by op") != std::string::npos);
  CHECK(both.find("  dense layer, op by op") != std::string::npos);
  CHECK(report::layer_ops_json(costs).contains("dense_layer"));
}

TEST_CASE("an op that computes nothing in the forward takes its rate from the pass that does") {
  // A sum of separate projections' gradients: 1.6 GB in 1 ms of the input gradient alone.
  workload::StageCosts costs;
  LayerOpCost sum;
  sum.name = "grad_sum";
  sum.input_grad.memory_s = sum.input_grad.compute_s = 0.001;
  sum.input_grad.bytes = 1.6e9;
  costs.layer_ops.ops = {sum};
  CHECK(report::layer_ops_text(costs).find("    grad_sum                        -     1.000         -         -  memory  "
                                           "1.60 TB/s (I)\n") != std::string::npos);
}

TEST_CASE("costs without a layer (a layer-table model) print nothing") {
  CHECK(report::layer_ops_text(workload::StageCosts{}).empty());
  CHECK(report::layer_ops_json(workload::StageCosts{}).empty());
}

}  // namespace report_layer_ops_test
