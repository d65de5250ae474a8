#include "cli/validate_command.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

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
  cmd->add_option("--max-mape", args.max_mape,
                  "Exit with status 7 when the overall performance MAPE exceeds this many percent")
      ->check([](const std::string& text) {
        // CLI11's own range check would print the largest double as the bound.
        char* end = nullptr;
        const double x = std::strtod(text.c_str(), &end);
        const bool ok = !text.empty() && end == text.c_str() + text.size() && std::isfinite(x) && x >= 0.0;
        return ok ? std::string() : "expected a percentage >= 0, e.g. 15, got \"" + text + "\"";
      });
  cmd->add_option("--only", args.only, "Run only the cases whose id matches this glob, e.g. 'megatron_*'");
  cmd->add_flag("--verbose", args.verbose, "Also print each case's source, assumptions and notes");
  cmd->footer(
      "Exit status: 0 it ran (whatever the errors); 2 a bad case file, or a case whose config does not load or\n"
      "simulate (the message names the case file, the JSON path and the case id); 7 the overall performance MAPE\n"
      "exceeds --max-mape.");
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
  const bool tty = isatty(STDERR_FILENO) == 1;
  bool shown = false;
  auto progress = [&](std::size_t done, std::size_t total) {
    fmt::print(stderr, "\rvalidate: {}/{} cases simulated", done, total);
    std::fflush(stderr);
    shown = true;
  };
  auto clear_progress = [&] {
    if (shown) fmt::print(stderr, "\r\033[K");  // back to the start of the line, and erase it
  };
  std::vector<validate::Prediction> predictions;
  try {
    predictions = validate::predict(file, selected, tty ? std::function(progress) : nullptr);
    clear_progress();
  } catch (const config::ConfigError& e) {
    clear_progress();
    fmt::print(stderr, "error: {}\n", e.what());
    return kBadConfig;
  }
  const validate::Result result = validate::compare(file, selected, predictions);

  const bool limit = args.max_mape >= 0.0;
  const bool exceeded = limit && (result.performance.rows == 0 || result.performance.overall_pct > args.max_mape);
  if (args.json) {
    nlohmann::json j = validate::to_json(result);
    if (limit) {
      j["max_mape_pct"] = args.max_mape;
      j["within_max_mape"] = !exceeded;
    }
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::cout << validate::to_text(result, args.verbose);
    if (limit && !exceeded) {
      fmt::print("\noverall performance MAPE {:.2f}% is within --max-mape {:g}%\n", result.performance.overall_pct,
                 args.max_mape);
    }
  }
  std::cout.flush();
  if (exceeded) {
    if (result.performance.rows == 0) {
      fmt::print(stderr, "error: {}: --max-mape {:g}: no performance measurement among the cases run\n", file.path,
                 args.max_mape);
    } else {
      fmt::print(stderr, "error: {}: overall performance MAPE {:.2f}% exceeds --max-mape {:g}%\n", file.path,
                 result.performance.overall_pct, args.max_mape);
    }
    return kMapeExceeded;
  }
  return kOk;
}

}  // namespace trainsim::cli
