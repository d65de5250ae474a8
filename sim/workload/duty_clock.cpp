#include "workload/duty_clock.hpp"

#include <algorithm>
#include <cmath>

namespace trainsim::workload {

double held_fraction(double duty, double burn) { return 1.0 - duty * (1.0 - burn); }

double tensor_duty(double tensor_s, double other_s, double held) {
  const double tensor = tensor_s / held;
  return tensor / (tensor + std::max(other_s, 0.0));
}

double duty_clock_fraction(double tensor_s, double other_s, double burn) {
  if (!(tensor_s > 0.0) || !(burn < 1.0)) return 1.0;
  const double t = tensor_s, o = std::max(other_s, 0.0);
  // f = 1 - (1 - burn) d(f) with d(f) = (t / f) / (t / f + o) = t / (t + o f)
  // gives o f^2 + (t - o) f - burn t = 0, whose one positive root is f;
  // without other work, d = 1 and f is the burn.
  if (o == 0.0) return burn;
  return (-(t - o) + std::sqrt((t - o) * (t - o) + 4.0 * o * burn * t)) / (2.0 * o);
}

}  // namespace trainsim::workload
