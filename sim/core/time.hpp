// Simulated time: an integer count of picoseconds.
//
// Integers keep event ordering exact and the output byte-identical across runs;
// a picosecond grain is far below anything a GPU does, and int64 still spans
// about 106 days of simulated time.
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace trainsim::core {

class Time {
 public:
  constexpr Time() = default;
  static constexpr Time ps(std::int64_t picoseconds) { return Time(picoseconds); }
  static constexpr Time zero() { return Time(0); }
  static constexpr Time max() { return Time(std::numeric_limits<std::int64_t>::max()); }
  // Durations are kept below 2^62 ps (about 53 days) so that adding a few of
  // them cannot wrap; sums past 2^63 ps (about 106 days) are refused too.
  static constexpr std::int64_t kLimitPs = std::int64_t{1} << 62;

  // Rounds to the nearest picosecond; negative or NaN durations clamp to zero so
  // that time never runs backwards. Throws std::overflow_error past kLimitPs.
  static Time seconds(double s) {
    if (!(s > 0.0)) return Time(0);
    const double ps = s * 1e12;
    if (!(ps < static_cast<double>(kLimitPs))) overflowed(s);
    return Time(static_cast<std::int64_t>(std::llround(ps)));
  }
  static Time microseconds(double us) { return seconds(us * 1e-6); }

  constexpr std::int64_t ps() const { return ps_; }
  constexpr double to_seconds() const { return static_cast<double>(ps_) * 1e-12; }
  constexpr double to_microseconds() const { return static_cast<double>(ps_) * 1e-6; }

  constexpr auto operator<=>(const Time&) const = default;
  Time operator+(Time o) const {
    std::int64_t sum = 0;
    if (__builtin_add_overflow(ps_, o.ps_, &sum)) overflowed(to_seconds() + o.to_seconds());
    return Time(sum);
  }
  constexpr Time operator-(Time o) const { return Time(ps_ - o.ps_); }
  Time& operator+=(Time o) { return *this = *this + o; }
  constexpr Time& operator-=(Time o) {
    ps_ -= o.ps_;
    return *this;
  }
  Time operator*(std::int64_t k) const {
    std::int64_t product = 0;
    if (__builtin_mul_overflow(ps_, k, &product)) overflowed(to_seconds() * k);
    return Time(product);
  }

 private:
  constexpr explicit Time(std::int64_t ps) : ps_(ps) {}
  // Out of line and cold, so that the sums and products stay inline.
  [[noreturn, gnu::cold, gnu::noinline]] static void overflowed(double s) { throw std::overflow_error(too_long(s)); }
  static std::string too_long(double s) {
    return "simulated time overflows: " + std::to_string(s) + " s is beyond the range of the simulator's clock (53 days for one duration, 106 days in all)";
  }
  std::int64_t ps_ = 0;
};

}  // namespace trainsim::core
