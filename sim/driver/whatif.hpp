// One what-if, start to end: a scenario's stage costs, its schedule's program
// (with communication added and checked), lowered and simulated. The command
// line and the tests call this; a sweep calls it once per plan.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/scenario.hpp"
#include "driver/plan_cache.hpp"
#include "lower/simulation.hpp"
#include "report/summary.hpp"
#include "schedule/action.hpp"
#include "workload/stage_costs.hpp"

namespace trainsim::driver {

struct LayerRun;  // driver/layer_whatif.hpp

// No stages: a layer-table model's what-if, which costs none this way.
const std::shared_ptr<const workload::StageCosts>& no_stage_costs();

struct WhatIf {
  // Shared, not copied: a sweep's plans that differ only in their schedule
  // read one entry of the plan cache. Never null.
  std::shared_ptr<const workload::StageCosts> costs = no_stage_costs();
  schedule::Shape shape;
  std::shared_ptr<const schedule::Program> program;  // with communication
  std::unique_ptr<lower::Simulation> sim;
  double wall_s = 0.0;  // wall-clock time the costing, checks and simulation took
  std::shared_ptr<const LayerRun> layers;  // a layer-table model's plan (else empty)
};

struct Controls {
  bool record_link_rates = false;  // keep every link's rate over time, for the trace
  bool merge_bucket_trains = false;  // lower::Options's: for callers that show no task by itself
  bool memory_timelines = true;      // lower::Options's: off for callers that show no memory timeline
  bool task_info = true;             // lower::Options's: off for callers that read the totals alone
  // Work past these is refused before it is built: by default what this
  // machine's memory holds.
  lower::WorkLimits limits = lower::machine_limits();
  // While the task graph is built: (copies of the pipeline lowered, copies
  // in all), after each copy.
  std::function<void(std::size_t, std::size_t)> lowering_progress;
  // While it runs: (tasks finished, tasks in all), every 1,024 events.
  std::function<void(std::size_t, std::size_t)> progress;
  // A sweep's shared work (driver/plan_cache.hpp), or null: the checked
  // program of a schedule that does not read the stages' times, and, under
  // `costs_key` when not empty, the stage costs (the caller's key must name
  // everything the costs depend on: the cluster setting and the plan but its
  // schedule, whose placement it names instead).
  PlanCache* cache = nullptr;
  std::string costs_key;
  // Also cost one layer op by op (workload::StageCosts::layer_ops), for
  // `trainsim run --ops`.
  bool layer_ops = false;
};

// Throws schedule::ProgramError when the schedule cannot run the plan,
// std::overflow_error when times or sizes leave the simulator's range, and
// lower::WorkTooLarge when the work would not fit the limits.
WhatIf simulate(const config::Scenario& scenario, const Controls& controls);

// The same in two steps, so that a caller can look at what is about to be
// simulated first (a sweep finds plans whose simulations are the same):
// prepare() costs the stages and lays out the checked program; simulate()
// lowers and runs them. Not for a layer-table model.
struct Prepared {
  std::shared_ptr<const workload::StageCosts> costs;  // never null
  schedule::Shape shape;
  std::shared_ptr<const CheckedProgram> checked;
  std::chrono::steady_clock::time_point start;  // when prepare() began, for WhatIf::wall_s
};
Prepared prepare(const config::Scenario& scenario, const Controls& controls);
WhatIf simulate(const config::Scenario& scenario, Prepared&& prepared, const Controls& controls);
// Plans that differ only in what they recompute (a sweep's recompute axis),
// each prepared (prepare()), with one cluster setting: where they make the
// same tasks, one lowering serves them all (lower::SharedLowering), else
// each is lowered on its own; each what-if is the one simulate() gives.
// `done` takes each what-if as it is simulated (index into `scenarios`), so
// that no more than two simulations are held at once. Not for a
// layer-table model.
void simulate_alike(const std::vector<const config::Scenario*>& scenarios, std::vector<Prepared>&& prepared,
                    const Controls& controls, const std::function<void(std::size_t, WhatIf&&)>& done);
// With the machine's limits and no progress; `record_link_rates` as above.
WhatIf simulate(const config::Scenario& scenario, bool record_link_rates = false);

// The summary of a simulated what-if; `config_label` names the config as the user gave it.
report::Summary summarize(const config::Scenario& scenario, const WhatIf& whatif, const std::string& config_label,
                          report::Detail detail = report::Detail::kFull);

}  // namespace trainsim::driver
