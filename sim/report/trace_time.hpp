// Times in the Chrome trace.
//
// Viewers turn an event's ts and dur (microseconds) into integer nanoseconds
// each on its own: Perfetto rounds (llround(x * 1000)), its older importer
// truncated, and chrome://tracing adds them as doubles. Printed to the
// picosecond, a slice's rounded end could land past the rounded start of the
// next slice on its thread. So a slice starts at its start rounded to whole
// nanoseconds, and lasts until its end so rounded less one picosecond: every
// reading puts its end at or before the next start (rounding: exactly on it;
// truncating or adding doubles: before, while a double's error stays under
// that picosecond, i.e. for times up to some fifteen minutes), and the
// ordering of the simulated times is kept, so slices that touch or stay
// apart still do.
#pragma once

#include <cstdint>
#include <string>

#include "core/time.hpp"

namespace trainsim::report {

// The nearest whole nanosecond (halves away from zero).
std::int64_t whole_ns(core::Time t);

// Nanoseconds as microseconds with exactly three decimals: 1234567 -> "1234.567".
std::string us_text(std::int64_t ns);

// A slice's ts ("1.000") and dur ("0.999999": its rounded length less a
// picosecond; "0.000" for a slice that rounds to no length).
struct TraceSpan {
  std::string ts;
  std::string dur;
};
TraceSpan trace_span(core::Time start, core::Time end);

}  // namespace trainsim::report
