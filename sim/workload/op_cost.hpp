// Durations of operations on one GPU: a roofline with measured efficiencies.
//   time = max(FLOPs / achieved throughput, bytes / achieved HBM bandwidth)
//          + per-kernel overhead
// where the achieved GEMM throughput depends on the GEMM's size and the
// attention throughput on the sequence length (curves in the GPU preset).
#pragma once

#include "hw/cluster_spec.hpp"
#include "hw/collective.hpp"
#include "workload/transformer.hpp"

namespace trainsim::workload {

enum class Pass { kForward, kInputGrad, kWeightGrad };

struct OpTiming {
  double compute_s = 0.0;     // kernels on the compute stream
  double tp_comm_s = 0.0;     // tensor-parallel collectives (blocking, same stream)
  double cp_comm_s = 0.0;     // context-parallel exchange not hidden behind attention (same stream)
  double ep_comm_s = 0.0;     // a MoE block's dispatch and combine over the expert-parallel group (same stream)
  // What compute_s is made of, for a breakdown (workload::LayerOps): the
  // roofline's two terms, of which the longer counts, and the kernels'
  // launches; the FLOPs the math term times (attention's kernel count:
  // causal masking halves its score work) and the HBM bytes the memory term
  // moves.
  double math_s = 0.0, memory_s = 0.0, launch_s = 0.0;
  double work_flops = 0.0, bytes = 0.0;

  // The op's time in the pass: its compute and the communication its stream waits for.
  double seconds() const { return compute_s + tp_comm_s + cp_comm_s + ep_comm_s; }
};

// Achieved GEMM throughput (FLOP/s) for an m x k x n GEMM, in BF16 or (`fp8`)
// with FP8 operands; FP8 needs the GPU's FP8 figures (the config checks).
double gemm_flops_per_s(const hw::GpuSpec& gpu, double m, double n, double k, bool fp8 = false);
// The preset's BF16 curve (or grid) and ceiling as measured, in short runs,
// before GpuSpec::sustained_tensor_fraction: what a calibration measures.
double short_run_gemm_flops_per_s(const hw::GpuSpec& gpu, double m, double n, double k);
// The same for FP8 GEMMs: the preset's FP8 grid (or curve), capped by its FP8 ceiling.
double short_run_fp8_gemm_flops_per_s(const hw::GpuSpec& gpu, double m, double n, double k);

// HBM bytes an m x k x n GEMM moves in a pass, reading its two operands
// (one byte a value in FP8, two in BF16) and writing its BF16 result; a
// grouped GEMM (`groups` experts, m rows in all) has a k x n weight a group.
double gemm_pass_bytes(double m, double n, double k, Pass pass, bool fp8, int groups = 1);

// The GPU's attention throughput by sequence length for a kernel: its
// FlashAttention-2, FlashAttention-1 or cuDNN figures (the config checks the
// GPU has the ones a plan asks for).
const std::vector<hw::ThroughputPoint>& attention_curve(const hw::GpuSpec& gpu, Attention kernel);

// `seq` is the sequence length (for attention); `tp_group` the tensor group,
// whose collectives run by `algorithm`.
OpTiming op_time(const Op& op, Pass pass, const hw::NodeSpec& node, double seq,
                 const hw::CollectiveGroup& tp_group,
                 hw::CollectiveAlgorithm algorithm = hw::CollectiveAlgorithm::kAuto);

}  // namespace trainsim::workload
