#include "cli/plan_burst_command.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <iostream>
#include <optional>

#include "cli/run_command.hpp"
#include "config/load.hpp"
#include "driver/layer_whatif.hpp"

namespace trainsim::cli {

CLI::App* add_plan_burst_command(CLI::App& app, PlanBurstArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "plan-burst", "Print the burst planner's GPUs per layer and predicted iteration time (layer-table models)");
  cmd->add_option("config", args.config, "Config file (JSON) with a layer-table model, e.g. model \"vgg-16\"")->required();
  cmd->add_option("--set", args.overrides, "Override a config key, e.g. --set parallel.burst.amplification_limit=4; repeatable");
  cmd->add_flag("--json", args.json, "Print the plan as one JSON object instead of a table");
  cmd->footer("Exit status: 0 success; 2 bad config, or a model that is not a layer table; 6 the plan is beyond what\n"
              "the simulator represents.");
  return cmd;
}

int plan_burst_command(const PlanBurstArgs& args) {
  config::Scenario sc;
  try {
    sc = config::load_file(args.config, args.overrides);
  } catch (const config::ConfigError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kBadConfig;
  }
  if (!sc.layer_model) {
    fmt::print(stderr, "error: {}: model: plan-burst needs a layer-table model (model.arch = \"layers\"), such as "
                       "\"vgg-16\" or \"resnet-50\"\n", sc.file);
    return kBadConfig;
  }
  driver::LayerRun run;
  std::optional<workload::BurstPlan> dp;  // none when some GPU would have no sample
  try {
    run = driver::burst_plan(sc);
    if (sc.plan.global_batch >= sc.cluster.gpus()) dp = driver::data_parallel_plan(sc, run.costs);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}: cannot plan: {}\n", sc.file, e.what());
    return kSimulationError;
  }
  const int batch = sc.plan.global_batch;
  const int gpus = sc.cluster.gpus();
  const workload::BurstPlan& p = run.plan;
  if (args.json) {
    nlohmann::json layers = nlohmann::json::array();
    for (std::size_t i = 0; i < p.layers.size(); ++i) {
      const auto& l = p.layers[i];
      const auto range = workload::sample_range(batch, l.gpus, 0);
      layers.push_back({{"name", run.costs.names[i]},
                        {"gpus", l.gpus},
                        {"samples_per_gpu", range.second - range.first},
                        {"compute_s", l.compute.to_seconds()},
                        {"amplification", l.amplification},
                        {"transfer_in_s", l.transfer_in.to_seconds()},
                        {"all_reduce_s", l.all_reduce.to_seconds()}});
    }
    nlohmann::json j = {{"config", args.config},
                        {"model", sc.layer_model->name},
                        {"global_batch", batch},
                        {"gpus", gpus},
                        {"mode", run.mode},
                        {"candidate_gpus", run.costs.widths},
                        {"amplification_limit", run.amplification_limit},
                        {"layers", layers},
                        {"predicted_iteration_s", p.predicted.to_seconds()},
                        {"exposed_all_reduce_s", p.exposed_reduce.to_seconds()},
                        {"amplification", p.amplification},
                        {"data_parallel_iteration_s", dp ? nlohmann::json(dp->predicted.to_seconds()) : nlohmann::json()}};
    std::cout << j.dump(2) << "\n";
    return kOk;
  }
  std::string widths;
  for (int w : run.costs.widths) widths += fmt::format("{}{}", widths.empty() ? "" : ", ", w);
  fmt::print("trainsim plan-burst: {} — {}, global batch {} on {} GPUs\n", args.config, sc.layer_model->name, batch, gpus);
  fmt::print("  {}; GPUs per layer from {}; amplification limit {}\n", run.mode, widths,
             run.amplification_limit > 0.0 ? fmt::format("{:.2f}", run.amplification_limit) : "(not used)");
  fmt::print("    {:<16} {:>5} {:>12} {:>10} {:>14} {:>10} {:>14}\n", "layer", "GPUs", "samples/GPU", "time ms",
             "amplification", "input ms", "all-reduce ms");
  for (std::size_t i = 0; i < p.layers.size(); ++i) {
    const auto& l = p.layers[i];
    const auto range = workload::sample_range(batch, l.gpus, 0);
    fmt::print("    {:<16} {:>5} {:>12} {:>10.4f} {:>14.2f} {:>10.4f} {:>14.4f}\n", run.costs.names[i], l.gpus,
               range.second - range.first, l.compute.to_seconds() * 1e3, l.amplification,
               l.transfer_in.to_seconds() * 1e3, l.all_reduce.to_seconds() * 1e3);
  }
  fmt::print("  {:<28}{:.4f} ms (all-reduce exposed after the backward: {:.4f} ms)\n", "predicted iteration time",
             p.predicted.to_seconds() * 1e3, p.exposed_reduce.to_seconds() * 1e3);
  if (dp) {
    fmt::print("  {:<28}{:.4f} ms ({:.2f}x the burst plan's time)\n", fmt::format("data parallel on {} GPUs", gpus),
               dp->predicted.to_seconds() * 1e3, dp->predicted.to_seconds() / p.predicted.to_seconds());
  } else {
    fmt::print("  {:<28}not possible: {} samples for {} GPUs\n", "data parallel", batch, gpus);
  }
  fmt::print("  {:<28}{:.2f} (GPU-time against one GPU{})\n", "GPU-time amplification", p.amplification,
             dp ? fmt::format("; data parallel {:.2f}", dp->amplification) : "");
  return kOk;
}

}  // namespace trainsim::cli
