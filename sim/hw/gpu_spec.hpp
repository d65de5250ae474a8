// What the simulator knows about one GPU model. Every number comes from a
// preset in configs/hardware/gpus (with its source beside it) or from a config.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace trainsim::hw {

struct CalibrationProfile;  // hw/calibration_profile.hpp
struct GemmGrid;            // hw/calibration_profile.hpp

// One measured point of a throughput curve: at this size, this many TFLOP/s.
struct ThroughputPoint {
  double size = 0.0;
  double tflops = 0.0;
};

struct GpuSpec {
  std::string name;
  double peak_tflops = 0.0;   // dense BF16 tensor-core peak
  double memory_gb = 0.0;     // HBM capacity, 10^9 bytes as the spec sheet states it
  double hbm_tb_per_s = 0.0;  // spec-sheet HBM bandwidth
  double hbm_achievable_tb_per_s = 0.0;  // measured for streaming kernels
  // BF16 GEMM throughput by cube-root size (m*n*k)^(1/3), measured; ascending.
  std::vector<ThroughputPoint> gemm_tflops;
  double gemm_max_tflops = 0.0;  // best measured GEMM throughput; caps the curve
  // BF16 GEMM throughput by (m, n, k) from a published shape sweep, where the
  // preset has one (gemm_grid): it times GEMMs in the curve's place, so that
  // a skinny GEMM runs at its own shape's rate, not at its volume's.
  std::shared_ptr<const GemmGrid> gemm_grid;
  // Fused attention (forward + backward) throughput by sequence length; ascending.
  std::vector<ThroughputPoint> attention_tflops;
  // The same for FlashAttention-1-class kernels (parallel.attention
  // "flash-v1"), measured by the same benchmark; empty where the preset has
  // no such figures.
  std::vector<ThroughputPoint> attention_v1_tflops;
  // And for cuDNN's fused attention (parallel.attention "cudnn").
  std::vector<ThroughputPoint> attention_cudnn_tflops;
  double kernel_overhead_us = 0.0;  // added to every kernel
  // Spec-sheet figures beside the BF16 peak; 0 where the GPU has no such
  // tensor cores (FP8 before Hopper, FP4 before Blackwell) or the preset omits them.
  double peak_fp8_tflops = 0.0;  // dense
  // FP8 GEMM throughput (E4M3 operands, BF16 output) by cube-root size, and
  // its ceiling, as gemm_tflops and gemm_max_tflops are for BF16; empty and 0
  // on a GPU without FP8 tensor cores.
  std::vector<ThroughputPoint> gemm_fp8_tflops;
  double gemm_fp8_max_tflops = 0.0;
  // FP8 GEMM throughput by (m, n, k), where the preset has one
  // (gemm_fp8_grid): it times FP8 GEMMs in the curve's place, capped by
  // gemm_fp8_max_tflops, as gemm_grid does for BF16.
  std::shared_ptr<const GemmGrid> gemm_fp8_grid;
  double peak_fp4_tflops = 0.0;  // dense
  double power_w = 0.0;          // the board's power limit the preset's figures assume
  // What back-to-back BF16 tensor-core work (a burn) sustains of the
  // short-run figures above (gemm_tflops, gemm_grid, gemm_max_tflops, the
  // FP8 GEMM figures and the attention curves): the curves come from
  // benchmarks of a few milliseconds at the boost clock, while training keeps
  // the tensor cores busy for minutes at the clock the power limit allows.
  // 1 where no throttling is measured. A run's costs hold more of the
  // figures the less of the compute its tensor work takes
  // (workload/duty_clock.hpp); op costs read this field as the share held.
  // FP8 GEMMs share the power limit and run at the same share of their own.
  double sustained_tensor_fraction = 1.0;
  // Measured on this GPU by tools/calibrate (cluster.calibration); null for
  // the preset's figures alone. When set, GEMM throughput comes from its grid.
  std::shared_ptr<const CalibrationProfile> calibration;

  double memory_bytes() const { return memory_gb * 1e9; }
};

// Log-linear interpolation in size, clamped to the first and last points.
double interpolate_tflops(const std::vector<ThroughputPoint>& curve, double size);

}  // namespace trainsim::hw
