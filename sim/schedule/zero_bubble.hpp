// The handcrafted zero-bubble schedules (Qi, Wan, Huang and Lin 2024, arXiv
// 2401.10241 §3): the backward is split into I and W, and W's, which nothing
// downstream waits for, fill the places where 1F1B would idle.
//
// Rank r: `warm-up` forwards, then `deferred` rounds of F, I (their W's put
// off), then rounds of F, I, W while forwards remain, then I, W, then the W's
// still owed.
//   zb-h1  warm-up p - r - 1, deferred r: in flight at most p micro-batches,
//          as 1F1B; uniform costs with m >= p and W <= I give
//          m (F + I + W) + (p - 1)(F + I - W), a third of 1F1B's bubble when
//          F = I = W.
//   zb-h2  warm-up 2 (p - r) - 2, deferred 2r: up to 2p - 1 in flight; the
//          bubble falls to (p - 1) max(F, F + I - 2W), only the pipeline's
//          fill when F = I = W.
#pragma once

#include "schedule/schedule.hpp"

namespace trainsim::schedule {

class ZeroBubbleH1 final : public Schedule {
 public:
  std::string_view name() const override { return "zb-h1"; }
  std::string_view description() const override {
    return "zero-bubble ZB-H1: I/W split, W's fill 1F1B's bubble; 1F1B's memory, bubble (p - 1)(F + I - W)";
  }
  Program program(const Shape& shape) const override;
};

class ZeroBubbleH2 final : public Schedule {
 public:
  std::string_view name() const override { return "zb-h2"; }
  std::string_view description() const override {
    return "zero-bubble ZB-H2: longer warm-up, up to 2p - 1 micro-batches in flight, bubble (p - 1) max(F, F + I - 2W)";
  }
  Program program(const Shape& shape) const override;
};

}  // namespace trainsim::schedule
