#include <doctest/doctest.h>

#include <set>
#include <tuple>
#include <vector>

#include "config/load.hpp"
#include "driver/whatif.hpp"
#include "report/ep_slices.hpp"
#include "workload/tp_overlap.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace report_ep_slices_test {

using namespace trainsim;
using core::Time;
using schedule::Action;
using schedule::Op;

namespace {

// A simulation by hand: one GPU, one MoE stage, the given compute actions at
// the given spans (a task each).
struct Hand {
  lower::Simulation sim;
  void add(const Action& a, std::int64_t start_us, std::int64_t end_us) {
    sim.info.push_back({lower::TaskKind::kCompute, a, 0, -1});
    (void)sim.graph.add(core::Task{});
    sim.timeline.start.push_back(Time::microseconds(start_us));
    sim.timeline.end.push_back(Time::microseconds(end_us));
  }
};

// Its stage: 2 MoE layers; forward rest 40, dispatch 8, experts 24, combine
// 8 (80 in all); backward rest 80, dispatch 8, experts 48, combine 8 (144); I alone 100.
Hand hand_stage() {
  Hand h;
  h.sim.gpu_of_rank = {0};
  lower::Simulation::EpStage st;
  st.forward = {40, 8, 24, 8};
  st.backward = {80, 8, 48, 8};
  st.moe_layers = 2;
  st.input_grad_s = 100;
  h.sim.ep_stages = {st};
  return h;
}

}  // namespace

TEST_CASE("alone, a pass's exchanges sit where its layers run them") {
  // Model time equals actual time here (1 s of chunk time = 1 us of span).
  // F over 80 us: layer 0 rest 0-20, dispatch 20-24, experts 24-36, combine
  // 36-40; layer 1 the same from 40: dispatch 60-64, combine 76-80.
  // B over 144 us from 100: layer 0 combine 100-104, experts 104-128,
  // dispatch 128-132, rest 132-172; layer 1 combine 172-176, dispatch 200-204.
  // W moves nothing. I alone (100 us from 300) keeps B's exchanges (4 each a
  // layer) and scales its compute to what is left: (100 - 16) / (48 + 80) of
  // it, so layer 0: combine 300-304, experts 304-319.75, dispatch 319.75-323.75.
  Hand h = hand_stage();
  h.add({Op::kForward, 0, 0}, 0, 80);
  h.add({Op::kBackward, 0, 0}, 100, 244);
  h.add({Op::kInputGrad, 0, 1}, 300, 400);
  h.add({Op::kWeightGrad, 0, 1}, 400, 450);
  const auto s = report::ep_slices(h.sim);
  REQUIRE(s.size() == 12);
  auto at = [](const report::EpSlice& e, double from_us, double to_us) {
    CHECK(e.start == Time::seconds(from_us * 1e-6));
    CHECK(e.end == Time::seconds(to_us * 1e-6));
  };
  CHECK(s[0].dispatch);
  CHECK(s[0].action == Action{Op::kForward, 0, 0});
  CHECK(s[0].layer == 0);
  CHECK(!s[0].paired);
  at(s[0], 20, 24);
  CHECK(!s[1].dispatch);
  at(s[1], 36, 40);
  CHECK(s[2].layer == 1);
  at(s[2], 60, 64);
  at(s[3], 76, 80);
  CHECK(!s[4].dispatch);  // the backward combines first
  at(s[4], 100, 104);
  CHECK(s[5].dispatch);
  at(s[5], 128, 132);
  at(s[6], 172, 176);
  at(s[7], 200, 204);
  at(s[8], 300, 304);
  at(s[9], 319.75, 323.75);
  CHECK(s[9].action == Action{Op::kInputGrad, 0, 1});
}

