#include "cli/run_command.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <iostream>
#include <spdlog/spdlog.h>

#include "cli/progress_line.hpp"
#include "config/load.hpp"
#include "core/event_queue.hpp"
#include "driver/whatif.hpp"
#include "report/chrome_trace.hpp"
#include "report/layer_ops.hpp"
#include "report/output_file.hpp"
#include "report/svg.hpp"
#include "schedule/check.hpp"

namespace trainsim::cli {

void add_run_command(CLI::App& app, RunArgs& args) {
  CLI::App* run = app.add_subcommand("run", "Simulate one training iteration of a config and print a summary");
  run->add_option("config", args.config,
                  "Config file (JSON): sections cluster, model, parallel, options; - reads it from standard input "
                  "(its relative paths then from the current folder)")
      ->required();
  run->add_option("--set", args.overrides,
                  "Override a config key for this run, e.g. --set parallel.schedule=gpipe --set parallel.pp=4 "
                  "(value as JSON, or a bare word for a string; a file it names, e.g. --set model=m.json, is read "
                  "from the config file's folder, as in the file); repeatable");
  run->add_option("--trace", args.trace,
                  "Write the timeline as Chrome Trace Event JSON to this file (open in ui.perfetto.dev)")
      ->check([](const std::string& path) { return path.empty() ? std::string("needs a file name") : std::string(); });
  run->add_option("--svg", args.svg,
                  "Draw the schedule as simulated (one row per pipeline rank, a box per compute action) to this SVG "
                  "file")
      ->check([](const std::string& path) { return path.empty() ? std::string("needs a file name") : std::string(); });
  run->add_flag("--json", args.json, "Print the summary as one JSON object instead of text");
  run->add_flag("--ops", args.ops,
                "Also break one transformer layer down op by op: each op's forward, backward and recomputed time, "
                "what bounds it (tensor cores, memory, launches, or tp/cp/ep communication) and its rate (with "
                "--json: the key layer_ops)");
  run->add_flag("--reverse-ties", args.reverse_ties,
                "Deliver events of one picosecond last scheduled first instead of first scheduled first: every "
                "figure should come out the same (a check that none leans on the order of simultaneous events)");
  run->footer(
      "Exit status: 0 success; 2 bad config (the message names the file and JSON path); 3 the schedule cannot\n"
      "run the plan; 4 out of memory with options.strict_memory; 5 the trace, the SVG or standard output could not\n"
      "be written, or --trace or --svg names the config or the other output; 6 the plan cannot be simulated (a\n"
      "duration over 53 days, an iteration over 106 days, memory beyond 2^62 bytes, no route left around failed\n"
      "links, or more work than this machine's memory holds, refused before it starts).\n"
      "A run that lasts over 1.5 s shows its progress on stderr when stderr is a terminal.");
}

namespace {

// --trace and --svg: neither may replace the config, a file it reads, or the
// other output; each must be writable before the simulation starts.
int check_outputs(const RunArgs& args, const config::Scenario& sc) {
  std::vector<std::pair<std::string, std::string>> inputs;
  if (args.config != "-") inputs.emplace_back("config file", args.config);
  for (const std::string& file : sc.input_files) inputs.emplace_back("input " + file + " (read by the config)", file);
  const std::pair<std::string, std::string> outputs[] = {{"--trace", args.trace}, {"--svg", args.svg}};
  for (std::size_t i = 0; i < std::size(outputs); ++i) {
    const auto& [flag, path] = outputs[i];
    if (path.empty()) continue;
    for (const auto& [role, input] : inputs) {
      if (report::same_file(path, input)) {
        fmt::print(stderr, "error: {} {}: the same file as the {}, which it would overwrite\n", flag, path, role);
        return kOutputError;
      }
    }
    for (std::size_t k = 0; k < i; ++k) {
      if (!outputs[k].second.empty() && report::same_file(path, outputs[k].second)) {
        fmt::print(stderr, "error: {} {}: the same file as {} {}; expected a file of its own for each output\n", flag,
                   path, outputs[k].first, outputs[k].second);
        return kOutputError;
      }
    }
    // With --json, a second document after the summary's would make standard
    // output invalid JSON; the text summary may be followed (README).
    if (args.config == "-" && report::is_standard_input(path)) {
      fmt::print(stderr, "error: {} {}: the file the config was piped in from, which it would overwrite\n", flag,
                 path);
      return kOutputError;
    }
    if (args.json && report::is_standard_output(path)) {
      fmt::print(stderr,
                 "error: {} {}: standard output, where --json writes the summary (two JSON documents would not parse "
                 "as one); expected a file of its own\n",
                 flag, path);
      return kOutputError;
    }
    if (const std::string why = report::output_problem(path); !why.empty()) {
      fmt::print(stderr, "error: {} {}: cannot write to this path: {}\n", flag, path, why);
      return kOutputError;
    }
  }
  return kOk;
}

}  // namespace

int run_command(const RunArgs& args) {
  core::EventQueue::reverse_ties(args.reverse_ties);
  config::Scenario sc;
  try {
    sc = config::load_file(args.config, args.overrides);
  } catch (const config::ConfigError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kBadConfig;
  }
  if (const int status = check_outputs(args, sc); status != kOk) return status;
  if (args.ops && sc.layer_model) {
    fmt::print(stderr,
               "error: --ops: {} models a layer table (measured times per layer), which has no ops to break down; "
               "expected a transformer model\n",
               sc.file);
    return kBadConfig;
  }
  spdlog::info("{}: {} on {} x {} ({} GPUs), tp={} pp={} dp={}, {}", sc.file, sc.model.name, sc.cluster.nodes,
               sc.cluster.node.name, sc.cluster.gpus(), sc.plan.tp, sc.plan.pp, sc.plan.dp, sc.plan.schedule);
  driver::WhatIf whatif;
  // A progress line once a simulation has run for 1.5 s: large full-fidelity
  // runs take minutes.
  ProgressLine line("building", "pipeline copies", 1.5);
  driver::Controls controls;
  controls.record_link_rates = !args.trace.empty();
  controls.layer_ops = args.ops;
  if (line.enabled()) {
    controls.lowering_progress = [&line](std::size_t done, std::size_t total) {
      line.update(done, total);
      if (done == total) line.set_phase("simulating", "tasks");
    };
    controls.progress = [&line](std::size_t done, std::size_t total) { line.update(done, total); };
  }
  try {
    whatif = driver::simulate(sc, controls);
    line.clear();
  } catch (const schedule::ProgramError& e) {
    line.clear();
    fmt::print(stderr, "error: {}: schedule \"{}\" cannot run this plan: {}{}\n", sc.file, sc.plan.schedule, e.what(),
               config::changed_by_sets(args.overrides));
    return kBadProgram;
  } catch (const std::invalid_argument& e) {
    line.clear();
    // A fault naming no link, or asked of symmetric fidelity: the message names the key.
    fmt::print(stderr, "error: {}: {}\n", sc.file, config::excerpt(e.what(), 4096));
    return kBadConfig;
  } catch (const std::exception& e) {
    line.clear();
    // e.g. times or sizes beyond what the simulator represents
    fmt::print(stderr, "error: {}: cannot simulate this plan: {}{}\n", sc.file, e.what(), config::changed_by_sets(args.overrides));
    return kSimulationError;
  }
  const report::Summary summary = driver::summarize(sc, whatif, args.config == "-" ? "standard input" : args.config);
  const lower::Simulation* sim = whatif.sim.get();

  if (args.json) {
    nlohmann::json out = report::to_json(summary);
    if (args.ops) out["layer_ops"] = report::layer_ops_json(*whatif.costs);
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::cout << report::to_text(summary);
    if (args.ops) std::cout << report::layer_ops_text(*whatif.costs);
  }

  if (!args.trace.empty()) {
    if (const std::string why = report::write_output_file(args.trace, report::chrome_trace(*sim, sc.cluster));
        !why.empty()) {
      fmt::print(stderr, "error: cannot write trace to {}: {}\n", args.trace, why);
      return kOutputError;
    }
    if (!args.json) fmt::print("  trace                   {} (open in ui.perfetto.dev)\n", args.trace);
  }

  if (!args.svg.empty()) {
    if (const std::string why = report::write_output_file(args.svg, report::schedule_svg(*sim, summary)); !why.empty()) {
      fmt::print(stderr, "error: cannot write SVG to {}: {}\n", args.svg, why);
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
