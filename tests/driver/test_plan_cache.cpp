// A sweep's shared programs and stage costs (driver/plan_cache.hpp): what a
// plan gets from the cache is what it would have made, and the cache keeps
// only its most recently used entries.
#include <doctest/doctest.h>

#include <string>

#include "config/load.hpp"
#include "driver/plan_cache.hpp"
#include "driver/whatif.hpp"

using namespace trainsim;

namespace {
std::string example(const std::string& name) { return std::string(TRAINSIM_SOURCE_DIR) + "/configs/examples/" + name; }

double iteration_s(const config::Scenario& sc, const driver::Controls& controls) {
  const driver::WhatIf w = driver::simulate(sc, controls);
  return driver::summarize(sc, w, "x").iteration_time_s;
}
}  // namespace

TEST_CASE("an entry is made once, shared while it is among the most recent, and made again after") {
  driver::PlanCache cache(2, 2);
  int made = 0;
  auto make = [&] {
    ++made;
    return driver::CheckedProgram{};
  };
  const driver::PlanCache::ProgramKey a{"1f1b", 0, 4, 1, 8, false, true, false};
  const driver::PlanCache::ProgramKey b{"1f1b", 0, 4, 1, 16, false, true, false};
  const driver::PlanCache::ProgramKey c{"gpipe", 0, 4, 1, 8, false, true, false};
  const auto first = cache.program(a, make);
  CHECK(cache.program(a, make) == first);  // the same object, not made again
  CHECK(made == 1);
  (void)cache.program(b, make);
  (void)cache.program(c, make);  // room for two: a, the least recent, goes
  CHECK(made == 3);
  CHECK(cache.program(a, make) != first);
  CHECK(made == 4);
  CHECK(first->program.ranks.empty());  // what was handed out stays valid
}

TEST_CASE("plans run through the cache give what they give without it") {
  // The 175B example under three schedules and two ZeRO stages: 1F1B's
  // program is shared by its ZeRO-1 and ZeRO-2 plans; zb-1p places work by
  // the stages' times and gets its own. Stage costs are shared under a key
  // the caller gives (here: the plan without its schedule).
  driver::PlanCache cache;
  for (const char* schedule : {"1f1b", "gpipe", "zb-1p"}) {
    for (int zero : {1, 2}) {
      CAPTURE(schedule);
      CAPTURE(zero);
      const config::Scenario sc = config::load_file(
          example("gpt3-175b-1024xa100.json"),
          {std::string("parallel.schedule=") + schedule, "parallel.zero_stage=" + std::to_string(zero)});
      driver::Controls shared;
      shared.cache = &cache;
      shared.costs_key = "zero " + std::to_string(zero);
      CHECK(iteration_s(sc, shared) == iteration_s(sc, driver::Controls{}));
    }
  }
}
