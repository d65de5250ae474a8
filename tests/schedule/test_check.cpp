#include <doctest/doctest.h>

#include <string>

#include "schedule/check.hpp"

using namespace trainsim::schedule;

namespace {
std::string error_of(const Program& p, const Shape& s) {
  try {
    check(p, s);
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
  // Rank 1 wants to run 1B0 before 1F0, but 1B0 needs 1F0 (same stage): a cycle
  // 1F0 -> (issue order) ... reversed. Order edges: 1B0 -> 1F0; data: 1F0 -> 1B0.
  Program p;
  p.ranks = {{{F, 0, 0}, {B, 0, 0}}, {{B, 1, 0}, {F, 1, 0}}};
  const std::string e = error_of(p, Shape::linear(2, 1));
  CHECK(e.find("dependency cycle") != std::string::npos);
  CHECK(e.find("rank 1: 1B0 waits for rank 1: 1F0") != std::string::npos);
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
