// A validation case file: trainsim configs paired with what was measured when
// the same training ran on real hardware, and orderings the sources state
// (docs/validation.md documents the format). Loading checks every key;
// a problem is a config::ConfigError whose one-line message names the case
// file and the JSON path (e.g. "cases.json: cases[3].measured.mfu: ...").
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/error.hpp"
#include "validate/metric.hpp"

namespace trainsim::validate {

struct Case {
  std::size_t index = 0;  // position in "cases", for messages
  std::string id;
  std::string group;   // the per-source MAPE groups by it
  std::string source;  // where the measurement comes from
  // The config: inline (an object), or a file (config_file, relative paths
  // already resolved against the case file's folder).
  nlohmann::json config;
  std::string config_file;
  std::vector<std::string> set;  // --set overrides, applied in order
  std::vector<std::pair<std::string, std::string>> assumptions;  // key -> why, sorted by key
  std::vector<std::pair<Metric, double>> measured;  // in the order of all_metrics()
  std::string notes;
};

struct Ordering {
  std::size_t index = 0;  // position in "orderings"
  std::string name;
  Metric metric = Metric::kIterationTime;
  std::string source;  // may be empty
  // Either the predicted metric strictly increases along `increasing` ...
  std::vector<std::string> increasing;
  // ... or the ratio numerator / denominator lies in [min, max].
  struct Ratio {
    std::string numerator, denominator;
    std::optional<double> min, max;
  };
  std::optional<Ratio> ratio;

  // The case ids the check needs.
  std::vector<std::string> case_ids() const;
};

struct CaseFile {
  std::string path;      // as given, for messages
  std::string base_dir;  // relative config paths start here
  std::string description;
  std::vector<Case> cases;
  std::vector<Ordering> orderings;
  // Case id -> index in `cases`, as parse_cases fills it: a lookup per id,
  // not a scan (a file of many cases and orderings stays linear).
  std::map<std::string, std::size_t> index_of_id;

  const Case* find(const std::string& id) const;
};

// Reads and checks a case file.
CaseFile load_cases(const std::string& path);

// The same for a document in memory; `path` names it in messages.
CaseFile parse_cases(const nlohmann::json& doc, const std::string& path, const std::string& base_dir);

}  // namespace trainsim::validate
