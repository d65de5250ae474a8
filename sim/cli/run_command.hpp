// `trainsim run`: simulate one training iteration of a config and report it.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace trainsim::cli {

struct RunArgs {
  std::string config;
  std::vector<std::string> overrides;
  std::string trace;
  std::string svg;
  bool json = false;
  bool ops = false;  // --ops: one layer op by op
  bool reverse_ties = false;  // --reverse-ties: simultaneous events the other way round
};

// Exit codes, also listed in `trainsim run --help`.
enum ExitCode : int {
  kOk = 0,
  kUsage = 1,
  kBadConfig = 2,
  kBadProgram = 3,
  kOutOfMemory = 4,
  kOutputError = 5,
  kSimulationError = 6,
};

void add_run_command(CLI::App& app, RunArgs& args);
int run_command(const RunArgs& args);

}  // namespace trainsim::cli
