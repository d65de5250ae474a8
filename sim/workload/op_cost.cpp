#include "workload/op_cost.hpp"

#include <algorithm>
#include <cmath>

#include "hw/calibration_profile.hpp"

namespace trainsim::workload {

double short_run_gemm_flops_per_s(const hw::GpuSpec& gpu, double m, double n, double k) {
  // Without a grid, the curve's square GEMMs place a rectangular one at the
  // cube root of its volume, which preserves the FLOP count.
  double tflops = gpu.gemm_grid ? gpu.gemm_grid->interpolate(m, n, k) : hw::interpolate_tflops(gpu.gemm_tflops, std::cbrt(m * n * k));
  if (gpu.gemm_max_tflops > 0.0) tflops = std::min(tflops, gpu.gemm_max_tflops);
  return tflops * 1e12;
}

double short_run_fp8_gemm_flops_per_s(const hw::GpuSpec& gpu, double m, double n, double k) {
  // The preset's FP8 grid at the GEMM's own shape; without one, its curve
  // places the GEMM at the cube root of its volume.
  const double shaped = gpu.gemm_fp8_grid ? gpu.gemm_fp8_grid->interpolate(m, n, k)
                                          : hw::interpolate_tflops(gpu.gemm_fp8_tflops, std::cbrt(m * n * k));
  return std::min(shaped, gpu.gemm_fp8_max_tflops) * 1e12;
}

double gemm_flops_per_s(const hw::GpuSpec& gpu, double m, double n, double k, bool fp8) {
  if (fp8) {
    // A profile's FP8 grid (GPUs with FP8 tensor cores) at the same sustained
    // share as BF16: on an H200, 30 s burns of 8192^3 on normal data held
    // 0.842 of the best window in FP8 and 0.848 in BF16
    // (configs/calibration/h200-sxm-141gb-framework-probe.json).
    if (gpu.calibration && gpu.calibration->gemm_fp8) {
      return gpu.calibration->gemm_fp8->interpolate(m, n, k) * 1e12 * gpu.sustained_tensor_fraction;
    }
    return short_run_fp8_gemm_flops_per_s(gpu, m, n, k) * gpu.sustained_tensor_fraction;
  }
  // A calibration profile (cluster.calibration) measured this shape's
  // neighbours at the boost clock; a long run holds the sustained share.
  if (gpu.calibration) return gpu.calibration->gemm_bf16.interpolate(m, n, k) * 1e12 * gpu.sustained_tensor_fraction;
  // The preset's short-run figures at the clock a long run sustains.
  return short_run_gemm_flops_per_s(gpu, m, n, k) * gpu.sustained_tensor_fraction;
}

double gemm_pass_bytes(double m, double n, double k, Pass pass, bool fp8, int groups) {
  const double operand = fp8 ? 1.0 : kActivationBytes, result = kActivationBytes;
  const double weights = k * n * groups;
  switch (pass) {
    case Pass::kForward: return operand * (m * k + weights) + result * m * n;    // X, W -> Y
    case Pass::kInputGrad: return operand * (m * n + weights) + result * m * k;  // dY, W -> dX
    case Pass::kWeightGrad: return operand * (m * k + m * n) + result * weights; // X, dY -> dW
  }
  return 0.0;
}

namespace {

// Separate projections (Op::column_parts): GEMMs of their own over one
// input, so each reads that whole input (forward, weight gradient) or writes
// a whole input gradient (the sum that follows adds them), and each has its
// own roofline: its share of the FLOPs at its own width's rate, or its own
// operands' bytes. A narrow projection (a grouped-query K or V split tp ways:
// 128 columns for Llama 3 8B at tp 8) is bound by those bytes. Each part's
// time counts in the term that bounds it.
OpTiming separate_projections_time(const Op& op, Pass pass, const hw::GpuSpec& gpu, double flops) {
  OpTiming t;
  if (!(flops > 0.0)) return t;
  int kernels = 0;
  for (double n : op.column_parts) {
    if (n <= 0.0) continue;
    const double math = flops * (n / op.n) / gemm_flops_per_s(gpu, op.m / op.gemm_groups, n, op.k, op.fp8);
    const double bytes = gemm_pass_bytes(op.m, n, op.k, pass, op.fp8);
    const double memory = bytes / (gpu.hbm_achievable_tb_per_s * 1e12);
    (math >= memory ? t.math_s : t.memory_s) += std::max(math, memory);
    t.bytes += bytes;
    ++kernels;
  }
  t.launch_s = kernels * gpu.kernel_overhead_us * 1e-6;
  t.compute_s = t.math_s + t.memory_s + t.launch_s;
  t.work_flops = flops;
  return t;
}

}  // namespace

const std::vector<hw::ThroughputPoint>& attention_curve(const hw::GpuSpec& gpu, Attention kernel) {
  switch (kernel) {
    case Attention::kFlashV1: return gpu.attention_v1_tflops;
    case Attention::kCudnn: return gpu.attention_cudnn_tflops;
    case Attention::kFlash:
    case Attention::kUnfused: break;
  }
  return gpu.attention_tflops;
}

OpTiming op_time(const Op& op, Pass pass, const hw::NodeSpec& node, double seq,
                 const hw::CollectiveGroup& tp_group, hw::CollectiveAlgorithm algorithm) {
  const hw::GpuSpec& gpu = node.gpu;
  OpTiming t;
  if (op.kind == OpKind::kTpCollective) {
    const int count = pass == Pass::kForward     ? op.collectives_forward
                      : pass == Pass::kInputGrad ? op.collectives_input_grad
                                                 : 0;
    if (count > 0) {
      const double bytes = op.collective_bytes;
      const double once =
          op.sequence_parallel
              ? hw::collective_time(hw::CollectiveKind::kReduceScatter, bytes, tp_group, node, algorithm).to_seconds() +
                    hw::collective_time(hw::CollectiveKind::kAllGather, op.gather_bytes(pass == Pass::kForward),
                                        tp_group, node, algorithm)
                        .to_seconds()
              : hw::collective_time(hw::CollectiveKind::kAllReduce, bytes, tp_group, node, algorithm).to_seconds();
      t.tp_comm_s = count * once;
      if (op.sp_copies) {
        // Batch-first sequence parallelism: the gathered buffer copied into
        // [b, s, h] order, and the scattered one out of it first (read and
        // write each, one kernel each); backward, a sum of separate
        // projections' gradients writes the scattered order itself.
        const bool scatter_copy = pass == Pass::kForward || !op.scatter_after_sum;
        const double copied = 2.0 * op.gather_bytes(pass == Pass::kForward) + (scatter_copy ? 2.0 * bytes : 0.0);
        const double memory = copied / (gpu.hbm_achievable_tb_per_s * 1e12);
        const double launches = (scatter_copy ? 2.0 : 1.0) * gpu.kernel_overhead_us * 1e-6;
        t.compute_s = count * (memory + launches);
        t.memory_s = count * memory;
        t.launch_s = count * launches;
        t.bytes = count * copied;
      }
    }
    return t;
  }
  const double flops = pass == Pass::kForward     ? op.flops_forward
                       : pass == Pass::kInputGrad ? op.flops_input_grad
                                                  : op.flops_weight_grad;
  const double bytes = pass == Pass::kForward     ? op.bytes_forward
                       : pass == Pass::kInputGrad ? op.bytes_input_grad
                                                  : op.bytes_weight_grad;
  if (flops <= 0.0 && bytes <= 0.0) return t;
  if (op.kind == OpKind::kGemm && op.column_parts[0] > 0.0) return separate_projections_time(op, pass, gpu, flops);
  double rate = 0.0;
  double work = flops;
  const int kernels = op.kernels;
  if (op.kind == OpKind::kGemm) {
    // A grouped GEMM's members each run at their own shape's rate.
    rate = gemm_flops_per_s(gpu, op.m / op.gemm_groups, op.n, op.k, op.fp8);
  } else if (op.kind == OpKind::kAttention) {
    // The attention curves are causal forward+backward figures of the op's
    // kernel (FlashAttention-2's by default), which count FLOPs as
    // FlashAttention's benchmark does: causal masking halves the score work,
    // and backward is 2.5x forward (arXiv 2307.08691 §4.1). The time is that
    // work at that rate; the model FLOPs (op.flops_*) stay Megatron's
    // full-matrix count, used for MFU.
    const double causal_forward = 0.5 * op.flops_forward;
    work = pass == Pass::kForward ? causal_forward : pass == Pass::kInputGrad ? 2.5 * causal_forward : 0.0;
    rate = hw::interpolate_tflops(attention_curve(gpu, op.attention_kernel), seq) * gpu.sustained_tensor_fraction * 1e12;
  }
  const double compute = work > 0.0 && rate > 0.0 ? work / rate : 0.0;
  const double memory = bytes / (gpu.hbm_achievable_tb_per_s * 1e12);
  t.compute_s = std::max(compute, memory) + kernels * gpu.kernel_overhead_us * 1e-6;
  t.math_s = compute;
  t.memory_s = memory;
  t.launch_s = kernels * gpu.kernel_overhead_us * 1e-6;
  t.work_flops = compute > 0.0 ? work : 0.0;
  t.bytes = bytes;
  return t;
}

}  // namespace trainsim::workload
