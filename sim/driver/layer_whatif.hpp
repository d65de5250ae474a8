// A what-if of a layer-table model (a CNN): every layer data-parallel on every
// GPU, or burst parallelism (each layer on the GPUs the planner, or the
// config, gives it), with an optional background job on the idle GPUs.
// driver::simulate and driver::summarize hand such scenarios here.
#pragma once

#include <string>

#include "config/scenario.hpp"
#include "driver/whatif.hpp"
#include "report/summary.hpp"
#include "workload/burst_planner.hpp"

namespace trainsim::driver {

struct LayerRun {
  std::string mode;  // "data parallel", "burst (planned)", "burst (given)"
  workload::BurstCosts costs;
  workload::BurstPlan plan;
  double amplification_limit = 0.0;  // 0 unless the planner chose the plan
  double background_step_s = 0.0;    // one iteration of the background job on one GPU
};

// The burst plan of `sc` (parallel.burst.layer_gpus, or the planner's within
// parallel.burst.amplification_limit), whatever its schedule.
LayerRun burst_plan(const config::Scenario& sc);
// Every layer on every GPU, under the same cost model.
workload::BurstPlan data_parallel_plan(const config::Scenario& sc, const workload::BurstCosts& costs);

WhatIf simulate_layers(const config::Scenario& sc, const Controls& controls);
report::Summary summarize_layers(const config::Scenario& sc, const WhatIf& whatif, const std::string& config_label);

}  // namespace trainsim::driver
