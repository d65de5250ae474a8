// Operation costs with a calibration profile: GEMMs run at the measured
// grid's throughput instead of the preset's curve.
#include <doctest/doctest.h>

#include <memory>

#include "hw/calibration_profile.hpp"
#include "workload/op_cost.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_calibrated_costs_test {

using namespace trainsim;

namespace {

hw::GpuSpec preset_gpu() {
  hw::GpuSpec g;
  g.peak_tflops = 312;
  g.gemm_tflops = {{1024, 200}, {8192, 200}};
  g.gemm_max_tflops = 200;
  return g;
}

// Every measured shape at `tflops`, over axes 256 and 16384.
std::shared_ptr<const hw::CalibrationProfile> flat_profile(double tflops) {
  auto p = std::make_shared<hw::CalibrationProfile>();
  p->gemm_bf16.m = p->gemm_bf16.n = p->gemm_bf16.k = {256, 16384};
  p->gemm_bf16.tflops.assign(8, tflops);
  p->gemm_bf16.tflops_min = p->gemm_bf16.tflops_max = p->gemm_bf16.tflops;
  return p;
}

}  // namespace

TEST_CASE("a profile at half the preset's throughput doubles a GEMM's compute time") {
  hw::GpuSpec gpu = preset_gpu();
  // 4096^3: 2 x 4096^3 = 1.374e11 FLOPs at the preset's 200 TFLOP/s, 0.687 ms;
  // at a measured 100, 1.374 ms.
  const double flops = 2.0 * 4096.0 * 4096.0 * 4096.0;
  const double preset_s = flops / workload::gemm_flops_per_s(gpu, 4096, 4096, 4096);
  CHECK(preset_s == doctest::Approx(0.687195e-3).epsilon(1e-5).scale(0));
  gpu.calibration = flat_profile(100);
  const double calibrated_s = flops / workload::gemm_flops_per_s(gpu, 4096, 4096, 4096);
  CHECK(calibrated_s == doctest::Approx(2.0 * preset_s).epsilon(1e-12).scale(0));
}

TEST_CASE("a calibrated GEMM follows the measured shape, not the cube root of its volume") {
  // The preset places 256 x 16384 x 16384 and 4096^3 alike (cube root 4096);
  // a grid measured 50 TFLOP/s at m = 256 and 400 at m = 16384 (any n, k) sets
  // them apart: m = 256 -> 50; m = 4096, 4 of 6 doublings -> 50 + 4/6 x 350 = 283.33.
  hw::GpuSpec gpu = preset_gpu();
  CHECK(workload::gemm_flops_per_s(gpu, 256, 16384, 16384) == workload::gemm_flops_per_s(gpu, 4096, 4096, 4096));
  auto p = std::make_shared<hw::CalibrationProfile>(*flat_profile(50));
  for (int i = 4; i < 8; ++i) p->gemm_bf16.tflops[i] = 400;  // i_m = 1
  p->gemm_bf16.tflops_max = p->gemm_bf16.tflops;
  gpu.calibration = p;
  CHECK(workload::gemm_flops_per_s(gpu, 256, 16384, 16384) == doctest::Approx(50e12).epsilon(1e-12).scale(0));
  CHECK(workload::gemm_flops_per_s(gpu, 4096, 4096, 4096) == doctest::Approx(283.3333333e12).epsilon(1e-9).scale(0));
}

TEST_CASE("a profile's FP8 grid times FP8 GEMMs; without one they keep the preset's FP8 curve") {
  hw::GpuSpec gpu = preset_gpu();
  gpu.gemm_fp8_tflops = {{1024, 400}, {8192, 400}};
  gpu.gemm_fp8_max_tflops = 400;
  gpu.sustained_tensor_fraction = 0.9;
  auto p = std::make_shared<hw::CalibrationProfile>(*flat_profile(100));
  gpu.calibration = p;
  // A BF16-only profile: the preset's FP8 400 TFLOP/s at 0.9, 360.
  CHECK(workload::gemm_flops_per_s(gpu, 4096, 4096, 4096, true) == doctest::Approx(360e12).epsilon(1e-12).scale(0));
  // A measured FP8 grid of a flat 700 at 0.9: 630.
  p->gemm_fp8 = flat_profile(700)->gemm_bf16;
  CHECK(workload::gemm_flops_per_s(gpu, 4096, 4096, 4096, true) == doctest::Approx(630e12).epsilon(1e-12).scale(0));
  // BF16 GEMMs still read the BF16 grid: 100 at 0.9.
  CHECK(workload::gemm_flops_per_s(gpu, 4096, 4096, 4096) == doctest::Approx(90e12).epsilon(1e-12).scale(0));
}

}  // namespace workload_calibrated_costs_test
