#include "report/calibration_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "workload/duty_clock.hpp"
#include "workload/op_cost.hpp"

namespace trainsim::report {

namespace {

std::string pct(double part, double whole) { return whole > 0.0 ? fmt::format("{:.0f}%", 100.0 * part / whole) : "-"; }

std::string size_text(double bytes) {
  if (bytes >= 1073741824.0) return fmt::format("{:g} GiB", bytes / 1073741824.0);
  if (bytes >= 1048576.0) return fmt::format("{:g} MiB", bytes / 1048576.0);
  if (bytes >= 1024.0) return fmt::format("{:g} KiB", bytes / 1024.0);
  return fmt::format("{:g} B", bytes);
}

void gemm_section(std::string& out, const hw::CalibrationProfile& p, const hw::GpuSpec& preset) {
  const hw::GemmGrid& g = p.gemm_bf16;
  fmt::format_to(std::back_inserter(out),
                 "GEMM BF16, m = n = k (measured median; the preset's curve; dense peak {:.1f} TFLOP/s)\n"
                 "  {:>7}  {:>9}  {:>9}  {:>16}  {:>14}\n",
                 preset.peak_tflops, "size", "measured", "preset", "measured/preset", "measured/peak");
  // The diagonal of the grid where all three axes share a size.
  for (double s : g.m) {
    const double measured = g.interpolate(s, s, s);
    const double curve = workload::short_run_gemm_flops_per_s(preset, s, s, s) / 1e12;
    fmt::format_to(std::back_inserter(out), "  {:>7g}  {:>9.1f}  {:>9.1f}  {:>16}  {:>14}\n", s, measured, curve,
                   pct(measured, curve), pct(measured, preset.peak_tflops));
  }
  // Every grid point against the preset: where calibration moves GEMM time most.
  double log_sum = 0.0, lowest = 1e300, highest = 0.0;
  std::size_t count = 0;
  for (double m : g.m) {
    for (double n : g.n) {
      for (double k : g.k) {
        const double ratio = g.interpolate(m, n, k) / (workload::short_run_gemm_flops_per_s(preset, m, n, k) / 1e12);
        log_sum += std::log(ratio);
        lowest = std::min(lowest, ratio);
        highest = std::max(highest, ratio);
        ++count;
      }
    }
  }
  fmt::format_to(std::back_inserter(out),
                 "  over all {} grid shapes: measured/preset {:.0f}% (geometric mean), from {:.0f}% to {:.0f}%; "
                 "the simulator times GEMMs on the measured grid at the sustained share below\n",
                 count, 100.0 * std::exp(log_sum / count), 100.0 * lowest, 100.0 * highest);
  // What a long run holds: the profile's own measurement, else the preset's share.
  if (p.gemm_sustained) {
    const hw::SustainedGemm& su = *p.gemm_sustained;
    const double grid = p.gemm_bf16.interpolate(su.size, su.size, su.size);
    const double burn = *p.sustained_fraction();
    // The duty run against the line the simulator draws from the burn
    // (workload/duty_clock.hpp), at the share the duty run measured.
    const double line = workload::held_fraction(su.duty_gemm_share, burn);
    fmt::format_to(std::back_inserter(out),
                   "  sustained, {:g}^3 for {:g} s: best window {:.1f}, back to back {:.1f}, GEMMs {:.0f}% of the time "
                   "{:.1f}; over the grid's {:g}^3 ({:.1f}): the burn holds {:.3f} (the preset: {:.3f}), the duty run "
                   "{:.3f} where the simulator's line gives {:.3f}\n",
                   su.size, su.seconds, su.short_run_tflops, su.burn_tflops, 100.0 * su.duty_gemm_share, su.duty_tflops,
                   su.size, grid, burn, preset.sustained_tensor_fraction, std::min(1.0, su.duty_tflops / grid), line);
  } else {
    fmt::format_to(std::back_inserter(out),
                   "  sustained: not measured (a profile before gemm.sustained); the simulator takes the preset's burn, "
                   "{:.3f} of short-run, for GEMMs and attention\n",
                   preset.sustained_tensor_fraction);
  }
  for (const auto& [name, grid] : {std::pair{"FP16", &p.gemm_fp16}, std::pair{"FP8", &p.gemm_fp8}}) {
    if (!grid->has_value()) continue;
    const hw::GemmGrid& o = **grid;
    const double s = o.m.back();
    const bool used = std::string(name) == "FP8";  // FP8 GEMMs (parallel.precision "fp8") run on it
    fmt::format_to(std::back_inserter(out), "  {} at {:g}^3: {:.1f} TFLOP/s ({} of the BF16 peak; {})\n", name, s,
                   o.interpolate(s, s, s), pct(o.interpolate(s, s, s), preset.peak_tflops),
                   used ? "FP8 GEMMs run on the FP8 grid" : "not used by the simulator");
  }
  if (p.gemm_fp8 && !preset.gemm_fp8_tflops.empty()) {
    // The preset's FP8 figures rest on the weakest sources (Hopper's are derived).
    fmt::format_to(std::back_inserter(out), "GEMM FP8, m = n = k (measured median; the preset's FP8 {}, capped)\n  {:>7}  {:>9}  {:>9}  {:>16}\n",
                   preset.gemm_fp8_grid ? "grid" : "curve", "size", "measured", "preset", "measured/preset");
    for (double s : p.gemm_fp8->m) {
      const double measured = p.gemm_fp8->interpolate(s, s, s);
      const double curve = workload::short_run_fp8_gemm_flops_per_s(preset, s, s, s) / 1e12;
      fmt::format_to(std::back_inserter(out), "  {:>7g}  {:>9.1f}  {:>9.1f}  {:>16}\n", s, measured, curve, pct(measured, curve));
    }
  }
  if (p.model_gemms.empty()) return;
  fmt::format_to(std::back_inserter(out), "GEMM BF16 at the models' shapes (TFLOP/s)\n  {:<14} {:<20} {:>3} {:>7} {:>7} {:>7}  {:>9}  {:>12}  {:>9}\n",
                 "model", "op", "tp", "m", "n", "k", "measured", "grid interp.", "preset");
  for (const hw::ModelGemm& m : p.model_gemms) {
    fmt::format_to(std::back_inserter(out), "  {:<14} {:<20} {:>3} {:>7g} {:>7g} {:>7g}  {:>9.1f}  {:>12.1f}  {:>9.1f}\n",
                   m.model, m.op, m.tp, m.m, m.n, m.k, m.tflops.median, g.interpolate(m.m, m.n, m.k),
                   workload::short_run_gemm_flops_per_s(preset, m.m, m.n, m.k) / 1e12);
  }
}

void attention_section(std::string& out, const hw::CalibrationProfile& p, const hw::GpuSpec& preset) {
  if (p.attention.empty()) return;
  fmt::format_to(std::back_inserter(out),
                 "Attention, {} kernel, causal, forward + backward (TFLOP/s as FlashAttention-2 counts causal work)\n"
                 "  {:>6}  {:>8}  {:>9}  {:>12}  {:>15}\n",
                 p.attention_kernel, "seq", "head dim", "measured", "preset (FA2)", "measured/preset");
  for (const hw::AttentionPoint& a : p.attention) {
    const double curve = hw::interpolate_tflops(preset.attention_tflops, a.seq);
    fmt::format_to(std::back_inserter(out), "  {:>6}  {:>8}  {:>9.1f}  {:>12.1f}  {:>15}\n", a.seq, a.head_dim,
                   a.tflops.median, curve, pct(a.tflops.median, curve));
  }
  if (p.attention_kernel == "unfused") {
    out += "  the simulator keeps the preset's fused (FlashAttention-2) curve: an unfused kernel is not what it models\n";
  }
}

void memory_section(std::string& out, const hw::CalibrationProfile& p, const hw::NodeSpec& node) {
  const hw::GpuSpec& g = node.gpu;
  fmt::format_to(std::back_inserter(out), "HBM (TB/s, read + write bytes counted)\n");
  for (const auto& [name, points] : {std::pair{"copy", &p.hbm_copy}, std::pair{"triad", &p.hbm_triad}}) {
    const hw::SizePoint& big = points->back();
    const hw::SizePoint& small = points->front();
    fmt::format_to(std::back_inserter(out),
                   "  {:<6} {:>8}: {:.3f} ({} of spec {:.3f}, {} of the preset's achievable {:.3f}); {:>8}: {:.3f}\n",
                   name, size_text(big.bytes), big.rate.median, pct(big.rate.median, g.hbm_tb_per_s), g.hbm_tb_per_s,
                   pct(big.rate.median, g.hbm_achievable_tb_per_s), g.hbm_achievable_tb_per_s, size_text(small.bytes),
                   small.rate.median);
  }
  fmt::format_to(std::back_inserter(out), "  the simulator's memory-bound ops run at {:.3f} TB/s (copy at {}) instead of {:.3f}\n",
                 p.hbm_tb_per_s(), size_text(p.hbm_copy.back().bytes), g.hbm_achievable_tb_per_s);
  fmt::format_to(std::back_inserter(out),
                 "Kernel launch: {:.2f} us back to back (min {:.2f}, max {:.2f}), {:.2f} us in a CUDA graph; preset {:.2f} us; "
                 "the simulator adds {:.2f} us to every kernel\n",
                 p.launch_us.median, p.launch_us.min, p.launch_us.max, p.graph_launch_us.median, g.kernel_overhead_us,
                 p.launch_us.median);
  fmt::format_to(std::back_inserter(out), "Host copies (pinned): host to device {:.1f} GB/s, device to host {:.1f} GB/s at {}\n",
                 p.h2d.back().rate.median, p.d2h.back().rate.median, size_text(p.h2d.back().bytes));
}

void link_section(std::string& out, const hw::CalibrationProfile& p, const CalibrationBaseline& b) {
  const hw::NodeSpec& node = b.node;
  if (p.p2p_skipped.empty()) {
    const hw::SizePoint& big = p.p2p.back();
    fmt::format_to(std::back_inserter(out),
                   "Peer to peer, GPU 0 to GPU 1: {:.1f} GB/s at {} ({} of {}'s NVLink {:.0f} GB/s per direction), "
                   "latency {:.2f} us ({} says {:.2f}); the simulator uses the measured figures\n",
                   big.rate.median, size_text(big.bytes), pct(big.rate.median, node.nvlink_gb_per_s), b.node_preset,
                   node.nvlink_gb_per_s, p.p2p_latency_us.median, b.node_preset, node.nvlink_latency_us);
  } else {
    fmt::format_to(std::back_inserter(out), "Peer to peer: not measured ({})\n", p.p2p_skipped);
  }
  if (!p.nccl_skipped.empty()) {
    fmt::format_to(std::back_inserter(out), "NCCL: not measured ({}); the simulator keeps NCCL's model\n", p.nccl_skipped);
    return;
  }
  fmt::format_to(std::back_inserter(out), "NCCL over {} GPUs (bus bandwidth GB/s; {}'s NCCL bus bandwidth in a node {:.0f})\n",
                 p.nccl_ranks, b.node_preset, node.nvlink_bus_gb_per_s);
  fmt::format_to(std::back_inserter(out), "  {:<15} {:>10} {:>10} {:>12} {:>12}  {:>10}\n", "collective", "smallest", "time us",
                 "largest", "bus GB/s", "of preset");
  for (const hw::CollectiveCurve& c : p.nccl) {
    const hw::CollectivePoint& lo = c.points.front();
    const hw::CollectivePoint& hi = c.points.back();
    fmt::format_to(std::back_inserter(out), "  {:<15} {:>10} {:>10.1f} {:>12} {:>12.1f}  {:>10}\n", hw::collective_name(c.kind),
                   size_text(lo.bytes), lo.time_us.median, size_text(hi.bytes), hi.bus_gb_per_s.median,
                   pct(hi.bus_gb_per_s.median, node.nvlink_bus_gb_per_s));
  }
  if (p.nccl_ranks == node.gpus_per_node) {
    fmt::format_to(std::back_inserter(out),
                   "  the simulator times collectives over {} GPUs of one node from these curves, and rings inside a node at "
                   "{:.1f} GB/s\n",
                   p.nccl_ranks, p.nccl_bus_gb_per_s());
  } else {
    fmt::format_to(std::back_inserter(out),
                   "  the simulator times collectives over {} GPUs of one node from these curves; {} has {} GPUs a node, so "
                   "its rings keep the preset's bus bandwidth\n",
                   p.nccl_ranks, b.node_preset, node.gpus_per_node);
  }
  const std::string preset_rate = node.nvlink_sendrecv_gb_per_s > 0.0
                                      ? fmt::format("{:.1f} GB/s", node.nvlink_sendrecv_gb_per_s)
                                      : "none (the NVLink line rate)";
  const double used = hw::calibrated_sendrecv_gb_per_s(p, node);  // as config::calibrated
  if (p.nccl_send_recv.empty()) {
    fmt::format_to(std::back_inserter(out),
                   "  send/recv: not in this profile; {}'s rate is {}; the simulator moves sends inside a node at most "
                   "at {:.1f} GB/s\n",
                   b.node_preset, preset_rate, used > 0.0 ? used : node.nvlink_gb_per_s);
    return;
  }
  const hw::SizePoint& sr = p.nccl_send_recv.back();
  fmt::format_to(std::back_inserter(out),
                 "  send/recv, GPU 0 to GPU 1: {:.1f} GB/s at {} ({}'s send/recv rate: {}); the simulator moves sends "
                 "inside a node at most at {:.1f} GB/s\n",
                 sr.rate.median, size_text(sr.bytes), b.node_preset, preset_rate, used);
}

}  // namespace

std::string calibration_report(const hw::CalibrationProfile& p, const CalibrationBaseline& b) {
  const hw::CalibrationHeader& h = p.header;
  std::string out = fmt::format("trainsim calibration-report: {}\n", p.file);
  fmt::format_to(std::back_inserter(out),
                 "  measured     {} x {}, compute capability {}, {} SMs at up to {:g} MHz, {:.1f} GiB\n"
                 "  software     driver {}, CUDA runtime {}, cuBLAS {}, NCCL {}\n"
                 "  run          {} ({} mode, {} samples after {} warm-up calls, median kept)\n",
                 h.gpu_name, h.gpu_count, h.compute_capability, h.sm_count, h.sm_clock_mhz, h.memory_gib, h.driver_version,
                 h.runtime_version, h.cublas_version, h.nccl_version, h.date, h.mode, h.samples, h.warmup);
  if (!h.note.empty()) fmt::format_to(std::back_inserter(out), "  note         {}\n", h.note);
  fmt::format_to(std::back_inserter(out), "  compared to  GPU preset {} ({}), node preset {}\n", b.gpu_preset, b.how_matched,
                 b.node_preset);
  gemm_section(out, p, b.node.gpu);
  attention_section(out, p, b.node.gpu);
  memory_section(out, p, b.node);
  link_section(out, p, b);
  return out;
}

}  // namespace trainsim::report
