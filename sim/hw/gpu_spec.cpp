#include "hw/gpu_spec.hpp"

#include <cmath>
#include <stdexcept>

namespace trainsim::hw {

double interpolate_tflops(const std::vector<ThroughputPoint>& curve, double size) {
  if (curve.empty()) throw std::invalid_argument("empty throughput curve");
  if (size <= curve.front().size) return curve.front().tflops;
  if (size >= curve.back().size) return curve.back().tflops;
  for (std::size_t i = 1; i < curve.size(); ++i) {
    if (size <= curve[i].size) {
      const ThroughputPoint& a = curve[i - 1];
      const ThroughputPoint& b = curve[i];
      const double f = std::log(size / a.size) / std::log(b.size / a.size);
      return a.tflops + f * (b.tflops - a.tflops);
    }
  }
  return curve.back().tflops;
}

}  // namespace trainsim::hw
