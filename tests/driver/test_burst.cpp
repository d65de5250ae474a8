#include <doctest/doctest.h>

#include <string>

#include "config/load.hpp"
#include "driver/layer_whatif.hpp"
#include "driver/whatif.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace driver_burst_test {

using namespace trainsim;

namespace {

std::string example(const std::string& name) {
  std::string path = TRAINSIM_SOURCE_DIR "/configs/examples/";
  return path.append(name);
}

struct Result {
  double iteration_s = 0.0;
  report::Summary summary;
};

Result run(const std::string& file, const std::vector<std::string>& overrides = {}) {
  const config::Scenario sc = config::load_file(example(file), overrides);
  const driver::WhatIf w = driver::simulate(sc);
  return {w.sim->timeline.makespan.to_seconds(), driver::summarize(sc, w, file)};
}

}  // namespace

TEST_CASE("VGG-16, 32 images on 16 A100s: burst parallelism beats data parallelism") {
  // DeepPool's strong-scaling setting (Park et al., MLSys 2022): at 2 images
  // per GPU, data parallelism all-reduces VGG-16's 138 M parameters (fc6 alone
  // holds 103 M) over two nodes every iteration, and its fully connected layers
  // gain nothing from 16 GPUs (they are bound by reading their weights). The
  // planner puts those layers on few GPUs and keeps the convolutions wide.
  const Result dp = run("vgg16-dp-16xa100.json");
  const Result burst = run("vgg16-burst-16xa100.json");
  CHECK(burst.iteration_s < dp.iteration_s);
  REQUIRE(burst.summary.burst.has_value());
  const report::BurstStats& b = *burst.summary.burst;
  CHECK(b.mode == "burst (planned)");
  CHECK(b.amplification <= 2.0);
  // The convolutions stay on all 16 GPUs; fc6 (103 M parameters) on fewer.
  CHECK(b.layers.front().gpus == 16);
  CHECK(b.layers[13].name == "fc6");
  CHECK(b.layers[13].gpus < 16);
  // Data parallelism's plan: every layer on every GPU.
  REQUIRE(dp.summary.burst.has_value());
  CHECK(dp.summary.burst->mode == "data parallel");
  for (const auto& l : dp.summary.burst->layers) CHECK(l.gpus == 16);
  // The planner's cost model and the simulation agree within 5% (the model
  // leaves out contention between transfers and all-reduces, and the
  // gradient's way back it costs as the forward's).
  CHECK(b.predicted_iteration_s == doctest::Approx(burst.iteration_s).scale(0).epsilon(0.05));
  CHECK(dp.summary.burst->predicted_iteration_s == doctest::Approx(dp.iteration_s).scale(0).epsilon(0.05));
  // The same plan through --set on the data-parallel config.
  CHECK(run("vgg16-dp-16xa100.json", {"parallel.schedule=burst"}).iteration_s <= burst.iteration_s);
}

TEST_CASE("GPU multiplexing: the background job gets the idle GPU time, and the cluster's utilisation rises") {
  const Result with = run("vgg16-burst-16xa100.json");
  const report::BurstStats& b = *with.summary.burst;
  REQUIRE(b.background);
  CHECK(b.background_model == "VGG-16");
  CHECK(b.background_batch == 32);
  CHECK(b.background_gpu_s > 0.0);
  CHECK(b.background_samples_per_s > 0.0);
  // With a background job no GPU time is left idle: foreground compute and
  // background together fill every GPU for the whole iteration.
  CHECK(b.foreground_busy_gpu_s + b.background_gpu_s == doctest::Approx(16 * with.iteration_s).scale(0));
  CHECK(b.cluster_utilisation == doctest::Approx(1.0).scale(0));
  // Without it, the foreground alone uses a fraction of the cluster.
  const Result dp = run("vgg16-dp-16xa100.json");
  CHECK(dp.summary.burst->cluster_utilisation < 1.0);
  CHECK(!dp.summary.burst->background);
  // An interference factor slows the foreground (the plan may change with it).
  const Result slowed = run("vgg16-burst-16xa100.json", {"parallel.burst.interference=0.2"});
  CHECK(slowed.iteration_s > with.iteration_s);
}

TEST_CASE("a layer-table run counts the CUDA context against each GPU's memory too") {
  // As for a transformer: with no context the burst plan's tensors peak at P
  // bytes of the A100's 80e9; a context of C MiB fits while P + C x 2^20 <=
  // 80e9, so one MiB either side of the headroom decides it.
  const Result none = run("vgg16-burst-16xa100.json", {"options.cuda_context_mib=0"});
  REQUIRE_FALSE(none.summary.oom);
  const std::int64_t headroom_mib = (80'000'000'000 - none.summary.peak_memory_bytes) / 1048576;
  const Result fits = run("vgg16-burst-16xa100.json", {"options.cuda_context_mib=" + std::to_string(headroom_mib - 1)});
  const Result over = run("vgg16-burst-16xa100.json", {"options.cuda_context_mib=" + std::to_string(headroom_mib + 1)});
  CHECK_FALSE(fits.summary.oom);
  CHECK(over.summary.oom);
  CHECK(over.summary.cuda_context_bytes == (headroom_mib + 1) * 1048576);
  CHECK(over.summary.memory_capacity_bytes == 80'000'000'000);
}

TEST_CASE("ResNet-50: a given plan runs as given") {
  // The 17 convolutional rows on all 16 GPUs, the classifier on one.
  std::string gpus = "[16";
  for (int i = 1; i < 17; ++i) gpus += ",16";
  gpus += ",1]";
  const Result r = run("vgg16-burst-16xa100.json", {"model=resnet-50", "parallel.burst.layer_gpus=" + gpus});
  const report::BurstStats& b = *r.summary.burst;
  CHECK(b.mode == "burst (given)");
  CHECK(b.layers.back().gpus == 1);
  CHECK(b.layers.front().gpus == 16);
  CHECK(b.amplification_limit == 0.0);  // no planner ran
}

}  // namespace driver_burst_test
