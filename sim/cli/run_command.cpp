#include "cli/run_command.hpp"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <spdlog/spdlog.h>

#include "config/load.hpp"
#include "driver/whatif.hpp"
#include "report/chrome_trace.hpp"
#include "report/svg.hpp"
#include "schedule/check.hpp"

namespace trainsim::cli {

void add_run_command(CLI::App& app, RunArgs& args) {
  CLI::App* run = app.add_subcommand("run", "Simulate one training iteration of a config and print a summary");
  run->add_option("config", args.config, "Config file (JSON): sections cluster, model, parallel, options")
      ->required();
  run->add_option("--set", args.overrides,
                  "Override a config key for this run, e.g. --set parallel.schedule=gpipe --set parallel.pp=4 "
                  "(value as JSON, or a bare word for a string); repeatable");
  run->add_option("--trace", args.trace,
                  "Write the timeline as Chrome Trace Event JSON to this file (open in ui.perfetto.dev)")
      ->check([](const std::string& path) { return path.empty() ? std::string("needs a file name") : std::string(); });
  run->add_option("--svg", args.svg,
                  "Draw the schedule as simulated (one row per pipeline rank, a box per compute action) to this SVG "
                  "file")
      ->check([](const std::string& path) { return path.empty() ? std::string("needs a file name") : std::string(); });
  run->add_flag("--json", args.json, "Print the summary as one JSON object instead of text");
  run->footer(
      "Exit status: 0 success; 2 bad config (the message names the file and JSON path); 3 the schedule cannot\n"
      "run the plan; 4 out of memory with options.strict_memory; 5 the trace or SVG could not be written; 6 the plan\n"
      "cannot be simulated (a duration over 53 days, an iteration over 106 days, memory beyond 2^62 bytes, no route\n"
      "left around failed links, or the machine's own memory exhausted).");
}

int run_command(const RunArgs& args) {
  config::Scenario sc;
  try {
    sc = config::load_file(args.config, args.overrides);
  } catch (const config::ConfigError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kBadConfig;
  }
  spdlog::info("{}: {} on {} x {} ({} GPUs), tp={} pp={} dp={}, {}", sc.file, sc.model.name, sc.cluster.nodes,
               sc.cluster.node.name, sc.cluster.gpus(), sc.plan.tp, sc.plan.pp, sc.plan.dp, sc.plan.schedule);
  driver::WhatIf whatif;
  try {
    whatif = driver::simulate(sc, !args.trace.empty());
  } catch (const schedule::ProgramError& e) {
    fmt::print(stderr, "error: {}: schedule \"{}\" cannot run this plan: {}\n", sc.file, sc.plan.schedule, e.what());
    return kBadProgram;
  } catch (const std::invalid_argument& e) {
    // A fault naming no link, or asked of symmetric fidelity: the message names the key.
    fmt::print(stderr, "error: {}: {}\n", sc.file, e.what());
    return kBadConfig;
  } catch (const std::exception& e) {
    // e.g. times or sizes beyond what the simulator represents
    fmt::print(stderr, "error: {}: cannot simulate this plan: {}\n", sc.file, e.what());
    return kSimulationError;
  }
  const report::Summary summary = driver::summarize(sc, whatif, args.config);
  const lower::Simulation* sim = whatif.sim.get();

  if (args.json) {
    std::cout << report::to_json(summary).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
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

  if (!args.svg.empty()) {
    const std::filesystem::path path(args.svg);
    std::error_code ec;
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
    std::ofstream out(path, std::ios::binary);
    out << report::schedule_svg(*sim, summary);
    out.close();
    if (!out) {
      fmt::print(stderr, "error: cannot write SVG to {}\n", args.svg);
      return kOutputError;
    }
    if (!args.json) fmt::print("  svg                     {}\n", args.svg);
  }

  if (summary.oom && sc.options.strict_memory) {
    fmt::print(stderr,
               "error: {}: out of memory: peak {:.2f} GiB and the {:.2f} GiB CUDA context exceed {:.2f} GiB per GPU "
               "(options.strict_memory)\n",
               sc.file, summary.peak_memory_bytes / 1073741824.0, summary.cuda_context_bytes / 1073741824.0,
               summary.memory_capacity_bytes / 1073741824.0);
    return kOutOfMemory;
  }
  return kOk;
}

}  // namespace trainsim::cli
