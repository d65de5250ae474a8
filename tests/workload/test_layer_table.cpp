#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "workload/layer_table.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_layer_table_test {

using namespace trainsim;
using namespace trainsim::workload;
using core::Time;

namespace {

nlohmann::json model_file(const std::string& name) {
  std::ifstream in(std::string(TRAINSIM_SOURCE_DIR) + "/models/" + name + ".json");
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

struct Totals {
  double flops = 0.0, params = 0.0, gemm_flops = 0.0;
  std::size_t layers = 0;
};

Totals totals(const nlohmann::json& m) {
  Totals t;
  for (const auto& l : m["layers"]) {
    t.flops += l["flops_per_sample"].get<double>();
    t.params += l["params"].get<double>();
    for (const auto& g : l["gemms"]) t.gemm_flops += 2.0 * g[0].get<double>() * g[1].get<double>() * g[2].get<double>();
    ++t.layers;
  }
  return t;
}

}  // namespace

TEST_CASE("VGG-16's table: 15.47 G multiply-adds and 138,357,544 parameters per 224x224 image") {
  // Simonyan & Zisserman 2014, configuration D; torchvision's VGG16_Weights lists
  // 138,357,544 parameters and "15.47 GFLOPS", which counts multiply-adds. With
  // a multiply-add as 2 FLOPs (the project's convention) that is 30.94 GFLOPs.
  // By hand, conv1_2 alone: 224 x 224 outputs x 64 channels x (64 x 3 x 3) = 1.85 G MACs.
  const auto m = model_file("vgg-16");
  const Totals t = totals(m);
  CHECK(t.layers == 16);  // 13 convolutions and 3 fully connected layers
  CHECK(t.params == 138'357'544.0);
  CHECK(t.flops / 2.0 == doctest::Approx(15.47e9).scale(0).epsilon(0.001));
  CHECK(t.gemm_flops == t.flops);  // every FLOP counted is a GEMM's
  CHECK(m["layers"][1]["flops_per_sample"].get<double>() == 2.0 * 224 * 224 * 64 * 64 * 9);
  // fc6 takes the pooled 512 x 7 x 7 map: 25088 x 4096 weights + 4096 biases.
  CHECK(m["layers"][13]["params"].get<double>() == 25088.0 * 4096 + 4096);
  // The input: 3 x 224 x 224 FP16 values.
  CHECK(m["input_bytes_per_sample"].get<double>() == 3.0 * 224 * 224 * 2);
}

TEST_CASE("ResNet-50's table: 4.09 G multiply-adds and 25,557,032 parameters per 224x224 image") {
  // He et al. 2015 Table 1, stride on the 3x3 convolution (v1.5, as torchvision,
  // whose ResNet50_Weights lists 25,557,032 parameters and "4.09 GFLOPS" =
  // multiply-adds); the paper's own stride placement gives 3.8 G.
  const auto m = model_file("resnet-50");
  const Totals t = totals(m);
  CHECK(t.layers == 18);  // stem, 16 bottleneck blocks, classifier
  CHECK(t.params == 25'557'032.0);
  CHECK(t.flops / 2.0 == doctest::Approx(4.09e9).scale(0).epsilon(0.001));
  // The last block's output: 2048 x 7 x 7 FP16 values.
  CHECK(m["layers"][16]["output_bytes_per_sample"].get<double>() == 2048.0 * 7 * 7 * 2);
}

TEST_CASE("a layer's time: the roofline of its GEMMs and its bytes") {
  hw::GpuSpec gpu;
  gpu.peak_tflops = 100;
  gpu.hbm_achievable_tb_per_s = 1.0;  // 1 byte per picosecond
  gpu.gemm_tflops = {{1000, 10}, {10000, 100}};  // 10 TFLOP/s up to size 1000
  gpu.kernel_overhead_us = 1.0;
  LayerTable t;
  t.input_bytes_per_sample = 1000;
  // A GEMM of m = 100 per sample, n = k = 10: per sample 2 x 100 x 10 x 10 = 2e4 FLOPs.
  t.layers.push_back({"gemm", 2e4, 0, 500, {{100, 10, 10}}});
  t.layers.push_back({"pool", 0, 0, 100, {}});
  // 4 samples: m = 400, size (400 x 10 x 10)^(1/3) = 34 < 1000, so 10 TFLOP/s:
  // 8e4 FLOPs / 1e13 = 8 ns; bytes (1000 + 500) x 4 = 6000 -> 6 ns; the GEMM
  // wins, plus 1 us of overhead.
  CHECK(layer_forward_time(t, 0, 4, gpu) == Time::ps(8000) + Time::microseconds(1));
  // Pooling: no FLOPs; (500 + 100) x 4 = 2400 bytes = 2.4 ns, plus one overhead.
  CHECK(layer_forward_time(t, 1, 4, gpu) == Time::ps(2400) + Time::microseconds(1));
  CHECK(layer_forward_time(t, 1, 0, gpu) == Time::zero());
  // Forward + backward (2x) of both layers.
  CHECK(model_step_time(t, 4, gpu) == (Time::ps(8000 + 2400) + Time::microseconds(2)) * 3);
  // Weights count once per layer, whatever the batch: 1e6 parameters = 2 MB -> 2 us.
  t.layers[1].params = 1e6;
  CHECK(layer_forward_time(t, 1, 4, gpu) == Time::ps(2400 + 2'000'000) + Time::microseconds(1));
}

}  // namespace workload_layer_table_test
