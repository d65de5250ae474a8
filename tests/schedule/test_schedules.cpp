#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "schedule/check.hpp"
#include "schedule/communication.hpp"
#include "schedule/registry.hpp"
#include "schedule/sharding.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace schedule_schedules_test {

using namespace trainsim::schedule;


TEST_CASE("the registry lists every schedule") {
  for (const char* name : {"gpipe", "1f1b", "interleaved-1f1b", "2bp", "gpipe-2bp", "zb-h1", "zb-h2", "zb-1p", "zb-2p",
                           "zb-v", "dualpipe", "dualpipev", "breadth-first"}) {
    CAPTURE(name);
    CHECK(find_schedule(name) != nullptr);
  }
  CHECK(find_schedule("nope") == nullptr);
}

TEST_CASE("GPipe: all forwards, then all backwards") {
  const Program p = find_schedule("gpipe")->program(Shape::linear(2, 3));
  CHECK(to_string(p.ranks[0]) == "0F0 0F1 0F2 0B0 0B1 0B2");
  CHECK(to_string(p.ranks[1]) == "1F0 1F1 1F2 1B0 1B1 1B2");
}

TEST_CASE("1F1B: p - r - 1 warm-up forwards, then alternate, then drain") {
  // p = 4, m = 6. Rank 0 warms up with 3 forwards, rank 3 with none.
  const Program p = find_schedule("1f1b")->program(Shape::linear(4, 6));
  CHECK(to_string(p.ranks[0]) == "0F0 0F1 0F2 0F3 0B0 0F4 0B1 0F5 0B2 0B3 0B4 0B5");
  CHECK(to_string(p.ranks[2]) == "2F0 2F1 2B0 2F2 2B1 2F3 2B2 2F4 2B3 2F5 2B4 2B5");
  CHECK(to_string(p.ranks[3]) == "3F0 3B0 3F1 3B1 3F2 3B2 3F3 3B3 3F4 3B4 3F5 3B5");
}

TEST_CASE("1F1B with fewer micro-batches than stages") {
  // m = 2 < p = 4: rank 0 can only warm up with 2 forwards, then drains.
  const Program p = find_schedule("1f1b")->program(Shape::linear(4, 2));
  CHECK(to_string(p.ranks[0]) == "0F0 0F1 0B0 0B1");
}

TEST_CASE("every registered schedule passes the checks, or refuses the shape with a reason") {
  // pp 1..8, vp 1..4, m 1..32, stages placed as the plugin says: a plugin
  // either emits a program that passes every check (with and without ZeRO-3's
  // UNSHARD/RESHARD) or throws std::invalid_argument saying why.
  for (const auto& s : all_schedules()) {
    int accepted = 0;
    for (int ranks = 1; ranks <= 8; ++ranks) {
      for (int vp = 1; vp <= 4; ++vp) {
        for (int m = 1; m <= 32; ++m) {
          Shape shape;
          Program compute;
          try {
            shape = Shape::placed(s->placement(), ranks, vp, m);  // (DualPipe's two directions refuse an odd m)
            compute = s->program(shape);
          } catch (const std::invalid_argument& e) {
            CHECK(std::string(e.what()).size() > 10);
            continue;
          }
          ++accepted;
          CAPTURE(std::string(s->name()));
          CAPTURE(ranks);
          CAPTURE(vp);
          CAPTURE(m);
          const Program program = with_communication(compute, shape);
          CHECK_NOTHROW(check(program, shape));
          CHECK_NOTHROW(check(with_sharding(program), shape));
        }
      }
    }
    CAPTURE(std::string(s->name()));
    CHECK(accepted > 0);
  }
}

TEST_CASE("single-stage schedules refuse virtual stages") {
  for (const char* name : {"gpipe", "1f1b", "2bp", "gpipe-2bp", "zb-h1", "zb-h2", "zb-1p", "zb-2p"}) {
    CAPTURE(name);
    CHECK_THROWS_AS(find_schedule(name)->program(Shape::looped(2, 2, 4)), std::invalid_argument);
  }
}

