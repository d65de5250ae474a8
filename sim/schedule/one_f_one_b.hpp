// 1F1B (PipeDream-Flush, Narayanan et al. 2021, arXiv 2104.04473 §2.2): rank r
// runs p - r - 1 warm-up forwards, then alternates one forward with one
// backward, then drains the remaining backwards. Same bubble as GPipe, but
// rank r holds at most p - r micro-batches of activations instead of m
// (Shape::extra_warmup more when it runs that many more forwards first).
#pragma once

#include "schedule/schedule.hpp"

namespace trainsim::schedule {

class OneFOneB final : public Schedule {
 public:
  std::string_view name() const override { return "1f1b"; }
  std::string_view description() const override {
    return "1F1B (PipeDream-Flush): warm-up forwards, then one forward one backward; holds at most p - r micro-batches";
  }
  Program program(const Shape& shape) const override;
};

}  // namespace trainsim::schedule
