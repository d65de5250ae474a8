#include <doctest/doctest.h>

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <string>

#include "config/load.hpp"
#include "driver/whatif.hpp"
#include "schedule/check.hpp"
#include "schedule/csv.hpp"
#include "schedule/registry.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace driver_csv_schedule_test {

using namespace trainsim;

namespace {

// GPT 1.7B (24 layers) on one DGX A100 (8 GPUs): tp = 8 / pp, one sequence
// per micro-batch, m micro-batches.
nlohmann::json doc(int pp, int vp, int m, const std::string& schedule) {
  nlohmann::json d = nlohmann::json::parse(R"({
    "cluster": {"node": "dgx-a100", "nodes": 1},
    "model": "gpt-1.7b",
    "parallel": {"dp": 1, "microbatch_size": 1}
  })");
  d["parallel"]["tp"] = 8 / pp;
  d["parallel"]["pp"] = pp;
  d["parallel"]["vp"] = vp;
  d["parallel"]["global_batch"] = m;
  d["parallel"]["schedule"] = schedule;
  return d;
}

}  // namespace

TEST_CASE("every registered schedule, exported to CSV and run from it, gives the same summary") {
  // Same program, same costs, same hardware: the same events in the same
  // order, so the figures agree exactly. Shapes a schedule refuses are skipped;
  // each schedule must run at least one.
  const auto dir = std::filesystem::temp_directory_path() / "trainsim_test_driver_csv";
  std::filesystem::create_directories(dir);
  struct Case {
    int pp, vp, m;
  };
  for (const auto& s : schedule::all_schedules()) {
    const std::string name(s->name());
    if (schedule::pipelines_of(s->placement()) > 1) continue;  // two directions do not fit one CSV pipeline
    CAPTURE(name);
    int ran = 0;
    for (const Case c : {Case{2, 1, 4}, Case{4, 1, 8}, Case{2, 2, 4}, Case{4, 2, 8}, Case{4, 1, 3}}) {
      CAPTURE(c.pp);
      CAPTURE(c.vp);
      CAPTURE(c.m);
      const config::Scenario plugin = config::load_document(doc(c.pp, c.vp, c.m, name), "plugin.json", ".");
      driver::WhatIf direct;
      try {
        direct = driver::simulate(plugin);
      } catch (const schedule::ProgramError&) {
        continue;  // the schedule refuses this shape
      }
      ++ran;
      const std::string file = fmt::format("{}-pp{}-vp{}-m{}.csv", name, c.pp, c.vp, c.m);
      std::ofstream(dir / file, std::ios::binary)
          << schedule::to_csv(s->program(direct.shape));  // the run's shape: zb-1p/zb-2p place by its stage times
      const config::Scenario from_csv =
          config::load_document(doc(c.pp, c.vp, c.m, "csv:" + file), "csv.json", dir.string());
      const driver::WhatIf replayed = driver::simulate(from_csv);
      CHECK(replayed.program->ranks == direct.program->ranks);
      const report::Summary a = driver::summarize(plugin, direct, "plugin.json");
      const report::Summary b = driver::summarize(from_csv, replayed, "csv.json");
      CHECK(b.iteration_time_s == a.iteration_time_s);
      CHECK(b.peak_memory_bytes == a.peak_memory_bytes);
      CHECK(b.bubble_fraction == a.bubble_fraction);
      CHECK(b.events == a.events);
    }
    CHECK(ran > 0);
  }
}

TEST_CASE("a CSV program the checks refuse is reported as the plugins' are") {
  // 1F1B's rows swapped between the two ranks: stage 0's actions on rank 1.
  const auto dir = std::filesystem::temp_directory_path() / "trainsim_test_driver_csv";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "swapped.csv", std::ios::binary) << "1F0,1B0,1F1,1B1\n0F0,0F1,0B0,0B1\n";
  const config::Scenario sc = config::load_document(doc(2, 1, 2, "csv:swapped.csv"), "csv.json", dir.string());
  CHECK_THROWS_AS(driver::simulate(sc), schedule::ProgramError);
}

TEST_CASE("a V-shaped CSV places the plan's stages in a V; a plan that disagrees is refused") {
  // zb-v's program for pp 2, vp 2, m 4: stages 0 and 3 on rank 0, so the
  // loader reads a V from the rows, and the plan costs the stages there.
  const auto dir = std::filesystem::temp_directory_path() / "trainsim_test_driver_csv";
  std::filesystem::create_directories(dir);
  const schedule::Schedule* zbv = schedule::find_schedule("zb-v");
  std::ofstream(dir / "v.csv", std::ios::binary)
      << schedule::to_csv(zbv->program(schedule::Shape::placed(schedule::Placement::kVShape, 2, 2, 4)));
  config::Scenario sc = config::load_document(doc(2, 2, 4, "csv:v.csv"), "csv.json", dir.string());
  CHECK(sc.plan.placement() == schedule::Placement::kVShape);
  CHECK(sc.plan.rank_of_stage(3) == 0);
  CHECK_NOTHROW(driver::simulate(sc));
  // A plan left looped would cost stage 3 on rank 1 while the program runs it on rank 0.
  sc.plan.csv_placement = schedule::Placement::kLooped;
  try {
    driver::simulate(sc);
    FAIL("ran a V program on a looped plan");
  } catch (const schedule::ProgramError& e) {
    CHECK(std::string(e.what()) == "schedule \"csv:v.csv\" runs its stages in the v-shape placement, but the plan costs them in the "
                                "looped one");
  }
}

}  // namespace driver_csv_schedule_test
