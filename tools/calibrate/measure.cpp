#include "measure.hpp"

#include <algorithm>
#include <cmath>

#include "check.hpp"

namespace calibrate {

std::vector<double> time_ms(const std::function<void()>& call, cudaStream_t stream, const Settings& s) {
  cudaEvent_t start, stop;
  CAL_CHECK(cudaEventCreate(&start));
  CAL_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < s.warmup; ++i) call();
  // One timed call says how many make a sample of about sample_ms.
  CAL_CHECK(cudaEventRecord(start, stream));
  call();
  CAL_CHECK(cudaEventRecord(stop, stream));
  CAL_CHECK(cudaEventSynchronize(stop));
  float once = 0.0f;
  CAL_CHECK(cudaEventElapsedTime(&once, start, stop));
  const int reps = std::clamp(static_cast<int>(std::ceil(s.sample_ms / std::max(once, 1e-4f))), 1, 10000);
  std::vector<double> out;
  for (int i = 0; i < s.samples; ++i) {
    CAL_CHECK(cudaEventRecord(start, stream));
    for (int r = 0; r < reps; ++r) call();
    CAL_CHECK(cudaEventRecord(stop, stream));
    CAL_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CAL_CHECK(cudaEventElapsedTime(&ms, start, stop));
    out.push_back(static_cast<double>(ms) / reps);
  }
  CAL_CHECK(cudaEventDestroy(start));
  CAL_CHECK(cudaEventDestroy(stop));
  return out;
}

}  // namespace calibrate
