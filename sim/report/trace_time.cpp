#include "report/trace_time.hpp"

#include <fmt/format.h>

namespace trainsim::report {

std::int64_t whole_ns(core::Time t) {
  const std::int64_t ps = t.ps();
  return ps >= 0 ? (ps + 500) / 1000 : -((-ps + 500) / 1000);
}

std::string us_text(std::int64_t ns) {
  const char* sign = ns < 0 ? "-" : "";
  // The magnitude as unsigned, so that the most negative value has one too.
  const std::uint64_t m = ns < 0 ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  return fmt::format("{}{}.{:03}", sign, m / 1000, m % 1000);
}

TraceSpan trace_span(core::Time start, core::Time end) {
  const std::int64_t s = whole_ns(start), e = whole_ns(end);
  if (e <= s) return {us_text(s), "0.000"};
  // One picosecond short: far below what rounding to nanoseconds moves
  // (half a nanosecond), far above a double's error at these magnitudes.
  const std::int64_t ps = (e - s) * 1000 - 1;
  return {us_text(s), fmt::format("{}.{:06}", ps / 1000000, ps % 1000000)};
}

}  // namespace trainsim::report
