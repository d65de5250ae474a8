#include "cli/sweep_command.hpp"

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>
#include <optional>
#include <thread>
#include <unistd.h>

#include "cli/progress_line.hpp"
#include "cli/run_command.hpp"
#include "cli/stop_signals.hpp"
#include "cli/whole_number.hpp"
#include "config/error.hpp"
#include "core/event_queue.hpp"
#include "report/output_file.hpp"
#include "sweep/baseline.hpp"
#include "sweep/merge.hpp"
#include "sweep/plot.hpp"
#include "sweep/report.hpp"
#include "sweep/runner.hpp"
#include "sweep/space.hpp"

namespace trainsim::cli {

namespace {

std::string non_empty(const std::string& v) { return v.empty() ? std::string("needs a file name") : std::string(); }

// Outputs shared by sweep and sweep-merge: table, files, Pareto front.
struct Outputs {
  int top = 10;
  std::string csv, json, plot;
  bool pareto = false;
};

// Before a long sweep starts: each output can be written, and no output
// would overwrite another output or an input (`inputs`: flag or role, path).
int check_writable(const Outputs& o, const std::vector<std::pair<std::string, std::string>>& inputs) {
  const std::pair<std::string, std::string> outs[] = {{"--csv", o.csv}, {"--json", o.json}, {"--plot", o.plot}};
  for (std::size_t i = 0; i < std::size(outs); ++i) {
    const auto& [flag, path] = outs[i];
    if (path.empty()) continue;
    for (std::size_t k = 0; k < i; ++k) {
      if (!outs[k].second.empty() && report::same_file(outs[k].second, path)) {
        fmt::print(stderr, "error: {} {}: the same file as {} {}; expected a file of its own for each output\n", flag,
                   path, outs[k].first, outs[k].second);
        return kOutputError;
      }
    }
    for (const auto& [role, input] : inputs) {
      if (report::same_file(input, path)) {
        fmt::print(stderr, "error: {} {}: the same file as the {}, which it would overwrite\n", flag, path, role);
        return kOutputError;
      }
    }
    if (const std::string why = report::output_problem(path); !why.empty()) {
      fmt::print(stderr, "error: {} {}: cannot write to this path: {}\n", flag, path, why);
      return kOutputError;
    }
  }
  return kOk;
}

int write_outputs(const sweep::Report& report, const Outputs& o) {
  const auto rows = sweep::top_plans(report, static_cast<std::size_t>(o.top));
  if (rows.empty()) {
    fmt::print("no plan fits in memory\n");
  } else {
    fmt::print("{}", sweep::table(rows, true));
  }
  if (o.pareto) {
    fmt::print("\nPareto front (iteration time, peak memory):\n{}", sweep::table(sweep::pareto_front(report.results), false));
  }
  fmt::print("\n{}", sweep::counts_text(report));
  if (!o.csv.empty()) {
    if (const std::string why = report::write_output_file(o.csv, sweep::to_csv(report)); !why.empty()) {
      fmt::print(stderr, "error: cannot write CSV to {}: {}\n", o.csv, why);
      return kOutputError;
    }
    fmt::print("csv  {}\n", o.csv);
  }
  if (!o.json.empty()) {
    if (const std::string why = report::write_output_file(o.json, sweep::to_json(report).dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"); !why.empty()) {
      fmt::print(stderr, "error: cannot write JSON to {}: {}\n", o.json, why);
      return kOutputError;
    }
    fmt::print("json {}\n", o.json);
  }
  if (!o.plot.empty()) {
    if (const std::string why = report::write_output_file(o.plot, sweep::heat_map_svg(report)); !why.empty()) {
      fmt::print(stderr, "error: cannot write SVG to {}: {}\n", o.plot, why);
      return kOutputError;
    }
    fmt::print("plot {}\n", o.plot);
  }
  return kOk;
}

// --tolerance: a percentage, and only with --baseline (alone it would gate nothing).
int read_tolerance(const std::string& baseline, const std::string& text, bool given, double& tolerance) {
  if (!sweep::parse_tolerance(text, tolerance)) {
    fmt::print(stderr, "error: --tolerance: expected a percentage >= 0, e.g. 2%, got \"{}\"\n", text);
    return kBadConfig;
  }
  if (given && baseline.empty()) {
    fmt::print(stderr, "error: --tolerance {}: applies only with --baseline FILE (the slowdown the regression gate "
                       "allows); give --baseline or leave --tolerance out\n", text);
    return kBadConfig;
  }
  return kOk;
}

// --baseline: reads it before the sweep (a bad file fails early).
int read_baseline(const std::string& path, std::optional<sweep::Report>& baseline) {
  if (path.empty()) return kOk;
  try {
    baseline = sweep::read_report(path);
  } catch (const config::ConfigError& e) {
    fmt::print(stderr, "error: --baseline: {}\n", e.what());
    return kBadConfig;
  }
  return kOk;
}

int gate(const sweep::Report& report, const std::optional<sweep::Report>& baseline, double tolerance) {
  if (!baseline) return kOk;
  const sweep::Verdict v = sweep::compare(report, *baseline, tolerance);
  if (v.regressed) {
    fmt::print(stderr, "error: regression against the baseline: {}\n", v.message);
    return kRegression;
  }
  fmt::print("baseline: {}\n", v.message);
  return kOk;
}

void add_tolerance(CLI::App& cmd, std::string& tolerance, bool& given) {
  cmd.add_option_function<std::string>(
      "--tolerance",
      [&tolerance, &given](const std::string& v) {
        tolerance = v;
        given = true;
      },
      "Allowed slowdown against --baseline, in percent (default 2%); only with --baseline");
}

}  // namespace

CLI::App* add_sweep_command(CLI::App& app, SweepArgs& args) {
  CLI::App* cmd = app.add_subcommand("sweep", "Simulate every valid parallel plan of a sweep file and rank them");
  cmd->add_option("sweep", args.sweep, "Sweep file (JSON): model, cluster, global_batch, axes")->required();
  cmd->add_option("-j,--jobs", args.jobs, "Plans simulated at once (default: the hardware's threads)")
      ->check(whole_number(1, 4096));
  cmd->add_option_function<int>(
         "--top",
         [&args](const int& k) {
           args.top = k;
           args.top_given = true;
         },
         "Show the K best plans; with it, plans that cannot reach the top K are pruned, unless --pareto or --plot "
         "needs every plan (default table: 10)")
      ->check(whole_number(1, 1'000'000'000));
  cmd->add_flag("--no-prune", args.no_prune, "Simulate every plan even with --top");
  cmd->add_option("--csv", args.csv, "Write every plan's result as CSV to this file")->check(non_empty);
  cmd->add_option("--json", args.json, "Write every plan's result as JSON to this file")->check(non_empty);
  cmd->add_flag("-q,--quiet", args.quiet, "No progress on stderr");
  cmd->add_flag("--pareto", args.pareto, "Also list the plans not dominated in (iteration time, peak memory)");
  cmd->add_option("--shard", args.shard,
                  "Run only the K-th of N disjoint slices of the plans (plans whose index in the canonical order is "
                  "K-1 modulo N); merge the --json outputs with sweep-merge")
      ->check([](const std::string& v) {
        int k = 0, n = 0;
        return sweep::parse_shard(v, k, n) ? std::string() : "expected K/N with 1 <= K <= N, e.g. 2/8, got \"" + v + "\"";
      });
  cmd->add_option("--baseline", args.baseline,
                  "A sweep's earlier --json output: fail (status 8) when the best plan got slower than its best by more "
                  "than --tolerance, or its best plan no longer runs");
  add_tolerance(*cmd, args.tolerance, args.tolerance_given);
  cmd->add_option("--plot", args.plot, "Draw the best iteration time over (tp, pp) as an SVG heat map to this file")
      ->check(non_empty);
  cmd->add_flag("--reverse-ties", args.reverse_ties,
                "Deliver events of one picosecond last scheduled first instead of first scheduled first: every "
                "figure should come out the same (a check that none leans on the order of simultaneous events)");
  cmd->footer(
      "Exit status: 0 success; 2 bad sweep file (or bad --baseline, or --tolerance bad or without --baseline); 5 an\n"
      "output file could not be written, or two outputs (or an output and the sweep file) are one file; 8 the best\n"
      "plan regressed against --baseline; 130 or 143 interrupted by SIGINT (Ctrl-C) or SIGTERM: the plans finished\n"
      "so far are ranked and written, the rest marked not run.");
  return cmd;
}

CLI::App* add_sweep_merge_command(CLI::App& app, SweepMergeArgs& args) {
  CLI::App* cmd = app.add_subcommand("sweep-merge",
                                     "Merge the --json outputs of a sharded sweep into the ranking one run gives");
  cmd->add_option("files", args.files, "The shards' --json outputs")->required();
  cmd->add_option("--top", args.top, "Show the K best plans (default 10)")->check(whole_number(1, 1'000'000'000));
  cmd->add_option("--csv", args.csv, "Write every plan's result as CSV to this file")->check(non_empty);
  cmd->add_option("--json", args.json, "Write every plan's result as JSON to this file")->check(non_empty);
  cmd->add_flag("--pareto", args.pareto, "Also list the plans not dominated in (iteration time, peak memory)");
  cmd->add_option("--baseline", args.baseline, "As for sweep: fail (status 8) on a regression against this file");
  add_tolerance(*cmd, args.tolerance, args.tolerance_given);
  cmd->add_option("--plot", args.plot, "Draw the best iteration time over (tp, pp) as an SVG heat map")->check(non_empty);
  cmd->footer(
      "Exit status: 0 success; 2 unreadable files, shards of different sweep files (by content: sweep_hash), missing\n"
      "or repeated shards, or --tolerance bad or without --baseline; 5 an output could not be written, or two\n"
      "outputs (or an output and a shard) are one file; 8 regression.");
  return cmd;
}

int sweep_merge_command(const SweepMergeArgs& args) {
  double tolerance = 0.0;
  if (const int status = read_tolerance(args.baseline, args.tolerance, args.tolerance_given, tolerance); status != kOk) {
    return status;
  }
  std::optional<sweep::Report> baseline;
  if (const int status = read_baseline(args.baseline, baseline); status != kOk) return status;
  sweep::Report report;
  try {
    std::vector<sweep::Report> shards;
    for (const auto& f : args.files) shards.push_back(sweep::read_report(f));
    report = sweep::merge(shards, args.files);
  } catch (const config::ConfigError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kBadConfig;
  }
  const Outputs outputs{args.top, args.csv, args.json, args.plot, args.pareto};
  std::vector<std::pair<std::string, std::string>> inputs;
  for (const auto& f : args.files) inputs.emplace_back("shard file " + f, f);
  if (const int status = check_writable(outputs, inputs); status != kOk) return status;
  if (const int status = write_outputs(report, outputs); status != kOk) return status;
  return gate(report, baseline, tolerance);
}

int sweep_command(const SweepArgs& args) {
  // Before anything else: a signal during loading still gets its answer.
  const StopSignals signals;
  core::EventQueue::reverse_ties(args.reverse_ties);
  double tolerance = 0.0;
  if (const int status = read_tolerance(args.baseline, args.tolerance, args.tolerance_given, tolerance); status != kOk) {
    return status;
  }
  sweep::Spec spec;
  sweep::Space space;
  try {
    spec = sweep::load_spec(args.sweep);
    space = sweep::enumerate(spec);
  } catch (const config::ConfigError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kBadConfig;
  }
  const Outputs outputs{args.top, args.csv, args.json, args.plot, args.pareto};
  if (const int status = check_writable(outputs, {{"sweep file", args.sweep}}); status != kOk) return status;
  std::optional<sweep::Report> baseline;
  if (const int status = read_baseline(args.baseline, baseline); status != kOk) return status;
  std::vector<sweep::Candidate> plans = std::move(space.plans);
  const std::size_t valid = plans.size();
  std::optional<std::string> shard;
  if (!args.shard.empty()) {
    int k = 1, n = 1;
    sweep::parse_shard(args.shard, k, n);
    std::vector<sweep::Candidate> slice;
    for (auto& c : plans) {
      if (static_cast<int>(c.index % static_cast<std::size_t>(n)) == k - 1) slice.push_back(std::move(c));
    }
    plans = std::move(slice);
    shard = args.shard;
  }

  sweep::RunOptions options;
  options.jobs = args.jobs > 0 ? args.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // Pruning keeps the top K exact, not the Pareto front or the best plan of
  // every (tp, pp) cell: those need every plan.
  if (args.top_given && !args.no_prune && !args.pareto && args.plot.empty()) options.prune_top = args.top;
  options.stop = &StopSignals::requested();
  ProgressLine line("sweep", "plans");
  if (!args.quiet && line.enabled()) options.progress = [&line](std::size_t done, std::size_t total) { line.update(done, total); };

  sweep::keep_freed_memory();
  const auto start = std::chrono::steady_clock::now();
  sweep::Outcome outcome = sweep::run(spec, plans, options);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  line.clear();

  sweep::Report report;
  report.sweep = args.sweep;
  report.sweep_hash = spec.fingerprint;
  report.shard = shard;
  report.combinations = space.combinations;
  report.valid_plans = static_cast<long long>(valid);
  report.invalid = space.invalid;
  report.pruned = static_cast<long long>(outcome.pruned);
  report.not_run = static_cast<long long>(outcome.not_run);
  report.interrupted = outcome.interrupted;
  report.results = std::move(outcome.results);

  if (report.interrupted) {
    fmt::print(stderr, "interrupted by {}: ranking the {} plans finished\n",
               StopSignals::received() == SIGTERM ? "SIGTERM" : "SIGINT",
               report.results.size() - report.not_run - report.pruned);
  }
  const int status = write_outputs(report, outputs);
  if (!args.quiet) {
    const std::size_t ran = report.results.size() - report.not_run - report.pruned;
    fmt::print(stderr, "{} plans simulated in {:.2f} s ({:.0f} plans/s, {} threads)\n", ran, wall,
               wall > 0 ? static_cast<double>(ran) / wall : 0.0, options.jobs);
  }
  if (status != kOk) return status;
  // A signal that came while the last plans ran still ends with its status.
  if (report.interrupted || StopSignals::received() != 0) return StopSignals::exit_status();
  return gate(report, baseline, tolerance);
}

}  // namespace trainsim::cli
