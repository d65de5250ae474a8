#include "workload/layer_table.hpp"

#include <algorithm>

#include "workload/op_cost.hpp"
#include "workload/transformer.hpp"

namespace trainsim::workload {

double LayerTable::params() const {
  double p = 0.0;
  for (const Layer& l : layers) p += l.params;
  return p;
}

double LayerTable::flops_per_sample() const {
  double f = 0.0;
  for (const Layer& l : layers) f += l.flops_per_sample;
  return f;
}

core::Time layer_forward_time(const LayerTable& table, std::size_t layer, int samples, const hw::GpuSpec& gpu) {
  if (samples <= 0) return core::Time::zero();
  const Layer& l = table.layers.at(layer);
  const double b = samples;
  double compute = 0.0, gemm_flops = 0.0;
  for (const LayerGemm& g : l.gemms) {
    const double flops = g.flops_per_sample() * b;
    compute += flops / gemm_flops_per_s(gpu, g.m_per_sample * b, g.n, g.k);
    gemm_flops += flops;
  }
  const double rest = std::max(0.0, l.flops_per_sample * b - gemm_flops);
  compute += rest / (gpu.peak_tflops * 1e12);
  const double bytes = (table.input_bytes_of(layer) + l.output_bytes_per_sample) * b + l.params * kActivationBytes;
  const double memory = bytes / (gpu.hbm_achievable_tb_per_s * 1e12);
  const double kernels = static_cast<double>(std::max<std::size_t>(1, l.gemms.size()));
  return core::Time::seconds(std::max(compute, memory) + kernels * gpu.kernel_overhead_us * 1e-6);
}

core::Time model_step_time(const LayerTable& table, int samples, const hw::GpuSpec& gpu) {
  core::Time t;
  for (std::size_t i = 0; i < table.layers.size(); ++i) t += layer_forward_time(table, i, samples, gpu) * 3;
  return t;
}

}  // namespace trainsim::workload
