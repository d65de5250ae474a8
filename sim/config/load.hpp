// Reading a config: JSON text -> presets expanded -> `--set` overrides applied
// -> every key checked -> a Scenario. Any problem is a ConfigError whose
// one-line message names the file, the JSON path and what was expected.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/error.hpp"
#include "config/json_text.hpp"
#include "config/scenario.hpp"

namespace trainsim::config {

// Loads `path` and applies `overrides` ("key.path=value", value as JSON or a
// bare string) in order.
Scenario load_file(const std::string& path, const std::vector<std::string>& overrides = {});

// The same for a document already in memory; `file` is used in messages and
// `base_dir` to resolve "*.json" references.
Scenario load_document(nlohmann::json doc, const std::string& file, const std::string& base_dir,
                       const std::vector<std::string>& overrides = {});

// The same without the checks that join the plan to the model and cluster
// (tp x pp x dp = GPUs, divisibility, ...): a sweep reads its model and
// cluster once, then edits the plan and calls check_plan for each.
Scenario load_setting(nlohmann::json doc, const std::string& file, const std::string& base_dir);

// `doc` with every preset name and "*.json" reference of a section
// (model, cluster.node, cluster.node.gpu, cluster.network, ...) replaced by
// the object it names, as the loader sees it; nothing is checked.
nlohmann::json expand_references(nlohmann::json doc, const std::string& file, const std::string& base_dir);

// The checks load_document makes of a plan against its model and cluster;
// throws ConfigError naming the file and the parallel.* key.
void check_plan(const Scenario& scenario);

// Why `v` is not a whole number from 1 to `max` ("expected a positive
// integer, got 0", "expected at most 10, got 11"), or empty when it is one:
// configs and sweep files word these bounds alike.
std::string positive_int_problem(const nlohmann::json& v, long long max);

// " (the config as changed by --set a=1, --set b=2)", or empty without
// overrides: a plan the schedule refuses or the simulator cannot simulate is
// the config as the overrides left it, so its message names them, as a
// config error names the --set it comes from.
std::string changed_by_sets(const std::vector<std::string>& overrides);

}  // namespace trainsim::config
