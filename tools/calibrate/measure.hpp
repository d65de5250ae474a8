// Timing: each measurement runs warm-up calls, then repeated samples timed
// with CUDA events; a sample repeats the call enough times to last a target
// time, so that short kernels are not lost in event resolution.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <vector>

#include "stats.hpp"

namespace calibrate {

struct Settings {
  int warmup = 3;
  int samples = 11;  // odd: the median is a sample
  double sample_ms = 1.0;  // a sample repeats the call until it lasts about this long
};

// Milliseconds per call of `call` (which enqueues work on `stream`), one value
// per sample.
std::vector<double> time_ms(const std::function<void()>& call, cudaStream_t stream, const Settings& s);

}  // namespace calibrate
