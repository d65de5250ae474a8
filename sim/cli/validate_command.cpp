#include "cli/validate_command.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <vector>

#include "cli/progress_line.hpp"
#include "cli/run_command.hpp"
#include "validate/cases.hpp"
#include "validate/output.hpp"
#include "validate/validate.hpp"

namespace trainsim::cli {

CLI::App* add_validate_command(CLI::App& app, ValidateArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "validate", "Run a file of cases (configs with measured results) and print prediction errors and MAPE");
  cmd->add_option("cases", args.cases, "Case file (JSON): cases, each a config and what was measured; orderings")
      ->required();
  cmd->add_flag("--json", args.json, "Print the rows, MAPE and orderings as one JSON object instead of tables");
  // CLI11's own range check would print the largest double as the bound.
  // A plain decimal: no sign, space or hexadecimal, which strtod would take.
  auto percentage = [](const std::string& text) {
    char* end = nullptr;
    const double x = std::strtod(text.c_str(), &end);
    const bool plain = !text.empty() && (std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.') &&
                       text.find_first_of("xX") == std::string::npos;
    const bool ok = plain && end == text.c_str() + text.size() && std::isfinite(x) && x >= 0.0;
    return ok ? std::string() : "expected a percentage >= 0, e.g. 15, got \"" + text + "\"";
  };
  cmd->add_option("--max-mape", args.max_mape,
                  "Exit with status 7 when the overall performance MAPE exceeds this many percent")
      ->check(percentage);
  cmd->add_option("--max-memory-mape", args.max_memory_mape,
                  "Exit with status 7 when the overall memory MAPE exceeds this many percent")
      ->check(percentage);
  cmd->add_option("--max-layer-mape", args.max_layer_mape,
                  "Exit with status 7 when the overall MAPE of one layer's times exceeds this many percent")
      ->check(percentage);
  cmd->add_option("--max-case-error", args.max_case_error,
                  "Exit with status 7 when any one performance measurement is off by more than this many percent")
      ->check(percentage);
  cmd->add_option("--max-case-error-for", args.max_case_error_for,
                  "GROUP=PCT: hold that group's performance rows to PCT percent instead of --max-case-error "
                  "(repeatable)")
      ->check([percentage](const std::string& text) {
        const auto eq = text.rfind('=');
        if (eq == std::string::npos || eq == 0) return "expected GROUP=PCT, e.g. \"Zero bubble Table 4=10\", got \"" + text + "\"";
        return percentage(text.substr(eq + 1));
      });
  cmd->add_option("--only", args.only, "Run only the cases whose id matches this glob, e.g. 'megatron_*'");
  cmd->add_flag("--verbose", args.verbose, "Also print each case's source, assumptions and notes");
  cmd->footer(
      "Exit status: 0 it ran (whatever the errors); 2 a bad case file, or a case whose config does not load or\n"
      "simulate (the message names the case file, the JSON path and the case id); 7 the overall performance MAPE\n"
      "exceeds --max-mape, the memory MAPE --max-memory-mape, the layer time MAPE --max-layer-mape, or one\n"
      "performance measurement's error --max-case-error.");
  return cmd;
}

int validate_command(const ValidateArgs& args) {
  validate::CaseFile file;
  try {
    file = validate::load_cases(args.cases);
  } catch (const config::ConfigError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kBadConfig;
  }
  const std::vector<std::size_t> selected = validate::select_cases(file, args.only);
  if (selected.empty()) {
    fmt::print(stderr, "error: {}: --only \"{}\": no case id matches\n", file.path, args.only);
    return kBadConfig;
  }

  // Progress for a person watching; nothing when stderr is a file or a pipe.
  ProgressLine line("validate", "cases simulated");
  auto progress = [&](std::size_t done, std::size_t total) { line.update(done, total); };
  std::vector<validate::Prediction> predictions;
  try {
    predictions = validate::predict(file, selected, line.enabled() ? std::function(progress) : nullptr);
    line.clear();
  } catch (const config::ConfigError& e) {
    line.clear();
    fmt::print(stderr, "error: {}\n", e.what());
    return kBadConfig;
  }
  const validate::Result result = validate::compare(file, selected, predictions);

  // --max-case-error-for: groups held to limits of their own; --max-case-error
  // then covers the performance rows of the other groups.
  std::map<std::string, double> group_limit;
  for (const std::string& spec : args.max_case_error_for) {
    const auto eq = spec.rfind('=');
    group_limit[spec.substr(0, eq)] = std::strtod(spec.c_str() + eq + 1, nullptr);
  }
  struct GroupWorst {
    std::optional<validate::Row> worst;
    std::size_t rows = 0;
  };
  std::map<std::string, GroupWorst> group_worst;
  validate::Mape outside = result.performance;
  outside.rows = 0;
  outside.worst.reset();
  for (const validate::Row& row : result.rows) {
    if (validate::kind(row.metric) != validate::MetricKind::kPerformance) continue;
    const bool own = group_limit.count(row.group) > 0;
    GroupWorst& g = group_worst[row.group];
    std::optional<validate::Row>& worst = own ? g.worst : outside.worst;
    (own ? g.rows : outside.rows) += 1;
    if (!worst || std::abs(row.error_pct) > std::abs(worst->error_pct)) worst = row;
  }
  for (const auto& [group, pct] : group_limit) {
    if (group_worst[group].rows == 0) {
      fmt::print(stderr, "error: {}: --max-case-error-for \"{}={:g}\": no performance row of group \"{}\" among the "
                         "cases run\n",
                 file.path, group, pct, group);
      return kBadConfig;
    }
  }

  // One limit per figure checked: a kind's overall MAPE, or its worst row's
  // |error|. A limit with no row of its kind is not met.
  struct Limit {
    const char* option;
    const char* json_key;
    double pct;
    const validate::Mape& mape;
    bool worst_row = false;  // the largest |error| of one row rather than the mean
    std::string_view kind() const { return validate::kind_title(mape.kind); }
    bool given() const { return pct >= 0.0; }
    double value() const { return worst_row ? std::abs(mape.worst->error_pct) : mape.overall_pct; }
    std::string figure() const {
      return worst_row ? fmt::format("worst {} error", kind()) : fmt::format("overall {} MAPE", kind());
    }
    // Compared as printed (two decimals), so the text never says "25.00% exceeds 25%".
    bool exceeded() const { return given() && (mape.rows == 0 || std::round(value() * 100.0) / 100.0 > pct); }
  };
  const Limit limits[] = {
      {"--max-mape", "max_mape", args.max_mape, result.performance},
      {"--max-memory-mape", "max_memory_mape", args.max_memory_mape, result.memory},
      {"--max-layer-mape", "max_layer_mape", args.max_layer_mape, result.layer_time},
      {"--max-case-error", "max_case_error", args.max_case_error, group_limit.empty() ? result.performance : outside,
       true},
  };
  if (args.json) {
    nlohmann::json j = validate::to_json(result);
    for (const Limit& l : limits) {
      if (!l.given()) continue;
      j[fmt::format("{}_pct", l.json_key)] = l.pct;
      j[fmt::format("within_{}", l.json_key)] = !l.exceeded();
    }
    if (!group_limit.empty()) {
      nlohmann::json groups = nlohmann::json::object();
      for (const auto& [group, pct] : group_limit) {
        const double err = std::abs(group_worst[group].worst->error_pct);
        groups[group] = {{"max_case_error_pct", pct},
                         {"worst_error_pct", err},
                         {"within", std::round(err * 100.0) / 100.0 <= pct}};
      }
      j["max_case_error_for"] = std::move(groups);
    }
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::cout << validate::to_text(result, args.verbose);
    for (const Limit& l : limits) {
      if (l.given() && !l.exceeded()) {
        fmt::print("\n{} {:.2f}% is within {} {:g}%\n", l.figure(), l.value(), l.option, l.pct);
      }
    }
  }
  std::cout.flush();
  bool failed = false;
  std::vector<validate::MetricKind> without_rows;  // each kind's "no measurement" said once
  for (const Limit& l : limits) {
    if (!l.exceeded()) continue;
    failed = true;
    if (l.mape.rows == 0) {
      if (std::find(without_rows.begin(), without_rows.end(), l.mape.kind) != without_rows.end()) continue;
      without_rows.push_back(l.mape.kind);
      fmt::print(stderr, "error: {}: {} {:g}: no {} measurement among the cases run\n", file.path, l.option, l.pct,
                 l.kind());
    } else {
      const std::string which = l.worst_row ? fmt::format(" ({} {})", l.mape.worst->case_id,
                                                          validate::name(l.mape.worst->metric))
                                            : std::string();
      fmt::print(stderr, "error: {}: {} {:.2f}%{} exceeds {} {:g}%\n", file.path, l.figure(), l.value(), which,
                 l.option, l.pct);
    }
  }
  for (const auto& [group, pct] : group_limit) {
    const validate::Row& w = *group_worst[group].worst;
    const double err = std::abs(w.error_pct);
    if (std::round(err * 100.0) / 100.0 > pct) {
      failed = true;
      fmt::print(stderr, "error: {}: worst performance error in group \"{}\" {:.2f}% ({} {}) exceeds "
                         "--max-case-error-for {:g}%\n",
                 file.path, group, err, w.case_id, validate::name(w.metric), pct);
    } else if (!args.json) {
      fmt::print("worst performance error in group \"{}\" {:.2f}% is within --max-case-error-for {:g}%\n", group, err,
                 pct);
    }
  }
  if (failed) return kMapeExceeded;
  return kOk;
}

}  // namespace trainsim::cli
