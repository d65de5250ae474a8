// A calibration profile: what tools/calibrate measured on one real GPU (and
// the GPUs beside it), as the simulator uses it instead of a preset's
// spec-sheet and published figures. config/calibration_load.hpp reads it from
// JSON and checks every value; docs/calibration.md lists the format.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "hw/collective.hpp"

namespace trainsim::hw {

// One measured quantity over repeated samples.
struct Measured {
  double median = 0.0;
  double min = 0.0;
  double max = 0.0;
};

// GEMM throughput over a grid: the medians in TFLOP/s at every (m, n, k) of
// the axes (each ascending), indexed [i_m][i_n][i_k].
struct GemmGrid {
  std::vector<double> m, n, k;
  std::vector<double> tflops;  // flattened, (i_m * n.size() + i_n) * k.size() + i_k
  std::vector<double> tflops_min, tflops_max;

  double at(std::size_t im, std::size_t in, std::size_t ik) const { return tflops[(im * n.size() + in) * k.size() + ik]; }
  // TFLOP/s at any (m, n, k): trilinear in log2 of each size, linear in
  // TFLOP/s (as the presets' curves are linear in TFLOP/s over log size),
  // each coordinate clamped to its axis. Exact at the grid's points.
  double interpolate(double m, double n, double k) const;
};

// A GEMM of a model in models/, measured at its own shape.
struct ModelGemm {
  std::string model;
  std::string op;
  int tp = 1;
  double m = 0.0, n = 0.0, k = 0.0;
  Measured tflops;
};

struct AttentionPoint {
  int batch = 0, heads = 0, seq = 0, head_dim = 0;
  Measured forward_ms, backward_ms;
  // Forward + backward, FLOPs counted as FlashAttention-2 counts causal work
  // (the presets' attention curves count the same way).
  Measured tflops;
};

struct SizePoint {
  double bytes = 0.0;
  Measured rate;  // TB/s for HBM, GB/s for copies
};

struct CollectivePoint {
  double bytes = 0.0;
  Measured time_us;
  Measured bus_gb_per_s;
};

struct CollectiveCurve {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  std::vector<CollectivePoint> points;  // bytes ascending

  // Seconds for `bytes` among the measured ranks: log-log interpolation of
  // time between measured sizes; below the smallest, its time (the latency
  // floor); above the largest, that time plus the extra bytes at the largest
  // size's rate.
  double seconds(double bytes) const;
};

// What 8192^3 BF16 GEMMs sustain over a long run (gemm.sustained, optional):
// the best window (short-run), the settled throughput back to back (burn), and
// with GEMMs `duty_gemm_share` of the time between HBM copies (duty), TFLOP/s.
struct SustainedGemm {
  double size = 0.0, seconds = 0.0;
  double short_run_tflops = 0.0, burn_tflops = 0.0, duty_gemm_share = 0.0, duty_tflops = 0.0;

};

struct CalibrationHeader {
  int schema_version = 0;
  std::string tool;
  std::string note;  // free text, e.g. that a file is a synthetic fixture
  std::string gpu_name;
  int gpu_count = 0;
  std::string compute_capability;
  int sm_count = 0;
  double sm_clock_mhz = 0.0;
  double memory_clock_mhz = 0.0;
  double memory_gib = 0.0;
  double l2_mib = 0.0;
  std::string driver_version;
  std::string runtime_version;
  std::string cublas_version;
  std::string nccl_version;
  std::string date;
  std::string mode;  // "full" or "quick"
  int warmup = 0;
  int samples = 0;
};

struct CalibrationProfile {
  std::string file;  // where it was read from
  CalibrationHeader header;
  GemmGrid gemm_bf16;
  std::optional<GemmGrid> gemm_fp16, gemm_fp8;
  std::vector<ModelGemm> model_gemms;
  std::optional<SustainedGemm> gemm_sustained;  // absent from profiles that predate it
  std::string attention_kernel;  // "unfused" (cuBLAS batched GEMMs + softmax) or "fused"
  std::vector<AttentionPoint> attention;
  std::vector<SizePoint> hbm_copy, hbm_triad;  // TB/s, read + write bytes counted
  Measured launch_us, graph_launch_us;  // per kernel, back to back; within a CUDA graph
  std::vector<SizePoint> h2d, d2h;      // GB/s, pinned host memory
  std::string p2p_skipped;              // why peer-to-peer was not measured; empty when it was
  Measured p2p_latency_us;
  std::vector<SizePoint> p2p;  // GB/s, one way, GPU 0 to GPU 1
  std::string nccl_skipped;    // why NCCL was not measured; empty when it was
  int nccl_ranks = 0;
  std::vector<CollectiveCurve> nccl;
  // GB/s, GPU 0 to GPU 1 by ncclSend/ncclRecv, as a pipeline sends; empty
  // when the profile predates it (an optional key).
  std::vector<SizePoint> nccl_send_recv;
  // Parameters a second one host thread takes through an AdamW step of FP32
  // state (host_step, an optional key): ZeRO-Offload's step on the CPU.
  std::optional<Measured> host_adam_params_per_s;

  // What back-to-back tensor work sustains of the grid's short-run figures
  // (GpuSpec::sustained_tensor_fraction, a burn's): the burn's settled
  // throughput over the grid's own figure at the burnt shape, at most 1. A
  // run holds more as its tensor work takes less of the time
  // (workload/duty_clock.hpp); the duty run checks that line. Null without
  // gemm.sustained.
  std::optional<double> sustained_fraction() const {
    if (!gemm_sustained) return std::nullopt;
    const double size = gemm_sustained->size;
    return std::min(1.0, gemm_sustained->burn_tflops / gemm_bf16.interpolate(size, size, size));
  }

  // The streaming bandwidth of HBM: the copy at the largest size measured
  // (far beyond L2), in TB/s.
  double hbm_tb_per_s() const { return hbm_copy.back().rate.median; }
  // The NCCL measurement of `kind`, if any.
  const CollectiveCurve* collective(CollectiveKind kind) const;
  // The bus bandwidth an all-reduce reached at its largest size, GB/s; 0 when
  // NCCL was not measured.
  double nccl_bus_gb_per_s() const;
};

// The NCCL send/recv rate (GB/s) a node preset keeps under profile `p`: the
// measured rate at the largest size, else the preset's; at most the link's
// (the measured peer copy when there is one). 0 when neither gives a rate.
double calibrated_sendrecv_gb_per_s(const CalibrationProfile& p, const NodeSpec& preset);

// Interpolates `curve` (sizes ascending, positive) at `size`: linear in the
// value over log2(size), clamped to the ends. The one-dimensional step of the
// grid's interpolation.
double interpolate_log(const std::vector<double>& sizes, const std::vector<double>& values, double size);

const char* collective_name(CollectiveKind kind);

}  // namespace trainsim::hw
