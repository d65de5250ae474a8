// GpuSpec::sustained_tensor_fraction: the short-run BF16 GEMM and attention
// figures at the clock a long run of tensor-core work sustains.
#include <doctest/doctest.h>

#include <memory>

#include "hw/calibration_profile.hpp"
#include "workload/duty_clock.hpp"
#include "workload/op_cost.hpp"
#include "workload/stage_costs.hpp"
#include "small_setups.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_sustained_clock_test {

using namespace trainsim;
using namespace trainsim::workload;

namespace {
// small_cluster's GPU (GEMMs 100 TFLOP/s at 1024, 200 at 4096, capped at
// 150; attention 160) sustaining 0.9 of them, with an FP8 curve of 300.
hw::NodeSpec throttled_node() {
  hw::NodeSpec n = testing::small_cluster().node;
  n.gpu.sustained_tensor_fraction = 0.9;
  n.gpu.peak_fp8_tflops = 624;
  n.gpu.gemm_fp8_tflops = {{1024, 300}, {4096, 300}};
  n.gpu.gemm_fp8_max_tflops = 300;
  return n;
}
}  // namespace

TEST_CASE("a GPU sustaining 0.9 of its short-run figures runs BF16 and FP8 GEMMs and attention at 0.9 of them") {
  const hw::NodeSpec node = throttled_node();
  const hw::GpuSpec& gpu = node.gpu;
  // 1024^3 sits on the curve's first point: 100 short-run, 90 sustained.
  CHECK(short_run_gemm_flops_per_s(gpu, 1024, 1024, 1024) == doctest::Approx(100e12));
  CHECK(gemm_flops_per_s(gpu, 1024, 1024, 1024) == doctest::Approx(90e12));
  // 8192^3 is capped at 150 before the fraction: 135.
  CHECK(gemm_flops_per_s(gpu, 8192, 8192, 8192) == doctest::Approx(135e12));
  // FP8 GEMMs share the power limit: 0.9 x 300 = 270.
  CHECK(gemm_flops_per_s(gpu, 1024, 1024, 1024, true) == doctest::Approx(270e12));
  // Attention, causal, forward: half of its 4 b s^2 h FLOPs at 0.9 x 160 = 144 TFLOP/s.
  // b 1, s 2048, h 1024: 4 x 2048^2 x 1024 / 2 = 8.59e9 FLOPs, 59.65 us.
  Op att;
  att.kind = OpKind::kAttention;
  att.flops_forward = 4.0 * 2048.0 * 2048.0 * 1024.0;
  const double s = op_time(att, Pass::kForward, node, 2048, hw::CollectiveGroup{}).compute_s;
  CHECK(s == doctest::Approx(0.5 * att.flops_forward / 144e12));
}

TEST_CASE("a calibration profile's grid is short-run: its GEMMs hold the sustained share too") {
  // The harness lets the GPU cool between shapes, so its grid is the boost
  // clock's: a flat 120 TFLOP/s at the node's 0.9 is 108.
  hw::GpuSpec gpu = throttled_node().gpu;
  auto p = std::make_shared<hw::CalibrationProfile>();
  p->gemm_bf16.m = p->gemm_bf16.n = p->gemm_bf16.k = {256, 16384};
  p->gemm_bf16.tflops.assign(8, 120.0);
  p->gemm_bf16.tflops_min = p->gemm_bf16.tflops_max = p->gemm_bf16.tflops;
  gpu.calibration = p;
  CHECK(gemm_flops_per_s(gpu, 4096, 4096, 4096) == doctest::Approx(108e12));
}

TEST_CASE("stage costs hold the share the tensor work's part of the compute sets, between the burn and 1") {
  // small_gpt on one GPU: its compute per micro-batch is tensor work
  // (GEMMs, attention) and the rest (element-wise kernels). Costed at the
  // short-run figures and at the burn (0.9), the difference gives the
  // tensor part: tensor / 0.9 + rest - (tensor + rest) = tensor (1/0.9 - 1).
  hw::ClusterSpec burnt = testing::small_cluster();
  burnt.node.gpu.sustained_tensor_fraction = 0.9;
  hw::ClusterSpec cool = burnt;
  cool.node.gpu.sustained_tensor_fraction = 1.0;
  Plan p;
  p.global_batch = 1;
  auto compute_s = [](const StageCosts& c) {
    const StageCost& st = c.stages.front();
    return (st.forward + st.input_grad + st.weight_grad).to_seconds();
  };
  const StageCosts short_run = stage_costs(testing::small_gpt(), p, cool);
  CHECK(short_run.tensor_clock_fraction == 1.0);  // a GPU that does not throttle: nothing to hold
  const double whole = compute_s(short_run);
  // With the held share f, the held compute is tensor / f + rest.
  const StageCosts held = stage_costs(testing::small_gpt(), p, burnt);
  const double f = held.tensor_clock_fraction;
  CHECK(f > 0.9);
  CHECK(f < 1.0);
  // tensor + rest = whole and tensor / f + rest = held compute give tensor,
  // and f must be the duty line's fixed point for that mix.
  const double tensor = (compute_s(held) - whole) / (1.0 / f - 1.0);
  CHECK(tensor > 0.0);
  CHECK(f == doctest::Approx(duty_clock_fraction(tensor, whole - tensor, 0.9)).epsilon(1e-9).scale(0));
  // The duty reported is the tensor share of the held compute time.
  CHECK(held.tensor_duty == doctest::Approx(tensor / f / compute_s(held)).epsilon(1e-9).scale(0));
}

}  // namespace workload_sustained_clock_test