TEST_CASE("interleaved 1F1B: Megatron-LM's warm-up and chunk order") {
  // p = 2, v = 2, m = 4: 8 steps per rank. Warm-up 2 (p - r - 1) + (v - 1) p:
  // 4 on rank 0, 2 on rank 1. Forward step k runs chunk (k mod 4) / 2 on
  // micro-batch k / 4 * 2 + k mod 2; backward steps take the chunks in reverse.
  // Rank r's chunk c is stage 2c + r.
  const Program p = find_schedule("interleaved-1f1b")->program(Shape::looped(2, 2, 4));
  CHECK(to_string(p.ranks[0]) == "0F0 0F1 2F0 2F1 0F2 2B0 0F3 2B1 2F2 0B0 2F3 0B1 2B2 2B3 0B2 0B3");
  CHECK(to_string(p.ranks[1]) == "1F0 1F1 3F0 3B0 3F1 3B1 1F2 1B0 1F3 1B1 3F2 3B2 3F3 3B3 1B2 1B3");
}

TEST_CASE("interleaved 1F1B needs m to be a multiple of pp") {
  try {
    (void)find_schedule("interleaved-1f1b")->program(Shape::looped(4, 2, 6));
    FAIL("accepted m = 6 on pp = 4");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) ==
          "interleaved-1f1b needs the micro-batches per pipeline (6) to be a multiple of pp (4): change "
          "parallel.global_batch, microbatch_size or dp");
  }
}

TEST_CASE("2BP: 1F1B's order with I for B, every W at the end") {
  // 1F1B on p = 2, m = 3, rank 0: F0 F1 B0 F2 B1 B2.
  const Program p = find_schedule("2bp")->program(Shape::linear(2, 3));
  CHECK(to_string(p.ranks[0]) == "0F0 0F1 0I0 0F2 0I1 0I2 0W0 0W1 0W2");
  CHECK(to_string(p.ranks[1]) == "1F0 1I0 1F1 1I1 1F2 1I2 1W0 1W1 1W2");
  const Program g = find_schedule("gpipe-2bp")->program(Shape::linear(2, 2));
  CHECK(to_string(g.ranks[0]) == "0F0 0F1 0I0 0I1 0W0 0W1");
}

TEST_CASE("ZB-H1: warm-up p - r - 1, r rounds with W put off, then F I W") {
  // p = 3, m = 4. Rank 0: F0 F1, then F I W while forwards remain, then I W.
  // Rank 2: no warm-up, two rounds of F I, then F I W, then the two W's owed.
  const Program p = find_schedule("zb-h1")->program(Shape::linear(3, 4));
  CHECK(to_string(p.ranks[0]) == "0F0 0F1 0F2 0I0 0W0 0F3 0I1 0W1 0I2 0W2 0I3 0W3");
  CHECK(to_string(p.ranks[2]) == "2F0 2I0 2F1 2I1 2F2 2I2 2W0 2F3 2I3 2W1 2W2 2W3");
}

TEST_CASE("ZB-H2: warm-up 2(p - r) - 2, 2r rounds with W put off") {
  // p = 2, m = 4. Rank 0: warm-up 2, then F I W. Rank 1: two rounds of F I, then F I W, then W's.
  const Program p = find_schedule("zb-h2")->program(Shape::linear(2, 4));
  CHECK(to_string(p.ranks[0]) == "0F0 0F1 0F2 0I0 0W0 0F3 0I1 0W1 0I2 0W2 0I3 0W3");
  CHECK(to_string(p.ranks[1]) == "1F0 1I0 1F1 1I1 1F2 1I2 1W0 1F3 1I3 1W1 1W2 1W3");
}

TEST_CASE("breadth-first: each local stage takes every micro-batch in turn") {
  // p = 2, v = 2, m = 2: rank 0 holds stages 0 and 2.
  const Program p = find_schedule("breadth-first")->program(Shape::looped(2, 2, 2));
  CHECK(to_string(p.ranks[0]) == "0F0 0F1 2F0 2F1 2B0 2B1 0B0 0B1");
  CHECK(to_string(p.ranks[1]) == "1F0 1F1 3F0 3F1 3B0 3B1 1B0 1B1");
}

