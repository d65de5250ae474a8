#include "sweep/baseline.hpp"

#include <cmath>
#include <fmt/format.h>

namespace trainsim::sweep {

namespace {
const Result* best(const Report& r) {
  return !r.results.empty() && r.results.front().status == Status::kOk ? &r.results.front() : nullptr;
}
}  // namespace

bool parse_tolerance(const std::string& text, double& fraction) {
  std::string t = text;
  if (!t.empty() && t.back() == '%') t.pop_back();
  if (t.empty()) return false;
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(t, &used);
  } catch (const std::exception&) {
    return false;
  }
  if (used != t.size() || !std::isfinite(v) || v < 0) return false;
  fraction = v / 100.0;
  return true;
}

Verdict compare(const Report& current, const Report& baseline, double tolerance) {
  const Result* base = best(baseline);
  if (base == nullptr) return {false, "the baseline has no plan that fits in memory: nothing to compare"};
  const Result* now = best(current);
  if (now == nullptr) return {true, fmt::format("no plan fits in memory now; the baseline's best ran in {:.4f} s ({})", base->iteration_time_s, base->key)};
  const Result* same = nullptr;
  for (const Result& r : current.results) {
    if (r.key == base->key) same = &r;
  }
  if (same == nullptr) {
    return {true, fmt::format("the baseline's best plan ({}) is no longer a valid plan of this sweep", base->key)};
  }
  if (same->status == Status::kOom) {
    return {true, fmt::format("the baseline's best plan ({}) now runs out of memory (peak {:.2f} GiB)", base->key,
                              same->peak_memory_bytes / 1073741824.0)};
  }
  if (same->status == Status::kFailed) {
    return {true, fmt::format("the baseline's best plan ({}) now fails: {}", base->key, same->error)};
  }
  const double change = now->iteration_time_s / base->iteration_time_s - 1.0;
  const std::string what = fmt::format("best iteration time {:.4f} s ({}) vs the baseline's {:.4f} s ({}): {:+.2f}%",
                                       now->iteration_time_s, now->key, base->iteration_time_s, base->key, change * 100);
  if (now->iteration_time_s > base->iteration_time_s * (1.0 + tolerance)) {
    return {true, fmt::format("{}, worse than the tolerance of {:g}%", what, tolerance * 100)};
  }
  return {false, fmt::format("{}, within the tolerance of {:g}%", what, tolerance * 100)};
}

}  // namespace trainsim::sweep
