// `trainsim plan-burst`: the burst planner's GPU assignment for a layer-table
// model, layer by layer, with its predicted iteration time against data
// parallelism on every GPU.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace trainsim::cli {

struct PlanBurstArgs {
  std::string config;
  std::vector<std::string> overrides;
  bool json = false;
};

// Returns the subcommand, so that main can tell whether it was chosen.
CLI::App* add_plan_burst_command(CLI::App& app, PlanBurstArgs& args);
int plan_burst_command(const PlanBurstArgs& args);

}  // namespace trainsim::cli
