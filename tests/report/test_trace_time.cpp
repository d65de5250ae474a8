#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "report/trace_time.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace report_trace_time_test {

using namespace trainsim;
using core::Time;

namespace {

// The three ways viewers read a ts or dur (microseconds) as nanoseconds:
// Perfetto parses a double and takes llround(x * 1000); its older importer
// truncated; chrome://tracing keeps the doubles and adds them.
std::int64_t rounded_ns(const std::string& us) { return std::llround(std::stod(us) * 1000.0); }
std::int64_t truncated_ns(const std::string& us) { return static_cast<std::int64_t>(std::stod(us) * 1000.0); }

// Slice `a`'s end, in each reading, is at or before `b`'s start.
void check_no_overlap(const report::TraceSpan& a, const report::TraceSpan& b) {
  CHECK(rounded_ns(a.ts) + rounded_ns(a.dur) <= rounded_ns(b.ts));
  CHECK(truncated_ns(a.ts) + truncated_ns(a.dur) <= truncated_ns(b.ts));
  CHECK(std::stod(a.ts) + std::stod(a.dur) <= std::stod(b.ts));
}

}  // namespace

TEST_CASE("times round to the nearest whole nanosecond") {
  CHECK(report::whole_ns(Time::ps(0)) == 0);
  CHECK(report::whole_ns(Time::ps(1499)) == 1);  // 1.499 ns
  CHECK(report::whole_ns(Time::ps(1500)) == 2);  // halves go up
  CHECK(report::whole_ns(Time::ps(2000499)) == 2000);
}

TEST_CASE("microseconds are printed with exactly three decimals") {
  CHECK(report::us_text(0) == "0.000");
  CHECK(report::us_text(5) == "0.005");
  CHECK(report::us_text(1234567) == "1234.567");
  CHECK(report::us_text(3000000) == "3000.000");
  // 390 ms, as long iterations have.
  CHECK(report::us_text(390372914) == "390372.914");
}

TEST_CASE("a slice starts at its rounded start and lasts its rounded length less a picosecond") {
  // [999,600 ps, 2,000,499 ps): the ends round to 1,000 and 2,000 ns, so ts
  // is 1.000 us and dur 1 us less 1 ps (not the 1.000899 us it lasts exactly).
  report::TraceSpan s = report::trace_span(Time::ps(999600), Time::ps(2000499));
  CHECK(s.ts == "1.000");
  CHECK(s.dur == "0.999999");
  CHECK(rounded_ns(s.dur) == 1000);
  // 1,234,567,890,123 ps: 1,234,567,890 ns, 1,234,567.890 us.
  s = report::trace_span(Time::ps(1000), Time::ps(1234567890123));
  CHECK(s.ts == "0.001");
  CHECK(s.dur == "1234567.888999");  // 1,234,567,889 ns less a picosecond
  // Nothing left once rounded (1.2 to 1.4 ns): no length, not a negative one.
  s = report::trace_span(Time::ps(1200), Time::ps(1400));
  CHECK(s.ts == "0.001");
  CHECK(s.dur == "0.000");
}

TEST_CASE("adjacent slices never overlap, however a viewer reads them") {
  // The case the old output got wrong: slice A [999,600, 2,000,499) ps, B
  // from 2,000,499 ps. Printed to the picosecond, Perfetto rounded A's ts
  // (999.6 ns) up to 1,000, its dur (1,000.899 ns) up to 1,001, so A ended at
  // 2,001 ns, past B's start (2,000.499 -> 2,000). Now A ends at 2,000 ns,
  // where B starts.
  const report::TraceSpan a = report::trace_span(Time::ps(999600), Time::ps(2000499));
  const report::TraceSpan b = report::trace_span(Time::ps(2000499), Time::ps(3000000));
  CHECK(rounded_ns(a.ts) + rounded_ns(a.dur) == 2000);
  CHECK(rounded_ns(b.ts) == 2000);
  check_no_overlap(a, b);
  // 1,032.062 us parses to a double just below it, which truncates to
  // 1,032,061 ns: with a dur of whole nanoseconds, a slice ending there
  // would overlap one starting there by 1 ns.
  CHECK(truncated_ns("1032.062") == 1032061);
  check_no_overlap(report::trace_span(Time::ps(1000000000), Time::ps(1032062000)),
                   report::trace_span(Time::ps(1032062000), Time::ps(1040000000)));

  // Boundaries with every kind of fraction of a nanosecond, A [s, m) and B
  // [m, e): Perfetto's rounding over a span as long as a day of simulated
  // time; the other readings over ten minutes, as long as iterations run (a
  // double then errs by a fraction of the picosecond that dur falls short;
  // at hours it errs by more).
  // A 64-bit LCG in unsigned arithmetic (which wraps by definition), kept to 62 bits.
  std::uint64_t state = 12345;
  for (int i = 0; i < 40000; ++i) {
    state = (state * 6364136223846793005ULL + 1442695040888963407ULL) & ((std::uint64_t{1} << 62) - 1);
    const auto x = static_cast<std::int64_t>(state);
    const bool day = i % 2 == 0;
    const std::int64_t span = (day ? 86400 : 600) * 1000000000000LL;
    const std::int64_t s = x % span;
    const std::int64_t m = s + 1 + (x >> 20) % 5000000, e = m + 1 + (x >> 30) % 5000000;
    const report::TraceSpan sa = report::trace_span(Time::ps(s), Time::ps(m));
    const report::TraceSpan sb = report::trace_span(Time::ps(m), Time::ps(e));
    CAPTURE(s);
    CAPTURE(m);
    if (day) {
      REQUIRE(rounded_ns(sa.ts) + rounded_ns(sa.dur) <= rounded_ns(sb.ts));
    } else {
      check_no_overlap(sa, sb);
    }
    // Perfetto puts each end on its simulated time rounded to the nanosecond.
    CHECK(rounded_ns(sa.ts) == report::whole_ns(Time::ps(s)));
    CHECK(rounded_ns(sa.ts) + rounded_ns(sa.dur) == report::whole_ns(Time::ps(m)));
  }
}

}  // namespace report_trace_time_test
