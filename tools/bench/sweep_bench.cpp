// A whole sweep in process: every valid plan of a sweep file (by default GPT-3
// 175B on 1024 A100s, configs/sweeps/gpt3-175b-1024xa100.json), enumerated,
// simulated on all hardware threads and ranked; then the same with pruning
// for the top 10. Prints plans/s and wall times; asserts nothing.
// Run: build/tools/bench/sweep_bench [SWEEP.json] [JOBS]
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fmt/format.h>
#include <string>
#include <thread>

#include <spdlog/spdlog.h>

#include "sweep/runner.hpp"
#include "sweep/space.hpp"

using namespace trainsim;

namespace {

int bench(const std::string& file, int jobs) {
  spdlog::set_level(spdlog::level::warn);  // as the command line runs by default
  sweep::keep_freed_memory();               // as the command line does
  using clock = std::chrono::steady_clock;
  auto seconds = [](clock::time_point a, clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };

  const auto t0 = clock::now();
  const sweep::Spec spec = sweep::load_spec(file);
  const sweep::Space space = sweep::enumerate(spec);
  const auto t1 = clock::now();
  fmt::print("sweep        {}\n", file);
  fmt::print("threads      {}\n", jobs);
  fmt::print("enumerate    {} combinations, {} valid plans in {:.2f} s\n", space.combinations, space.plans.size(),
             seconds(t0, t1));

  sweep::RunOptions all;
  all.jobs = jobs;
  const auto t2 = clock::now();
  const sweep::Outcome every = sweep::run(spec, space.plans, all);
  const auto t3 = clock::now();
  const double run_s = seconds(t2, t3);
  fmt::print("every plan   {} simulated in {:.2f} s: {:.0f} plans/s; whole sweep {:.2f} s\n", every.results.size(),
             run_s, static_cast<double>(every.results.size()) / run_s, seconds(t0, t3));
  if (every.results.empty()) {
    fmt::print(stderr, "sweep_bench: {} has no valid plan to simulate\n", file);
    return 1;
  }
  fmt::print("best         {} ({:.4f} s)\n", every.results.front().key, every.results.front().iteration_time_s);

  sweep::RunOptions top;
  top.jobs = jobs;
  top.prune_top = 10;
  const auto t4 = clock::now();
  const sweep::Outcome pruned = sweep::run(spec, space.plans, top);
  const auto t5 = clock::now();
  fmt::print("top 10       {} simulated, {} pruned, in {:.2f} s (same best: {})\n",
             pruned.results.size() - pruned.pruned, pruned.pruned, seconds(t4, t5),
             !pruned.results.empty() && pruned.results.front().key == every.results.front().key ? "yes" : "NO");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string first = argc > 1 ? argv[1] : "";
  if (first == "-h" || first == "--help" || argc > 3) {
    fmt::print(argc > 3 ? stderr : stdout,
               "usage: sweep_bench [SWEEP.json] [JOBS]\n"
               "Simulates every valid plan of SWEEP.json (default configs/sweeps/gpt3-175b-1024xa100.json) on JOBS\n"
               "threads (default: every hardware thread), then the top 10 with pruning; prints plans/s and times.\n");
    return argc > 3 ? 2 : 0;
  }
  const std::string file = argc > 1 ? first : std::string(TRAINSIM_SOURCE_DIR) + "/configs/sweeps/gpt3-175b-1024xa100.json";
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (argc > 2) {
    char* end = nullptr;
    const long j = std::strtol(argv[2], &end, 10);
    if (end == argv[2] || *end != '\0' || j < 1 || j > 1024) {
      fmt::print(stderr, "sweep_bench: JOBS: expected an integer from 1 to 1024, got \"{}\"\n", argv[2]);
      return 2;
    }
    jobs = static_cast<int>(j);
  }
  try {
    return bench(file, jobs);
  } catch (const std::exception& e) {
    fmt::print(stderr, "sweep_bench: {}\n", e.what());
    return 2;
  }
}
