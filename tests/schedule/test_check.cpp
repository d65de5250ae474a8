#include <doctest/doctest.h>

#include <string>

#include "schedule/check.hpp"
#include "schedule/communication.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace schedule_check_test {

using namespace trainsim::schedule;

namespace {
// Checks a full program as given.
std::string error_of_full(const Program& p, const Shape& s) {
  try {
    check(p, s);
  } catch (const ProgramError& e) {
    return e.what();
  }
  return "";
}

// Adds communication to a compute-only program, then checks it.
std::string error_of(const Program& p, const Shape& s) {
  try {
    check(with_communication(p, s), s);
  } catch (const ProgramError& e) {
    return e.what();
  }
  return "";
}

constexpr Op F = Op::kForward;
constexpr Op B = Op::kBackward;
}  // namespace

TEST_CASE("a missing forward is named") {
  Program p;
  p.ranks = {{{F, 0, 0}, {B, 0, 0}, {B, 0, 1}}};
  CHECK(error_of(p, Shape::linear(1, 2)) == "stage 0 micro-batch 1 has no F");
}

TEST_CASE("a repeated action is named with both places") {
  Program p;
  p.ranks = {{{F, 0, 0}, {F, 0, 0}, {B, 0, 0}}};
  CHECK(error_of(p, Shape::linear(1, 1)) == "rank 0: 0F0 repeats rank 0: 0F0");
}

TEST_CASE("an action on the wrong rank is refused") {
  Program p;
  p.ranks = {{{F, 0, 0}, {B, 0, 0}, {F, 1, 0}}, {{B, 1, 0}}};
  CHECK(error_of(p, Shape::linear(2, 1)) == "rank 0: 1F0 but stage 1 is placed on rank 1");
}

TEST_CASE("B and an I/W split for the same micro-batch conflict") {
  Program p;
  p.ranks = {{{F, 0, 0}, {B, 0, 0}, {Op::kInputGrad, 0, 0}, {Op::kWeightGrad, 0, 0}}};
  CHECK(error_of(p, Shape::linear(1, 1)) == "stage 0 micro-batch 0 has both B and an I/W split");
}

TEST_CASE("an I/W split passes when I comes before W") {
  Program p;
  p.ranks = {{{F, 0, 0}, {Op::kInputGrad, 0, 0}, {Op::kWeightGrad, 0, 0}}};
  CHECK(error_of(p, Shape::linear(1, 1)).empty());
}

TEST_CASE("a deadlock is reported as the actions that wait for each other") {
  // Rank 1 issues 1B0 before 1F0, but 1B0 needs 1F0's activations: issue order
  // says 1B0 -> ... -> 1F0, data says 1F0 -> 1B0.
  Program p;
  p.ranks = {{{F, 0, 0}, {B, 0, 0}}, {{B, 1, 0}, {F, 1, 0}}};
  const std::string e = error_of(p, Shape::linear(2, 1));
  CHECK(e.find("dependency cycle") != std::string::npos);
  CHECK(e.find("rank 1: 1B0") != std::string::npos);
  CHECK(e.find("rank 1: 1F0") != std::string::npos);
}

TEST_CASE("a cycle across ranks names both ranks") {
  // Each rank alone is fine, together they deadlock: rank 1 starts with 1F1,
  // which needs 0F1; rank 0 issues 0F1 only after 0B0, which needs 1B0; and
  // rank 1 issues 1B0 last, after 1F1.
  Program p;
  p.ranks = {{{F, 0, 0}, {B, 0, 0}, {F, 0, 1}, {B, 0, 1}}, {{F, 1, 1}, {B, 1, 1}, {F, 1, 0}, {B, 1, 0}}};
  const std::string e = error_of(p, Shape::linear(2, 2));
  CHECK(e.find("dependency cycle") != std::string::npos);
  CHECK(e.find("rank 0: 0F1") != std::string::npos);
  CHECK(e.find("rank 0: 0B0") != std::string::npos);
  CHECK(e.find("rank 1: 1B0") != std::string::npos);
  CHECK(e.find("rank 1: 1F1") != std::string::npos);
}

TEST_CASE("with_communication adds sends, receives, gradient reduction and the optimizer step") {
  // 1F1B, p = 2, m = 2. Rank 0 sends each forward's output on and receives
  // each backward's incoming gradient; rank 1 the reverse. Each stage's
  // REDUCE_GRAD follows its last backward; OPTIMIZER ends each rank.
  Program p;
  p.ranks = {{{F, 0, 0}, {F, 0, 1}, {B, 0, 0}, {B, 0, 1}}, {{F, 1, 0}, {B, 1, 0}, {F, 1, 1}, {B, 1, 1}}};
  const Shape s = Shape::linear(2, 2);
  const Program full = with_communication(p, s);
  CHECK(to_string(full.ranks[0]) == "0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 0RECV_B1 0B1 0REDUCE_GRAD OPTIMIZER");
  CHECK(to_string(full.ranks[1]) ==
        "1RECV_F0 1F0 1B0 1SEND_B0 1RECV_F1 1F1 1B1 1SEND_B1 1REDUCE_GRAD OPTIMIZER");
  CHECK(error_of_full(full, s).empty());
}

TEST_CASE("a send without its receive is refused") {
  Program p;
  p.ranks = {{{F, 0, 0}, {B, 0, 0}}, {{F, 1, 0}, {B, 1, 0}}};
  const Shape s = Shape::linear(2, 1);
  Program full = with_communication(p, s);
  // Drop rank 1's RECV_F0 (its first action).
  full.ranks[1].erase(full.ranks[1].begin());
  CHECK(error_of_full(full, s) == "stages 0 and 1 sit on different ranks, but rank 1 has no 1RECV_F0");
}

TEST_CASE("communication inside one rank is refused") {
  // One rank, so there is nothing to send: a SEND_F is an error.
  Program p;
  p.ranks = {{{F, 0, 0}, {Op::kSendF, 0, 0}, {B, 0, 0}, {Op::kReduceGrad, 0, 0}, {Op::kOptimizer, 0, 0}}};
  CHECK(error_of_full(p, Shape::linear(1, 1)) == "rank 0: 0SEND_F0 has nothing to do: no stage follows stage 0");
}

TEST_CASE("a send issued before its compute deadlocks") {
  // Rank 0 issues 0SEND_F0 before 0F0 produced it.
  Program p;
  p.ranks = {{{Op::kSendF, 0, 0}, {F, 0, 0}, {Op::kRecvB, 0, 0}, {B, 0, 0}, {Op::kReduceGrad, 0, 0}, {Op::kOptimizer, 0, 0}},
             {{Op::kRecvF, 1, 0}, {F, 1, 0}, {B, 1, 0}, {Op::kSendB, 1, 0}, {Op::kReduceGrad, 1, 0}, {Op::kOptimizer, 0, 0}}};
  const std::string e = error_of_full(p, Shape::linear(2, 1));
  CHECK(e.find("dependency cycle") != std::string::npos);
  CHECK(e.find("rank 0: 0SEND_F0") != std::string::npos);
  CHECK(e.find("rank 0: 0F0") != std::string::npos);
}

TEST_CASE("schedules may emit compute actions only") {
  Program p;
  p.ranks = {{{F, 0, 0}, {Op::kOptimizer, 0, 0}}};
  CHECK_THROWS_AS(with_communication(p, Shape::linear(1, 1)), ProgramError);
}

}  // namespace schedule_check_test
