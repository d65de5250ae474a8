// The share of its short-run tensor-core figures a power-limited GPU holds,
// by how much of its compute time the tensor cores work (workload/duty_clock.hpp).
#include <doctest/doctest.h>

#include <cmath>

#include "workload/duty_clock.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_duty_clock_test {

using trainsim::workload::duty_clock_fraction;

TEST_CASE("back-to-back tensor work holds the burn; none, or a GPU that does not throttle, holds everything") {
  CHECK(duty_clock_fraction(1.0, 0.0, 0.85) == doctest::Approx(0.85).epsilon(1e-12).scale(0));
  CHECK(duty_clock_fraction(0.0, 1.0, 0.85) == 1.0);
  CHECK(duty_clock_fraction(1.0, 1.0, 1.0) == 1.0);
}

TEST_CASE("the held share is the fixed point of the duty line") {
  // Half the short-run compute on tensor cores, burn 0.8: at a share f the
  // tensor work takes 0.5 / f against 0.5, so d = 1 / (1 + f), and
  // f = 1 - 0.2 / (1 + f) gives f^2 = 0.8, f = 0.894427.
  const double f = duty_clock_fraction(0.5, 0.5, 0.8);
  CHECK(f == doctest::Approx(std::sqrt(0.8)).epsilon(1e-10).scale(0));
  // More tensor work, a lower clock; always between the burn and 1.
  CHECK(duty_clock_fraction(0.9, 0.1, 0.8) < f);
  CHECK(duty_clock_fraction(0.9, 0.1, 0.8) > 0.8);
}

TEST_CASE("a small burn and little tensor work: the root of o f^2 + (t - o) f - burn t = 0") {
  // t 0.1, o 0.9, burn 0.05: 0.9 f^2 - 0.8 f - 0.005 = 0, f = (0.8 + sqrt(0.64 + 0.018)) / 1.8 = 0.895083.
  CHECK(duty_clock_fraction(0.1, 0.9, 0.05) == doctest::Approx((0.8 + std::sqrt(0.658)) / 1.8).epsilon(1e-12).scale(0));
  // Negative other work counts as none: back to back.
  CHECK(duty_clock_fraction(1.0, -1.0, 0.85) == doctest::Approx(0.85).epsilon(1e-12).scale(0));
}

}  // namespace workload_duty_clock_test
