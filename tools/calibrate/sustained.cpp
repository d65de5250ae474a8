#include "sustained.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "check.hpp"
#include "kernels.hpp"
#include "profile_json.hpp"

namespace calibrate {

namespace {

constexpr int kSize = 8192;  // m = n = k, as GPU burn tools and the presets' sustained figures use
constexpr double kGemmShare = 2.0 / 3.0;

// Throughput of one window of back-to-back GEMMs lasting about 20 ms.
double window_tflops(GemmRunner& runner) {
  Settings one;
  one.warmup = 1;
  one.samples = 1;
  one.sample_ms = 20.0;
  const auto ms = runner.time(Dtype::kBf16, kSize, kSize, kSize, one, /*cool_down=*/false);
  if (!ms) return 0.0;
  return 2.0 * kSize * kSize * static_cast<double>(kSize) / (ms->front() * 1e-3) / 1e12;
}

// The median of the windows in the run's second half: the clock has settled.
double settled(const std::vector<std::pair<double, double>>& windows, double seconds) {
  std::vector<double> late;
  for (const auto& [t, tflops] : windows) {
    if (t >= seconds / 2) late.push_back(tflops);
  }
  if (late.empty()) return windows.back().second;
  std::nth_element(late.begin(), late.begin() + late.size() / 2, late.end());
  return late[late.size() / 2];
}

}  // namespace

nlohmann::json measure_sustained(GemmRunner& runner, double seconds, cudaStream_t stream) {
  using clock = std::chrono::steady_clock;
  auto since = [](clock::time_point t0) { return std::chrono::duration<double>(clock::now() - t0).count(); };
  std::this_thread::sleep_for(std::chrono::seconds(3));  // start from a cool GPU: the first windows are short-run

  std::vector<std::pair<double, double>> burn;
  double best = 0.0;
  for (const auto t0 = clock::now(); since(t0) < seconds;) {
    const double t = since(t0);
    burn.emplace_back(t, window_tflops(runner));
    best = std::max(best, burn.back().second);
  }
  if (best <= 0.0) return nullptr;  // no cuBLASLt algorithm for 8192^3 BF16 (never seen)

  // Copies of 1 GiB arrays between the GEMM windows, enough to take a third of the time.
  const std::size_t bytes = std::size_t{1} << 30;
  void *src = nullptr, *dst = nullptr;
  CAL_CHECK(cudaMalloc(&src, bytes));
  CAL_CHECK(cudaMalloc(&dst, bytes));
  CAL_CHECK(cudaMemsetAsync(src, 0, bytes, stream));
  Settings once;
  once.warmup = 2;
  once.samples = 3;
  once.sample_ms = 0.0;
  const auto copy = [&] { stream_copy(src, dst, bytes / 16, stream); };
  std::vector<double> copy_ms = time_ms(copy, stream, once);
  std::sort(copy_ms.begin(), copy_ms.end());
  const double window_ms = 20.0;  // window_tflops's sample: 8192^3 takes under 2 ms on today's GPUs, so about 20 ms
  const int copies = std::max(1, static_cast<int>(window_ms * (1 - kGemmShare) / kGemmShare / copy_ms[1] + 0.5));
  std::this_thread::sleep_for(std::chrono::seconds(3));
  std::vector<std::pair<double, double>> duty;
  for (const auto t0 = clock::now(); since(t0) < seconds;) {
    const double t = since(t0);
    duty.emplace_back(t, window_tflops(runner));
    for (int c = 0; c < copies; ++c) copy();
  }
  CAL_CHECK(cudaStreamSynchronize(stream));
  CAL_CHECK(cudaFree(src));
  CAL_CHECK(cudaFree(dst));
  const double burn_tflops = settled(burn, seconds), duty_tflops = settled(duty, seconds);
  std::fprintf(stderr, "  sustained: short-run %.1f, burn %.1f, at %.0f%% GEMM time %.1f TFLOP/s\n", best, burn_tflops,
               100 * kGemmShare, duty_tflops);
  return sustained_json(kSize, seconds, best, burn_tflops, kGemmShare, duty_tflops);
}

}  // namespace calibrate
