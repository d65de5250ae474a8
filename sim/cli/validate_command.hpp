// `trainsim validate`: run every case of a validation case file, set the
// predictions against the measurements, and print the errors and MAPE.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace trainsim::cli {

struct ValidateArgs {
  std::string cases;
  bool json = false;
  bool verbose = false;
  double max_mape = -1.0;         // percent, performance; negative: not given
  double max_memory_mape = -1.0;  // percent, memory; negative: not given
  double max_layer_mape = -1.0;   // percent, one layer's times; negative: not given
  double max_case_error = -1.0;   // percent, the worst performance row's |error|; negative: not given
  // "GROUP=PCT": that group's performance rows are held to PCT instead of
  // max_case_error (a group known to be off, kept from loosening the others).
  std::vector<std::string> max_case_error_for;
  std::string only;               // glob on case ids; empty: every case
};

// The overall performance MAPE exceeds --max-mape, memory --max-memory-mape,
// one layer's times --max-layer-mape, or one performance row's error
// --max-case-error.
inline constexpr int kMapeExceeded = 7;

// Returns the subcommand, so that main can tell whether it was chosen.
CLI::App* add_validate_command(CLI::App& app, ValidateArgs& args);
int validate_command(const ValidateArgs& args);

}  // namespace trainsim::cli
