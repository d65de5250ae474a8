// A sweep's shared programs and stage costs (driver/plan_cache.hpp): what a
// plan gets from the cache is what it would have made, and the cache keeps
// only its most recently used entries.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <utility>

#include "config/load.hpp"
#include "driver/plan_cache.hpp"
#include "driver/whatif.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace driver_plan_cache_test {

using namespace trainsim;

namespace {
std::string example(const std::string& name) {
  std::string path = TRAINSIM_SOURCE_DIR "/configs/examples/";
  return path.append(name);
}

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
  const driver::PlanCache::ProgramKey a{"1f1b", 0, 4, 1, 8, false, true, false, false, {}, {}};
  const driver::PlanCache::ProgramKey b{"1f1b", 0, 4, 1, 16, false, true, false, false, {}, {}};
  const driver::PlanCache::ProgramKey c{"gpipe", 0, 4, 1, 8, false, true, false, false, {}, {}};
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

TEST_CASE("a program equal to one laid out for other stage times is found with its wiring") {
  // zb-1p lays out a program for each plan's stage times; an entry whose
  // key differs only in those times and whose program is equal serves
  // another (its checks and wiring hold for the same program).
  driver::PlanCache cache;
  schedule::Program program;
  program.ranks = {{schedule::Action{}}, {schedule::Action{}}};
  driver::CheckedProgram made;
  made.program = program;
  made.digest = driver::digest_of(program);
  made.wiring.rank_offset = {0, 1};  // a stand-in: handed back as is
  const driver::PlanCache::ProgramKey key{"zb-1p", 0, 2, 1, 4, false, true, false, false, {}, {1.0, 2.0}};
  const auto entry = cache.program(key, [&] { return made; });
  driver::PlanCache::ProgramKey other_times = key;
  std::get<10>(other_times) = {1.5, 2.5};
  CHECK(cache.equal_program(other_times, program, made.digest) == entry);
  CHECK(entry->wiring.rank_offset == made.wiring.rank_offset);
  // Another pipeline, or MoE's paired passes (other waits), or another program: none.
  driver::PlanCache::ProgramKey other_pp = other_times;
  std::get<2>(other_pp) = 4;
  CHECK(cache.equal_program(other_pp, program, made.digest) == nullptr);
  driver::PlanCache::ProgramKey paired = other_times;
  std::get<8>(paired) = true;
  CHECK(cache.equal_program(paired, program, made.digest) == nullptr);
  schedule::Program longer = program;
  longer.ranks[1].push_back(schedule::Action{});
  CHECK(cache.equal_program(other_times, longer, driver::digest_of(longer)) == nullptr);
}

TEST_CASE("plans run through the cache give what they give without it") {
  // The 175B example under three schedules and two ZeRO stages: each
  // schedule's program is shared by its ZeRO-1 and ZeRO-2 plans (zb-1p,
  // which places work by the stages' times, because those times are the
  // same). Stage costs are shared under a key the caller gives (here: the
  // plan without its schedule).
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

TEST_CASE("a schedule that places work by the stages' times shares a program only where those times are the same") {
  // zb-1p on the 175B example: ZeRO-1 and ZeRO-2 change the optimizer's
  // memory and the gradients' collectives, not a stage's F, I or W, so both
  // plans get one program; full recompute lengthens each backward (its
  // forward run again), so that plan's times, and program, are its own.
  auto scenario = [](int zero, const std::string& recompute) {
    return config::load_file(example("gpt3-175b-1024xa100.json"),
                             {"parallel.schedule=zb-1p", "parallel.zero_stage=" + std::to_string(zero),
                              "parallel.recompute=" + recompute});
  };
  driver::PlanCache cache;
  driver::Controls controls;
  controls.cache = &cache;
  const driver::Prepared one = driver::prepare(scenario(1, "none"), controls);
  const driver::Prepared two = driver::prepare(scenario(2, "none"), controls);
  const driver::Prepared full = driver::prepare(scenario(1, "full"), controls);
  REQUIRE(one.shape.times.size() == 8);
  CHECK(one.shape.times[3].input_grad == two.shape.times[3].input_grad);
  CHECK(full.shape.times[3].input_grad > one.shape.times[3].input_grad);
  CHECK(two.checked == one.checked);   // the same object: laid out once
  CHECK(full.checked != one.checked);  // other times, laid out again
  // What the shared program gives is what the plan's own gives.
  const config::Scenario sc = scenario(2, "none");
  CHECK(iteration_s(sc, controls) == iteration_s(sc, driver::Controls{}));
}

TEST_CASE("a program's digest follows every action") {
  schedule::Program p;
  p.ranks = {{{schedule::Op::kForward, 0, 0}, {schedule::Op::kBackward, 0, 0}}, {{schedule::Op::kForward, 1, 0}}};
  schedule::Program same = p;
  CHECK(driver::digest_of(same) == driver::digest_of(p));
  schedule::Program other_microbatch = p;
  other_microbatch.ranks[1][0].microbatch = 1;
  schedule::Program other_order = p;
  std::swap(other_order.ranks[0][0], other_order.ranks[0][1]);
  schedule::Program moved = p;  // the same actions, one moved to the other rank
  moved.ranks[1].insert(moved.ranks[1].begin(), moved.ranks[0].back());
  moved.ranks[0].pop_back();
  for (const schedule::Program* q : {&other_microbatch, &other_order, &moved}) CHECK(driver::digest_of(*q) != driver::digest_of(p));
}

TEST_CASE("a plan that would repeat an earlier plan's simulation is found, and only such a plan") {
  // GPipe and breadth-first on the 175B example (8 stages, 96 micro-batches):
  // with one stage per rank breadth-first runs each stage's micro-batches in
  // turn, as GPipe does, the same program; 1F1B lays out another.
  auto scenario = [](const std::string& schedule) {
    return config::load_file(example("gpt3-175b-1024xa100.json"), {"parallel.schedule=" + schedule});
  };
  driver::PlanCache cache;
  driver::Controls controls;
  controls.cache = &cache;
  controls.costs_key = "the 175B example";
  const config::Scenario gp = scenario("gpipe"), bf = scenario("breadth-first"), one = scenario("1f1b");
  driver::Prepared first = driver::prepare(gp, controls);
  const auto program = first.checked;
  CHECK(cache.same_simulation(controls.costs_key, program) == nullptr);  // nothing kept yet
  const driver::WhatIf w = driver::simulate(gp, std::move(first), controls);
  const report::Summary gp_summary = driver::summarize(gp, w, "x", report::Detail::kTotals);
  cache.remember(controls.costs_key, program, gp_summary);

  const driver::Prepared second = driver::prepare(bf, controls);
  REQUIRE(second.checked != program);  // another schedule's, not the one the cache holds
  REQUIRE(second.checked->program.ranks == program->program.ranks);
  const auto found = cache.same_simulation(controls.costs_key, second.checked);
  REQUIRE(found != nullptr);
  CHECK(found->iteration_time_s == gp_summary.iteration_time_s);
  // What the cache gives is what breadth-first's own simulation gives.
  const report::Summary bf_own = driver::summarize(bf, driver::simulate(bf, driver::Controls{}), "x", report::Detail::kTotals);
  CHECK(bf_own.iteration_time_s == found->iteration_time_s);
  CHECK(bf_own.peak_memory_bytes == found->peak_memory_bytes);
  CHECK(bf_own.bubble_fraction == found->bubble_fraction);

  CHECK(cache.same_simulation("another setting", second.checked) == nullptr);  // other costs
  CHECK(cache.same_simulation(controls.costs_key, driver::prepare(one, controls).checked) == nullptr);  // another program
}

TEST_CASE("the summaries kept are bounded in number, the oldest given up first") {
  driver::PlanCache cache(16, 64, 2);
  auto program = [](int microbatches) {
    auto p = std::make_shared<driver::CheckedProgram>();
    for (int m = 0; m < microbatches; ++m) p->program.ranks.push_back({{schedule::Op::kForward, 0, m}});
    p->digest = driver::digest_of(p->program);
    return std::shared_ptr<const driver::CheckedProgram>(p);
  };
  const auto a = program(1), b = program(2), c = program(3);
  report::Summary s;
  for (const auto& p : {a, b, c}) {
    s.iteration_time_s += 1.0;
    cache.remember("k", p, s);
  }
  CHECK(cache.same_simulation("k", a) == nullptr);  // room for two: the first went
  REQUIRE(cache.same_simulation("k", b) != nullptr);
  CHECK(cache.same_simulation("k", b)->iteration_time_s == 2.0);
  CHECK(cache.same_simulation("k", c)->iteration_time_s == 3.0);
}

}  // namespace driver_plan_cache_test
