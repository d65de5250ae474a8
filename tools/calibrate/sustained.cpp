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
constexpr double kGemmShare = 2.0 / 3.0;  // asked; the profile records the share as run

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
  // Two 1 GiB arrays for the duty run's copies, taken first: a GPU without
  // room for them skips the section rather than losing the whole run.
  const std::size_t bytes = std::size_t{1} << 30;
  void *src = nullptr, *dst = nullptr;
  if (cudaMalloc(&src, bytes) != cudaSuccess || cudaMalloc(&dst, bytes) != cudaSuccess) {
    cudaGetLastError();  // clear the failed allocation's error
    if (src) CAL_CHECK(cudaFree(src));
    std::fprintf(stderr, "  sustained: no room for two 1 GiB arrays beside the GEMM operands; skipped\n");
    return nullptr;
  }
  // Random values, as the GEMMs' operands: DRAM moving zeros draws less power.
  fill_random(src, bytes / 2, 2, true, stream);
  std::this_thread::sleep_for(std::chrono::seconds(3));  // start from a cool GPU: the first windows are short-run

  std::vector<std::pair<double, double>> burn;
  double best = 0.0;
  for (const auto t0 = clock::now(); since(t0) < seconds;) {
    const double t = since(t0);
    burn.emplace_back(t, window_tflops(runner));
    best = std::max(best, burn.back().second);
  }
  nlohmann::json out = nullptr;
  if (best > 0.0) {  // else no cuBLASLt algorithm for 8192^3 BF16 (never seen)
    Settings once;
    once.warmup = 2;
    once.samples = 3;
    once.sample_ms = 0.0;
    const auto copy = [&] { stream_copy(src, dst, bytes / 16, stream); };
    const double copy_ms = summarize(time_ms(copy, stream, once)).median;
    // A window is window_tflops's warm-up, sizing and sampled calls: about
    // 20 ms plus two calls. Copies to take a third of the time beside it.
    const double one_call_ms = 2.0 * kSize * kSize * static_cast<double>(kSize) / (best * 1e9);
    const double window_ms = 20.0 + 2.0 * one_call_ms;
    const int copies = std::max(1, static_cast<int>(window_ms * (1 - kGemmShare) / kGemmShare / copy_ms + 0.5));
    std::this_thread::sleep_for(std::chrono::seconds(3));
    std::vector<std::pair<double, double>> duty;
    double gemm_s = 0.0, copies_s = 0.0;  // wall time of each part, the GPU busy throughout
    for (const auto t0 = clock::now(); since(t0) < seconds;) {
      const double t = since(t0);
      duty.emplace_back(t, window_tflops(runner));
      gemm_s += since(t0) - t;
      const double c0 = since(t0);
      for (int c = 0; c < copies; ++c) copy();
      CAL_CHECK(cudaStreamSynchronize(stream));
      copies_s += since(t0) - c0;
    }
    const double share = gemm_s / (gemm_s + copies_s);  // as it ran, not as asked
    const double burn_tflops = settled(burn, seconds), duty_tflops = settled(duty, seconds);
    std::fprintf(stderr, "  sustained: best window %.1f, burn %.1f, at %.0f%% GEMM time %.1f TFLOP/s\n", best,
                 burn_tflops, 100 * share, duty_tflops);
    out = sustained_json(kSize, seconds, best, burn_tflops, share, duty_tflops);
  }
  CAL_CHECK(cudaFree(src));
  CAL_CHECK(cudaFree(dst));
  return out;
}

}  // namespace calibrate
