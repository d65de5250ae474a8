#include <doctest/doctest.h>

#include <string>

#include "schedule/check.hpp"
#include "schedule/communication.hpp"
#include "schedule/registry.hpp"
#include "schedule/sharding.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace schedule_sharding_test {

using namespace trainsim::schedule;

namespace {
Program sharded(const char* name, const Shape& shape) {
  return with_sharding(with_communication(find_schedule(name)->program(shape), shape));
}
}  // namespace

TEST_CASE("1F1B alternates F and B, so every action gathers the weights") {
  // p = 1, m = 2: F0 B0 F1 B1 are four runs.
  const Program p = sharded("1f1b", Shape::linear(1, 2));
  CHECK(to_string(p.ranks[0]) ==
        "0UNSHARD 0F0 0RESHARD 0UNSHARD 0B0 0RESHARD 0UNSHARD 0F1 0RESHARD 0UNSHARD 0B1 0RESHARD 0REDUCE_GRAD "
        "OPTIMIZER");
}

TEST_CASE("breadth-first gathers a local stage once per pass") {
  // p = 1, v = 2, m = 3: stage 0's forwards, stage 1's forwards, stage 1's
  // backwards, stage 0's backwards: four runs, four gathers for 12 actions.
  const Program p = sharded("breadth-first", Shape::looped(1, 2, 3));
  CHECK(to_string(p.ranks[0]) ==
        "0UNSHARD 0F0 0F1 0F2 0RESHARD 1UNSHARD 1F0 1F1 1F2 1RESHARD 1UNSHARD 1B0 1B1 1B2 1RESHARD 1REDUCE_GRAD "
        "0UNSHARD 0B0 0B1 0B2 0RESHARD 0REDUCE_GRAD OPTIMIZER");
}

TEST_CASE("W's need no weights: a run of I's stays one window across them") {
  // 2BP, p = 1, m = 2: F0 I0 F1 I1 W0 W1 (warm-up 0): the W's come after the
  // last I's window closes.
  const Program p = sharded("2bp", Shape::linear(1, 2));
  CHECK(to_string(p.ranks[0]) ==
        "0UNSHARD 0F0 0RESHARD 0UNSHARD 0I0 0RESHARD 0UNSHARD 0F1 0RESHARD 0UNSHARD 0I1 0RESHARD 0W0 0W1 0REDUCE_GRAD "
        "OPTIMIZER");
}

TEST_CASE("with units, a run gathers and gives back its stage's units one by one, in the order it uses them") {
  // 1F1B, p = 1, m = 1: F0 B0, stage 0 in 3 units (say the embedding, a
  // layer and the head): the forward uses them first to last, the backward
  // last to first.
  const Shape shape = Shape::linear(1, 1);
  const Program base = with_communication(find_schedule("1f1b")->program(shape), shape);
  const Program p = with_sharding(base, true, true, {3});
  CHECK(to_string(p.ranks[0]) ==
        "0UNSHARD(u0) 0UNSHARD(u1) 0UNSHARD(u2) 0F0 0RESHARD(u0) 0RESHARD(u1) 0RESHARD(u2) "
        "0UNSHARD(u2) 0UNSHARD(u1) 0UNSHARD(u0) 0B0 0RESHARD(u2) 0RESHARD(u1) 0RESHARD(u0) 0REDUCE_GRAD OPTIMIZER");
  CHECK(p.ranks[0][1].unit() == 1);
  CHECK_NOTHROW(check(p, shape));
  // Held after the forward (reshard_after_forward false): no second gather,
  // and the backward gives every unit back.
  const Program held = with_sharding(base, false, true, {2});
  CHECK(to_string(held.ranks[0]) == "0UNSHARD(u0) 0UNSHARD(u1) 0F0 0B0 0RESHARD(u1) 0RESHARD(u0) 0REDUCE_GRAD OPTIMIZER");
  CHECK_NOTHROW(check(held, shape));
  // A unit left out of a window: the forward would run without all of its stage.
  Program missing = p;
  missing.ranks[0].erase(missing.ranks[0].begin() + 1);  // 0UNSHARD(u1)
  missing.ranks[0].erase(missing.ranks[0].begin() + 4);  // 0RESHARD(u1)
  std::string error = "no error";
  try {
    check(missing, shape);
  } catch (const ProgramError& e) {
    error = e.what();
  }
  CHECK(error == "rank 0: 0F0 runs on sharded parameters: no UNSHARD of stage 0's every unit before it");
}

