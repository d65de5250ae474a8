// The CI gate: compares a sweep's best plan with a baseline's (an earlier
// sweep's JSON). It fails when the best iteration time is worse than the
// baseline's best by more than a tolerance, or when the baseline's best plan
// no longer runs (invalid, out of memory, failed).
#pragma once

#include <string>

#include "sweep/report.hpp"

namespace trainsim::sweep {

struct Verdict {
  bool regressed = false;
  std::string message;  // one line saying why, either way
};

// `tolerance` is a fraction (0.02 for 2%).
Verdict compare(const Report& current, const Report& baseline, double tolerance);

// "2%" or "2" (percent) -> 0.02; false when not a number >= 0.
bool parse_tolerance(const std::string& text, double& fraction);

}  // namespace trainsim::sweep