TEST_CASE("paired, each exchange runs under the other pass's compute, across both spans") {
  // F of mb 1 paired with B of mb 0 (options.moe_a2a_overlap), one layer:
  // forward rest 40, dispatch 8, experts 24, combine 8; backward rest 80,
  // dispatch 8, experts 48, combine 8. Slots (k = the compute slowdown while
  // both run): F rest | B combine = 40 + 8k; B experts | F dispatch = 48 +
  // 8k; F experts | B dispatch = 24 + 8k; B rest | F combine = 80 + 8k; the
  // pair 192 + 32k. The F task spans 0-100, the B task 100-200: pair time x
  // lies at 200 x / (192 + 32k).
  Hand h = hand_stage();
  h.sim.ep_stages[0].moe_layers = 1;
  h.sim.a2a_overlap = true;
  h.sim.a2a_slowdown = 0.3;  // options.comm_slowdown as the lowering passes it on
  h.add({Op::kForward, 0, 1}, 0, 100);
  h.add({Op::kBackward, 0, 0}, 100, 200);
  const auto s = report::ep_slices(h.sim);
  REQUIRE(s.size() == 4);
  const double k = 0.3, pair = 192 + 32 * k;
  auto us = [&](double x) { return Time::seconds(200.0 * x / pair * 1e-6); };
  // B's combine at the start, F's dispatch after the first slot, B's
  // dispatch after two, F's combine after three.
  CHECK(s[0].action == Action{Op::kBackward, 0, 0});
  CHECK(!s[0].dispatch);
  CHECK(s[0].paired);
  CHECK((s[0].end - us(8)).ps() <= 1);
  CHECK(s[1].action == Action{Op::kForward, 0, 1});
  CHECK(s[1].dispatch);
  CHECK((s[1].start - us(40 + 8 * k)).ps() <= 1);
  CHECK(s[2].action == Action{Op::kBackward, 0, 0});
  CHECK((s[2].start - us(88 + 16 * k)).ps() <= 1);
  CHECK(s[3].action == Action{Op::kForward, 0, 1});
  CHECK(!s[3].dispatch);
  CHECK((s[3].start - us(112 + 24 * k)).ps() <= 1);
  CHECK((s[3].end - us(120 + 24 * k)).ps() <= 1);
}

TEST_CASE("a MoE run's exchanges: inside their actions, two a MoE layer, none for a dense model") {
  for (bool overlap : {false, true}) {
    CAPTURE(overlap);
    const std::vector<std::string> set = {"options.moe_a2a_overlap=" + std::string(overlap ? "true" : "false")};
    const config::Scenario sc =
        config::load_file(TRAINSIM_SOURCE_DIR "/tests/fuzz/seeds/whatif/dualpipe-moe.json", set);
    const driver::WhatIf w = driver::simulate(sc);
    const auto slices = report::ep_slices(*w.sim);
    // Each (F, B or I, MoE layer) has one dispatch and one combine, and no
    // two on a GPU overlap. With the overlap the paired ones say so (warm-up
    // forwards and cool-down backwards run alone); without, none is paired.
    int moving = 0;
    for (core::TaskId id = 0; id < w.sim->graph.size(); ++id) {
      const auto& ti = w.sim->info[id];
      const bool first_piece = id == 0 || !(w.sim->info[id - 1].action == ti.action);
      moving += ti.kind == lower::TaskKind::kCompute && first_piece && ti.action.op != Op::kWeightGrad
                    ? w.costs->stages[ti.action.stage].moe_layers
                    : 0;
    }
    // (Paired with a stage of more MoE layers, a layer's exchange can run in pieces.)
    std::set<std::tuple<int, int, int, int, int, bool>> seen;
    for (const auto& e : slices) {
      CHECK(e.layer < w.costs->stages[e.action.stage].moe_layers);
      seen.emplace(e.rank, static_cast<int>(e.action.op), e.action.stage, e.action.microbatch, e.layer, e.dispatch);
    }
    CHECK(seen.size() == static_cast<std::size_t>(2 * moving));
    if (!overlap) CHECK(slices.size() == seen.size());
    for (std::size_t i = 1; i < slices.size(); ++i) {
      if (slices[i].rank == slices[i - 1].rank) CHECK(slices[i - 1].end <= slices[i].start);
    }
    int paired = 0;
    for (const auto& e : slices) paired += e.paired ? 1 : 0;
    CHECK((paired > 0) == overlap);
  }
  const config::Scenario dense = config::load_file(TRAINSIM_SOURCE_DIR "/tests/fuzz/seeds/whatif/dualpipe-gpt-tied.json");
  CHECK(report::ep_slices(*driver::simulate(dense).sim).empty());
}

}  // namespace report_ep_slices_test
