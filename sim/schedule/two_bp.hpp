// Two-stage backpropagation (2BP, Rae, Lee and Richings 2024, arXiv
// 2405.18047): the backward splits into backward-p1 (I, the gradient for the
// previous stage, sent on at once) and backward-p2 (W, the weight gradient),
// and every W waits until the rank has run all its I's. The previous stage
// gets its gradient sooner, so the pipeline drains faster; the price is that
// what W needs stays in memory until the end of the step.
//
//   2bp        1F1B's order with B replaced by I, then W for every micro-batch:
//              uniform costs give (m + p - 1)(F + I) + m W.
//   gpipe-2bp  GPipe's order with the same split.
//
// With parallel.twobp_concat the deferred W's of a stage run as one op over
// the concatenated micro-batches (lowering merges the run of W's).
#pragma once

#include "schedule/schedule.hpp"

namespace trainsim::schedule {

class TwoBP final : public Schedule {
 public:
  std::string_view name() const override { return "2bp"; }
  std::string_view description() const override {
    return "2BP: 1F1B with each backward split in I and W, every W deferred to the end of the step";
  }
  Program program(const Shape& shape) const override;
};

class GPipeTwoBP final : public Schedule {
 public:
  std::string_view name() const override { return "gpipe-2bp"; }
  std::string_view description() const override {
    return "GPipe with 2BP's split: all F, then all I, then all W";
  }
  Program program(const Shape& shape) const override;
};

}  // namespace trainsim::schedule