TEST_CASE("the checks refuse unpaired UNSHARD and RESHARD") {
  const Shape shape = Shape::linear(1, 1);
  const Program base = with_communication(find_schedule("1f1b")->program(shape), shape);
  auto error_of = [&](const Program& p) {
    try {
      check(p, shape);
    } catch (const ProgramError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Program no_unshard = base;  // 0F0 0B0 0REDUCE_GRAD OPTIMIZER
  no_unshard.ranks[0].insert(no_unshard.ranks[0].begin(), Action::of_unit(Op::kReshard, 0, -1));
  CHECK(error_of(no_unshard) == "rank 0: 0RESHARD without an UNSHARD before it");
  Program outside = base;
  outside.ranks[0].insert(outside.ranks[0].begin() + 1, Action::of_unit(Op::kUnshard, 0, -1));
  outside.ranks[0].insert(outside.ranks[0].begin() + 3, Action::of_unit(Op::kReshard, 0, -1));
  // 0F0 0UNSHARD 0B0 0RESHARD: F runs before its weights were gathered.
  CHECK(error_of(outside) == "rank 0: 0F0 runs on sharded parameters: no UNSHARD of stage 0 before it");
  Program never = base;
  never.ranks[0].insert(never.ranks[0].begin(), Action::of_unit(Op::kUnshard, 0, -1));
  CHECK(error_of(never) == "rank 0: stage 0 is gathered (UNSHARD) and never given back (RESHARD)");
}

TEST_CASE("without reshard after forward, a forward leaves its stage gathered for the backward") {
  // 1F1B, p = 1, m = 2: F0 B0 F1 B1. F0's window keeps stage 0 (no RESHARD),
  // B0 runs on it without a gather and gives it back; F1 gathers again.
  const Shape shape = Shape::linear(1, 2);
  const Program p = with_sharding(with_communication(find_schedule("1f1b")->program(shape), shape), false);
  CHECK(to_string(p.ranks[0]) == "0UNSHARD 0F0 0B0 0RESHARD 0UNSHARD 0F1 0B1 0RESHARD 0REDUCE_GRAD OPTIMIZER");
  CHECK_NOTHROW(check(p, shape));
  // GPipe, p = 2, m = 2: rank 0 runs F0 F1, then B0 B1 on the same gather.
  const Shape two = Shape::linear(2, 2);
  const Program g = with_sharding(with_communication(find_schedule("gpipe")->program(two), two), false);
  CHECK(to_string(g.ranks[0]).find("0UNSHARD 0F0 0SEND_F0 0F1 0SEND_F1") != std::string::npos);
  CHECK(to_string(g.ranks[0]).find("0B1 0RESHARD") != std::string::npos);
  CHECK_NOTHROW(check(g, two));
}

TEST_CASE("without reshard after backward either, a stage is gathered once and given back before the step") {
  // 1F1B, p = 1, m = 2: F0 B0 F1 B1, as torch.distributed.pipelining runs
  // FSDP stages (reshard after forward off, no reshard after backward): one
  // UNSHARD before F0, one RESHARD before the optimizer step.
  const Shape shape = Shape::linear(1, 2);
  const Program p =
      with_sharding(with_communication(find_schedule("1f1b")->program(shape), shape), false, false);
  CHECK(to_string(p.ranks[0]) == "0UNSHARD 0F0 0B0 0F1 0B1 0REDUCE_GRAD 0RESHARD OPTIMIZER");
  CHECK_NOTHROW(check(p, shape));
  // With reshard after forward on, each forward gives the stage back after
  // it (F1 runs on what B0 kept, then drops it) and the backward after it
  // gathers it again; a backward keeps it.
  const Program f =
      with_sharding(with_communication(find_schedule("1f1b")->program(shape), shape), true, false);
  CHECK(to_string(f.ranks[0]) ==
        "0UNSHARD 0F0 0RESHARD 0UNSHARD 0B0 0F1 0RESHARD 0UNSHARD 0B1 0REDUCE_GRAD 0RESHARD OPTIMIZER");
  CHECK_NOTHROW(check(f, shape));
}

}  // namespace schedule_sharding_test
