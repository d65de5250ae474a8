#include "cli/export_command.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <iostream>
#include <stdexcept>

#include "cli/run_command.hpp"
#include "cli/whole_number.hpp"
#include "config/schema.hpp"
#include "core/checked.hpp"
#include "schedule/check.hpp"
#include "schedule/communication.hpp"
#include "schedule/csv.hpp"
#include "schedule/registry.hpp"

namespace trainsim::cli {

namespace {
// As the config's bound on pp x vp x micro-batches: a program this size is
// written in well under a second.
constexpr long long kMaxStageMicrobatches = 2'500'000;
}  // namespace

CLI::App* add_export_command(CLI::App& schedules, ExportArgs& args) {
  CLI::App* cmd = schedules.add_subcommand(
      "export", "Write a schedule's compute actions as CSV (one row per pipeline rank, torch.distributed.pipelining's "
                "form) to stdout; run it with parallel.schedule = \"csv:FILE\"");
  cmd->add_option("name", args.name, "Schedule name (see `trainsim schedules`)")->required();
  cmd->add_option("--pp", args.pp, "Pipeline ranks")->required()->check(whole_number(1, 10'000'000));
  cmd->add_option("--microbatches", args.microbatches, "Micro-batches per iteration")
      ->required()
      ->check(whole_number(1, 10'000'000));
  cmd->add_option("--vp", args.vp, "Virtual stages per rank (stage s on rank s mod pp, or in a V for zb-v)")
      ->check(whole_number(1, 10'000'000))
      ->capture_default_str();
  cmd->footer(
      "Exit status: 0 success; 2 no schedule of that name; 3 the schedule cannot lay out that shape, or pp x vp x\n"
      "micro-batches is more than the simulator's 2500000; 5 stdout could not be written.");
  return cmd;
}

int export_command(const ExportArgs& args) {
  const schedule::Schedule* sched = schedule::find_schedule(args.name);
  // `trainsim schedules` lists these two beside the pipeline schedules.
  if (args.name == "burst") {
    fmt::print(stderr, "error: \"burst\" places each layer of a layer-table model on GPUs of its own; it has no "
                       "pipeline program to export (expected a pipeline schedule: {})\n",
               fmt::join(schedule::schedule_names(), ", "));
    return kBadConfig;
  }
  if (args.name.rfind("csv:", 0) == 0) {
    fmt::print(stderr, "error: \"{}\" is a CSV file already; export writes a built-in schedule as CSV (expected "
                       "one of: {})\n",
               args.name, fmt::join(schedule::schedule_names(), ", "));
    return kBadConfig;
  }
  if (sched == nullptr) {
    const std::vector<std::string>& known = schedule::schedule_names();
    const auto near = config::closest(args.name, known);
    fmt::print(stderr, "error: no schedule named \"{}\"{}; known: {} (see `trainsim schedules`)\n", args.name,
               near ? fmt::format(" (did you mean \"{}\"?)", *near) : "", fmt::join(known, ", "));
    return kBadConfig;
  }
  const auto work = core::checked_product({args.pp, args.vp, args.microbatches});
  if (!work || *work > kMaxStageMicrobatches) {
    fmt::print(stderr, "error: pp x vp x micro-batches = {} x {} x {} = {} is more than the {} the simulator takes\n",
               args.pp, args.vp, args.microbatches, core::product_text({args.pp, args.vp, args.microbatches}),
               kMaxStageMicrobatches);
    return kBadProgram;
  }
  if (schedule::pipelines_of(sched->placement()) > 1) {
    // A CSV schedule is one pipeline: read back, the second direction's
    // first stage would wait for the first direction's last.
    fmt::print(stderr,
               "error: schedule \"{}\" runs two pipelines (directions) over copies of the same layers; a CSV "
               "schedule holds one, so it cannot be exported\n",
               args.name);
    return kBadProgram;
  }
  const std::string what = fmt::format("schedule \"{}\" cannot lay out pp = {}, vp = {}, {} micro-batches", args.name,
                                       args.pp, args.vp, args.microbatches);
  schedule::Program program;
  try {
    const schedule::Shape shape = schedule::Shape::placed(sched->placement(), args.pp, args.vp, args.microbatches);
    program = sched->program(shape);
    // Only a program that runs is worth writing down.
    schedule::check(schedule::with_communication(program, shape), shape);
  } catch (const std::invalid_argument& e) {  // the plugin refused the shape
    fmt::print(stderr, "error: {}: {}\n", what, e.what());
    return kBadProgram;
  } catch (const schedule::ProgramError& e) {
    fmt::print(stderr, "error: {}: {}\n", what, e.what());
    return kBadProgram;
  }
  std::cout << schedule::to_csv(program);
  std::cout.flush();
  if (!std::cout) {
    fmt::print(stderr, "error: cannot write the CSV to stdout\n");
    return kOutputError;
  }
  return kOk;
}

}  // namespace trainsim::cli
