// trainsim: what-if simulation of distributed DNN training.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/calibration_report_command.hpp"
#include "cli/export_command.hpp"
#include "cli/import_command.hpp"
#include "cli/plan_burst_command.hpp"
#include "cli/run_command.hpp"
#include "cli/sweep_command.hpp"
#include "cli/validate_command.hpp"
#include "config/presets.hpp"
#include "config/reader.hpp"
#include "core/nearest_name.hpp"
#include "schedule/registry.hpp"

namespace {

void print_schedules() {
  for (const auto& s : trainsim::schedule::all_schedules()) {
    fmt::print("{:<17} {}\n", s->name(), s->description());
  }
  fmt::print("{:<17} {}\n", "csv:PATH", "a schedule read from a CSV file in torch.distributed.pipelining's form");
  fmt::print("{:<17} {}\n", "burst",
             "Burst parallelism (DeepPool): each layer data-parallel on its own GPUs, for layer-table models "
             "(see plan-burst)");
}

void print_presets() {
  for (const char* kind : {"gpu", "node", "network", "model"}) {
    fmt::print("{}:\n", kind);
    for (const auto& name : trainsim::config::preset_names(kind)) fmt::print("  {}\n", name);
  }
}

// A command's output is its result: when standard output cannot take it (a
// full disk, a closed pipe), the command fails with status 5 instead of
// exiting 0 with the result lost. A command that failed already keeps its status.
int checked_stdout(int status) {
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int error = errno;
  if (flushed && std::cout && !std::ferror(stdout)) return status;
  fmt::print(stderr, "error: cannot write to standard output{}\n", error != 0 ? ": " + std::string(std::strerror(error)) : "");
  return status == trainsim::cli::kOk ? trainsim::cli::kOutputError : status;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "trainsim: simulate distributed training of a transformer on a GPU cluster.\n"
      "Tells how long one iteration takes under a parallel plan, where GPUs sit idle,\n"
      "and how much memory each GPU needs."};
  app.set_version_flag("--version", "trainsim " TRAINSIM_VERSION);
  app.require_subcommand(1);
  app.fallthrough();  // --log-level may also follow the subcommand
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "Logging on stderr: trace, debug, info, warn, error, critical, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  app.footer("Example: trainsim run configs/examples/gpt3-175b-1024xa100.json --set parallel.schedule=gpipe");

  trainsim::cli::RunArgs run_args;
  trainsim::cli::add_run_command(app, run_args);
  trainsim::cli::PlanBurstArgs plan_burst_args;
  CLI::App* plan_burst = trainsim::cli::add_plan_burst_command(app, plan_burst_args);
  CLI::App* schedules = app.add_subcommand("schedules", "List the pipeline schedules, one line each");
  schedules->footer("Example: trainsim schedules export zb-v --pp 4 --vp 2 --microbatches 8 > zb-v.csv");
  trainsim::cli::ExportArgs export_args;
  CLI::App* export_schedule = trainsim::cli::add_export_command(*schedules, export_args);
  CLI::App* presets = app.add_subcommand("presets", "List the built-in GPU, node, network and model presets");
  presets->footer(
      "A config names a preset instead of the values, e.g.\n"
      "  trainsim run configs/examples/gpt-1.7b-8xa100.json --set cluster.node=dgx-h100 --set model=gpt-3.6b");
  trainsim::cli::ValidateArgs validate_args;
  CLI::App* validate = trainsim::cli::add_validate_command(app, validate_args);
  trainsim::cli::SweepArgs sweep_args;
  CLI::App* sweep = trainsim::cli::add_sweep_command(app, sweep_args);
  trainsim::cli::ImportHfArgs import_hf_args;
  trainsim::cli::ImportMegatronArgs import_megatron_args;
  trainsim::cli::ImportTorchTitanArgs import_torchtitan_args;
  const trainsim::cli::ImportCommands imports =
      trainsim::cli::add_import_command(app, import_hf_args, import_megatron_args, import_torchtitan_args);
  trainsim::cli::SweepMergeArgs sweep_merge_args;
  CLI::App* sweep_merge = trainsim::cli::add_sweep_merge_command(app, sweep_merge_args);
  trainsim::cli::CalibrationReportArgs calibration_report_args;
  CLI::App* calibration_report = trainsim::cli::add_calibration_report_command(app, calibration_report_args);

  // A first word that is no command: CLI11 would only say that one is
  // required, not which word it could not take.
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> commands;
    for (const CLI::App* c : app.get_subcommands({})) commands.push_back(c->get_name());
    if (std::find(commands.begin(), commands.end(), argv[1]) == commands.end()) {
      const auto near = trainsim::core::nearest_name(argv[1], commands);
      fmt::print(stderr, "error: unknown command \"{}\"{}; expected one of: {} (see trainsim --help)\n",
                 argv[1], near ? " (did you mean \"" + *near + "\"?)" : std::string(),
                 trainsim::config::detail::join(commands, ", "));
      return 1;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the message (or --help) and returns its own code per kind
    // of error (105, 106, 109, ...); every usage error exits 1, --help 0.
    return app.exit(e) == 0 ? 0 : 1;
  }

  auto logger = spdlog::stderr_color_mt("trainsim");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("[%l] %v");
  spdlog::set_level(spdlog::level::from_str(log_level));

  const auto dispatch = [&]() -> int {
    if (export_schedule->parsed()) return trainsim::cli::export_command(export_args);
    if (imports.hf->parsed()) return trainsim::cli::import_hf_command(import_hf_args);
    if (imports.megatron->parsed()) return trainsim::cli::import_megatron_command(import_megatron_args);
    if (imports.torchtitan->parsed()) return trainsim::cli::import_torchtitan_command(import_torchtitan_args);
    if (schedules->parsed()) {
      print_schedules();
      return 0;
    }
    if (presets->parsed()) {
      print_presets();
      return 0;
    }
    if (plan_burst->parsed()) return trainsim::cli::plan_burst_command(plan_burst_args);
    if (validate->parsed()) return trainsim::cli::validate_command(validate_args);
    if (sweep->parsed()) return trainsim::cli::sweep_command(sweep_args);
    if (sweep_merge->parsed()) return trainsim::cli::sweep_merge_command(sweep_merge_args);
    if (calibration_report->parsed()) return trainsim::cli::calibration_report_command(calibration_report_args);
    return trainsim::cli::run_command(run_args);
  };
  try {
    return checked_stdout(dispatch());
  } catch (const std::exception& e) {
    // Anything the commands do not turn into a specific message (e.g. out of memory).
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
