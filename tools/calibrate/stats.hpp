// Summaries of repeated samples: the median, minimum and maximum the profile
// keeps of every measurement. Plain C++, so that tests run it without a GPU.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

namespace calibrate {

struct Stat {
  double median = 0.0;
  double min = 0.0;
  double max = 0.0;
};

Stat summarize(std::vector<double> values);

// A rate from times: `work / t` for each sample's t; the slowest sample gives
// the minimum.
Stat rate(const std::vector<double>& times, double work);

nlohmann::json to_json(const Stat& s);

}  // namespace calibrate