TEST_CASE("zb-v: two chunks per rank in a V, refuses other shapes") {
  const Schedule* zbv = find_schedule("zb-v");
  REQUIRE(zbv != nullptr);
  CHECK(zbv->placement() == Placement::kVShape);
  auto refusal = [&](const Shape& shape) {
    try {
      (void)zbv->program(shape);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(refusal(Shape::placed(Placement::kVShape, 4, 1, 8)) ==
        "zb-v runs two stages per rank in a V (parallel.vp = 2), got vp = 1");
  CHECK(refusal(Shape::placed(Placement::kVShape, 4, 3, 8)) ==
        "zb-v runs two stages per rank in a V (parallel.vp = 2), got vp = 3");
  // Looped, stage 4 of 8 sits on rank 0; the V puts it on rank 3.
  CHECK(refusal(Shape::looped(4, 2, 8)) == "zb-v places stage 4 on rank 3 (a V), the shape on rank 0");
  CHECK(refusal(Shape::placed(Placement::kVShape, 4, 2, 1)).empty());  // any m >= 1
}

TEST_CASE("zb-v on one rank: both chunks, one micro-batch at a time") {
  // p = 1: stages 0 and 1 on rank 0, at most 2 chunk activations in flight.
  // 0F0 (holds 1, promises 1 to 1F0), 1F0 (holds 2), the backward 1I0 0I0;
  // memory is full, so 1W0; now 0F1 fits (1 held + 1 new, nothing promised)
  // and goes before the W owed, which must then free the slot 1F1 needs.
  const Program p = find_schedule("zb-v")->program(Shape::placed(Placement::kVShape, 1, 2, 2));
  CHECK(to_string(p.ranks[0]) == "0F0 1F0 1I0 0I0 1W0 0F1 0W0 1F1 1I1 0I1 1W1 0W1");
}

TEST_CASE("zb-v keeps 1F1B's memory: at most 2p chunk activations in flight per rank") {
  // A chunk is half a 1F1B stage on the same p ranks, so 2p chunk activations
  // are 1F1B's peak of p micro-batches. Rank p - 1 reaches it when m >= p:
  // micro-batch 0's backward comes back to it at 3p - 1 (forward down and up
  // 2p, backward up p - 1), and to idle not before then it runs the F's of
  // micro-batches 0..p - 1 in both its chunks, 2p of them.
  for (int p = 1; p <= 8; ++p) {
    for (int m = 1; m <= 32; ++m) {
      CAPTURE(p);
      CAPTURE(m);
      const Program prog = find_schedule("zb-v")->program(Shape::placed(Placement::kVShape, p, 2, m));
      for (int r = 0; r < p; ++r) {
        int in_flight = 0, most = 0;
        for (const Action& a : prog.ranks[r]) {
          in_flight += a.op == Op::kForward ? 1 : a.op == Op::kWeightGrad ? -1 : 0;
          most = std::max(most, in_flight);
        }
        CHECK(in_flight == 0);
        CHECK(most <= 2 * p);
        if (r == p - 1 && m >= p) CHECK(most == 2 * p);
      }
    }
  }
}

TEST_CASE("zb-v places uneven stage times and transfers without deadlock, within its memory") {
  // The no-deadlock argument (zero_bubble_v.hpp) holds for any durations:
  // stage times drawn from a fixed sequence (0.25 to 4 units, transfers 0 to 1)
  // must give programs that pass every check, 2p chunk activations at most.
  unsigned state = 12345;
  auto draw = [&](double lo, double hi) {
    state = state * 1103515245u + 12345u;
    return lo + (hi - lo) * static_cast<double>((state >> 8) % 1000) / 999.0;
  };
  for (int p = 1; p <= 8; ++p) {
    for (int m : {1, 2, 3, p, 2 * p + 1, 17}) {
      for (int trial = 0; trial < 4; ++trial) {
        CAPTURE(p);
        CAPTURE(m);
        CAPTURE(trial);
        Shape shape = Shape::placed(Placement::kVShape, p, 2, m);
        for (int s = 0; s < shape.stages; ++s) {
          shape.times.push_back({draw(0.25, 4.0), draw(0.25, 4.0), draw(0.25, 4.0), draw(0.0, 1.0)});
        }
        const Program compute = find_schedule("zb-v")->program(shape);
        CHECK_NOTHROW(check(with_communication(compute, shape), shape));
        for (const auto& actions : compute.ranks) {
          int in_flight = 0, most = 0;
          for (const Action& a : actions) {
            in_flight += a.op == Op::kForward ? 1 : a.op == Op::kWeightGrad ? -1 : 0;
            most = std::max(most, in_flight);
          }
          CHECK(most <= 2 * p);
        }
      }
    }
  }
}

TEST_CASE("dualpipe: DualPipe's eight phases, the ranks of each half mirroring each other") {
  const Schedule* dual = find_schedule("dualpipe");
  REQUIRE(dual != nullptr);
  CHECK(dual->placement() == Placement::kDual);
  // p = 2, m = 4 (2 each way): n = 1, h = 0 on both ranks. Rank 0's chunk 0
  // is stage 0 (down), chunk 1 stage 3 (up, the copy of stage 1's layers);
  // rank 1, in the second half, takes chunk 0 = stage 2 (up) and chunk 1 =
  // stage 1 (down). Phases: 2 (F0 F1), 4 once (F0 B1 F1 B0), 6 once (B1,
  // then B0 split), 8 (W).
  const Program two = dual->program(Shape::placed(Placement::kDual, 2, 1, 4));
  CHECK(to_string(two.ranks[0]) == "0F0 3F0 0F1 3B0 3F1 0B0 3B1 0I1 0W1");
  CHECK(to_string(two.ranks[1]) == "2F0 1F0 2F1 1B0 1F1 2B0 1B1 2I1 2W1");
  // p = 4, m = 8 (4 each way): n = 2. Rank 0 (h = 0, chunks 0 and 7): phase
  // 1 two F0, 2 (F0 F1), 3 (I1 W F1), 4 once (4 - 4 + 1), 5 once (B1 F1 B0),
  // 6 (B1, B0 split), 7 (W I0), 8 W.
  const Program four = dual->program(Shape::placed(Placement::kDual, 4, 1, 8));
  CHECK(to_string(four.ranks[0]) == "0F0 0F1 0F2 7F0 7I0 7W0 7F1 0F3 7B1 7F2 0B0 7B2 7F3 0B1 7B3 0I2 0W2 0I3 0W3");
  // Rank p - 1 - r runs rank r's order on the copies of its stages (s -> s + 4 mod 8).
  for (int r = 0; r < 2; ++r) {
    std::vector<Action> mirrored = four.ranks[r];
    for (Action& a : mirrored) a.stage = (a.stage + 4) % 8;
    CHECK(four.ranks[3 - r] == mirrored);
  }
  auto refusal = [&](int p, int vp, int m) {
    try {
      (void)dual->program(Shape::placed(Placement::kDual, p, vp, m));
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(refusal(3, 1, 6) == "dualpipe pairs rank r with rank pp - 1 - r; expected an even pp, got 3");
  CHECK(refusal(4, 1, 6) ==
        "dualpipe needs at least 2 x pp = 8 micro-batches per pipeline (half from each end), got 6");
  CHECK(refusal(4, 2, 8) == "dualpipe runs one stage per rank in each direction (parallel.vp = 1), got vp = 2");
  CHECK(refusal(4, 1, 8).empty());
  // A one-direction shape, even with the same ranks for the stages, is not DualPipe's.
  CHECK_THROWS_AS(dual->program(Shape::placed(Placement::kVShape, 4, 2, 8)), std::invalid_argument);
  CHECK_THROWS_AS(find_schedule("dualpipev")->program(Shape::placed(Placement::kDual, 4, 1, 8)),
                  std::invalid_argument);
}

}  // namespace schedule_schedules_test
