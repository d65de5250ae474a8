// One what-if, start to end: a scenario's stage costs, its schedule's program
// (with communication added and checked), lowered and simulated. The command
// line and the tests call this; a sweep calls it once per plan.
#pragma once

#include <memory>
#include <string>

#include "config/scenario.hpp"
#include "lower/simulation.hpp"
#include "report/summary.hpp"
#include "schedule/action.hpp"
#include "workload/stage_costs.hpp"

namespace trainsim::driver {

struct LayerRun;  // driver/layer_whatif.hpp

struct WhatIf {
  workload::StageCosts costs;
  schedule::Shape shape;
  schedule::Program program;  // with communication
  std::unique_ptr<lower::Simulation> sim;
  double wall_s = 0.0;  // wall-clock time the costing, checks and simulation took
  std::shared_ptr<const LayerRun> layers;  // a layer-table model's plan (else empty)
};

// Throws schedule::ProgramError when the schedule cannot run the plan, and
// std::overflow_error when times or sizes leave the simulator's range.
// `record_link_rates` keeps every link's rate over time, for the trace.
WhatIf simulate(const config::Scenario& scenario, bool record_link_rates = false);

// The summary of a simulated what-if; `config_label` names the config as the user gave it.
report::Summary summarize(const config::Scenario& scenario, const WhatIf& whatif, const std::string& config_label);

}  // namespace trainsim::driver
