// `trainsim sweep`: simulate every valid parallel plan of a sweep file and
// rank them; `trainsim sweep-merge`: rank the outputs of a sharded sweep as
// one run would.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace trainsim::cli {

struct SweepArgs {
  std::string sweep;
  int jobs = 0;  // 0: the hardware's threads
  int top = 10;
  bool top_given = false;
  bool no_prune = false;
  std::string csv;
  std::string json;
  bool quiet = false;
  bool pareto = false;
  std::string shard;  // "K/N"
  std::string baseline;
  std::string tolerance = "2%";
  bool tolerance_given = false;
  std::string plot;
  bool reverse_ties = false;  // --reverse-ties: simultaneous events the other way round
};

struct SweepMergeArgs {
  std::vector<std::string> files;
  int top = 10;
  std::string csv;
  std::string json;
  bool pareto = false;
  std::string baseline;
  std::string tolerance = "2%";
  bool tolerance_given = false;
  std::string plot;
};

// The best plan regressed against --baseline (or the baseline's best plan is no longer valid).
inline constexpr int kRegression = 8;
// Ctrl-C or SIGTERM ends a sweep with 128 + the signal (130, 143) once the
// results finished so far are written (cli/stop_signals.hpp).

CLI::App* add_sweep_command(CLI::App& app, SweepArgs& args);
CLI::App* add_sweep_merge_command(CLI::App& app, SweepMergeArgs& args);
int sweep_command(const SweepArgs& args);
int sweep_merge_command(const SweepMergeArgs& args);

}  // namespace trainsim::cli
