// A model given as a table of layers, each by its forward FLOPs, parameters
// and output size per sample (CNNs such as VGG-16 and ResNet-50, for burst
// parallelism), and the time of one layer on one GPU.
//
// Conventions, as for transformers: FLOPs count a multiply-add as 2;
// activations and gradients are 2-byte (FP16/BF16) values; backward is twice
// the forward (an input-gradient and a weight-gradient GEMM, each with the
// forward's FLOPs).
#pragma once

#include <string>
#include <vector>

#include "core/time.hpp"
#include "hw/gpu_spec.hpp"

namespace trainsim::workload {

// A convolution or fully connected layer as the GEMM it runs (a convolution
// as an implicit GEMM): m = output positions per sample (times the batch at
// run time), n = output channels, k = input channels x kernel area.
struct LayerGemm {
  double m_per_sample = 0.0;
  double n = 0.0;
  double k = 0.0;
  double flops_per_sample() const { return 2.0 * m_per_sample * n * k; }
};

struct Layer {
  std::string name;
  double flops_per_sample = 0.0;  // forward
  double params = 0.0;
  double output_bytes_per_sample = 0.0;
  std::vector<LayerGemm> gemms;  // empty for a layer without GEMMs (e.g. pooling)
};

struct LayerTable {
  std::string name;
  double input_bytes_per_sample = 0.0;  // the model's input (an image)
  std::vector<Layer> layers;

  double params() const;
  double flops_per_sample() const;  // forward, the whole model
  double input_bytes_of(std::size_t layer) const {
    return layer == 0 ? input_bytes_per_sample : layers[layer - 1].output_bytes_per_sample;
  }
};

// Forward time of layer `layer` for `samples` samples on one GPU: a roofline
// over the whole layer,
//   max(sum over its GEMMs of FLOPs / achieved GEMM throughput at that shape
//         + any FLOPs beyond the GEMMs at peak,
//       (input + output bytes) x samples + FP16 weights, over achievable HBM bandwidth)
//   + one kernel overhead per GEMM (one for a layer without GEMMs).
// Small batches give small GEMMs, which the GPU's efficiency curve makes slow:
// the reason a layer does not speed up in proportion to its GPUs.
core::Time layer_forward_time(const LayerTable& table, std::size_t layer, int samples, const hw::GpuSpec& gpu);

// Forward and backward of every layer, one GPU, `samples` samples.
core::Time model_step_time(const LayerTable& table, int samples, const hw::GpuSpec& gpu);

}  // namespace trainsim::workload
