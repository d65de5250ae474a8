// Arithmetic on counts a user gives (parallel degrees, batch sizes, layer
// counts): the exact result, or nothing when it does not fit in 64 bits.
// Never a wrap: a wrapped product once passed the check that tp x pp x dp is
// the GPU count (4508801 x 1073283 x 7623851 wraps to exactly 1).
#pragma once

#include <fmt/format.h>

#include <initializer_list>
#include <optional>
#include <string>

namespace trainsim::core {

inline std::optional<long long> checked_product(std::initializer_list<long long> factors) {
  long long product = 1;
  for (const long long f : factors) {
    if (__builtin_mul_overflow(product, f, &product)) return std::nullopt;
  }
  return product;
}

inline std::optional<long long> checked_sum(long long a, long long b) {
  long long sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

// The product for a message: exact when it fits, else its size ("about 3.7e+19").
inline std::string product_text(std::initializer_list<long long> factors) {
  if (const auto p = checked_product(factors)) return std::to_string(*p);
  double approx = 1.0;
  for (const long long f : factors) approx *= static_cast<double>(f);
  return fmt::format("about {:.2g}", approx);
}

}  // namespace trainsim::core
