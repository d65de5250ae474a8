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

namespace trainsim::core {

class Time {
 public:
  constexpr Time() = default;
  static constexpr Time ps(std::int64_t picoseconds) { return Time(picoseconds); }
  static constexpr Time zero() { return Time(0); }
  static constexpr Time max() { return Time(std::numeric_limits<std::int64_t>::max()); }
  // Rounds to the nearest picosecond; negative or NaN durations are a caller bug
  // and clamp to zero so that time never runs backwards.
  static Time seconds(double s) {
    if (!(s > 0.0)) return Time(0);
    return Time(static_cast<std::int64_t>(std::llround(s * 1e12)));
  }
  static Time microseconds(double us) { return seconds(us * 1e-6); }

  constexpr std::int64_t ps() const { return ps_; }
  constexpr double to_seconds() const { return static_cast<double>(ps_) * 1e-12; }
  constexpr double to_microseconds() const { return static_cast<double>(ps_) * 1e-6; }

  constexpr auto operator<=>(const Time&) const = default;
  constexpr Time operator+(Time o) const { return Time(ps_ + o.ps_); }
  constexpr Time operator-(Time o) const { return Time(ps_ - o.ps_); }
  constexpr Time& operator+=(Time o) {
    ps_ += o.ps_;
    return *this;
  }
  constexpr Time& operator-=(Time o) {
    ps_ -= o.ps_;
    return *this;
  }
  constexpr Time operator*(std::int64_t k) const { return Time(ps_ * k); }

 private:
  constexpr explicit Time(std::int64_t ps) : ps_(ps) {}
  std::int64_t ps_ = 0;
};

}  // namespace trainsim::core
