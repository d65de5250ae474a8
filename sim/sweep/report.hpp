// A sweep's results as a whole: what a run (or a shard of one) found, written
// as a table for people and as CSV and JSON for machines; the JSON reads back
// (sweep-merge, --baseline).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sweep/result.hpp"

namespace trainsim::sweep {

struct Report {
  std::string sweep;                 // the sweep file, as given
  std::string sweep_hash;            // Spec::fingerprint; empty when read from a file without it
  std::optional<std::string> shard;  // "K/N" for one shard's output
  long long combinations = 0;        // of the whole space
  long long valid_plans = 0;         // of the whole space
  std::map<std::string, long long> invalid;
  long long pruned = 0;
  long long not_run = 0;
  bool interrupted = false;
  std::vector<Result> results;  // ranked

  long long count(Status s) const;
};

// The first `top` fitting plans (all of them when `top` is 0), or the given
// plans (e.g. the Pareto front), as an aligned table with a header.
std::string table(const std::vector<const Result*>& rows, bool ranked);
std::vector<const Result*> top_plans(const Report& report, std::size_t top);
// A few lines: plans by status, invalid combinations by reason.
std::string counts_text(const Report& report);

std::string to_csv(const Report& report);
nlohmann::json to_json(const Report& report);
// Reads what to_json wrote; a malformed file fails with config::ConfigError
// naming the file and the JSON path.
Report from_json(const nlohmann::json& doc, const std::string& file);
Report read_report(const std::string& path);

}  // namespace trainsim::sweep
