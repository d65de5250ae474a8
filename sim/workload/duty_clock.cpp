#include "workload/duty_clock.hpp"

#include <algorithm>
#include <cmath>

namespace trainsim::workload {

double duty_clock_fraction(double tensor_s, double other_s, double burn) {
  if (!(tensor_s > 0.0) || !(burn < 1.0)) return 1.0;
  other_s = std::max(other_s, 0.0);
  // f = 1 - (1 - burn) d(f) with d(f) = (t / f) / (t / f + o) = t / (t + o f):
  // the right side rises with f more slowly than f does, so iterating from
  // the burn converges, and fast (a few steps to 1e-12 for any o / t).
  double f = burn;
  for (int i = 0; i < 100; ++i) {
    const double next = 1.0 - (1.0 - burn) * tensor_s / (tensor_s + other_s * f);
    if (std::abs(next - f) < 1e-12) return next;
    f = next;
  }
  return f;
}

}  // namespace trainsim::workload
