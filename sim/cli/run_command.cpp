#include "cli/run_command.hpp"

#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <spdlog/spdlog.h>

#include "config/load.hpp"
#include "lower/simulation.hpp"
#include "report/chrome_trace.hpp"
#include "report/summary.hpp"
#include "schedule/check.hpp"
#include "schedule/registry.hpp"
#include "workload/stage_costs.hpp"

namespace trainsim::cli {

void add_run_command(CLI::App& app, RunArgs& args) {
  CLI::App* run = app.add_subcommand("run", "Simulate one training iteration of a config and print a summary");
  run->add_option("config", args.config, "Config file (JSON): sections cluster, model, parallel, options")
      ->required();
  run->add_option("--set", args.overrides,
                  "Override a config key for this run, e.g. --set parallel.schedule=gpipe --set parallel.pp=4 "
                  "(value as JSON, or a bare word for a string); repeatable");
  run->add_option("--trace", args.trace,
                  "Write the timeline as Chrome Trace Event JSON to this file (open in ui.perfetto.dev)");
  run->add_flag("--json", args.json, "Print the summary as one JSON object instead of text");
  run->footer(
      "Exit status: 0 success; 2 bad config (the message names the file and JSON path); 3 the schedule produced\n"
      "an invalid program; 4 out of memory with options.strict_memory; 5 the trace could not be written.");
}

int run_command(const RunArgs& args) {
  config::Scenario sc;
  try {
    sc = config::load_file(args.config, args.overrides);
  } catch (const config::ConfigError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kBadConfig;
  }
  const auto& plan = sc.plan;
  spdlog::info("{}: {} on {} x {} ({} GPUs), tp={} pp={} dp={}, {}", sc.file, sc.model.name, sc.cluster.nodes,
               sc.cluster.node.name, sc.cluster.gpus(), plan.tp, plan.pp, plan.dp, plan.schedule);

  const auto wall_start = std::chrono::steady_clock::now();
  const workload::StageCosts costs = workload::stage_costs(sc.model, plan, sc.cluster);
  for (std::size_t s = 0; s < costs.stages.size(); ++s) {
    const auto& c = costs.stages[s];
    spdlog::debug("stage {}: F {:.3f} ms, I {:.3f} ms, W {:.3f} ms, activations {:.3f} GiB/micro-batch", s,
                  c.forward.to_seconds() * 1e3, c.input_grad.to_seconds() * 1e3, c.weight_grad.to_seconds() * 1e3,
                  c.activation_bytes / 1073741824.0);
  }

  const schedule::Shape shape = schedule::Shape::linear(plan.pp, plan.microbatches());
  const schedule::Schedule* sched = schedule::find_schedule(plan.schedule);
  schedule::Program program;
  try {
    program = sched->program(shape);
    schedule::check(program, shape);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}: schedule \"{}\" cannot run this plan: {}\n", sc.file, plan.schedule, e.what());
    return kBadProgram;
  }

  std::vector<int> gpu_of_rank;
  for (int r = 0; r < plan.pp; ++r) gpu_of_rank.push_back(plan.gpu_of(r));
  const auto sim = lower::lower(program, shape, costs, sc.cluster, gpu_of_rank);
  spdlog::info("lowered to {} tasks; simulating", sim->graph.size());
  lower::run(*sim);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  spdlog::info("simulated {} events in {:.3f} s", sim->timeline.events, wall);

  report::RunInfo info;
  info.config = args.config;
  info.model = sc.model.name;
  info.schedule = plan.schedule;
  info.tp = plan.tp;
  info.pp = plan.pp;
  info.dp = plan.dp;
  info.microbatch_size = plan.microbatch_size;
  info.global_batch = plan.global_batch;
  info.microbatches = plan.microbatches();
  info.seq = sc.model.seq;
  info.gpus = sc.cluster.gpus();
  info.peak_tflops = sc.cluster.node.gpu.peak_tflops;
  info.model_flops_per_iteration = costs.model_flops_per_iteration;
  info.sim_wall_s = wall;
  const report::Summary summary = report::summarize(*sim, info);

  if (args.json) {
    std::cout << report::to_json(summary).dump(2) << "\n";
  } else {
    std::cout << report::to_text(summary);
  }

  if (!args.trace.empty()) {
    const std::filesystem::path path(args.trace);
    std::error_code ec;
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
    std::ofstream out(path, std::ios::binary);
    out << report::chrome_trace(*sim, sc.cluster);
    out.close();
    if (!out) {
      fmt::print(stderr, "error: cannot write trace to {}\n", args.trace);
      return kOutputError;
    }
    if (!args.json) fmt::print("  trace                   {} (open in ui.perfetto.dev)\n", args.trace);
  }

  if (summary.oom && sc.options.strict_memory) {
    fmt::print(stderr, "error: {}: out of memory: peak {:.2f} GiB exceeds {:.2f} GiB per GPU (options.strict_memory)\n",
               sc.file, summary.peak_memory_bytes / 1073741824.0, summary.memory_capacity_bytes / 1073741824.0);
    return kOutOfMemory;
  }
  return kOk;
}

}  // namespace trainsim::cli
