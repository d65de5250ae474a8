#include "stats.hpp"

#include <algorithm>

namespace calibrate {

Stat summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  const double median = n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  return {median, v.front(), v.back()};
}

Stat rate(const std::vector<double>& times, double work) {
  const Stat t = summarize(times);
  return {work / t.median, work / t.max, work / t.min};
}

nlohmann::json to_json(const Stat& s) { return {{"median", s.median}, {"min", s.min}, {"max", s.max}}; }

}  // namespace calibrate
