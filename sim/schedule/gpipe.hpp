// GPipe (Huang et al. 2019, arXiv 1811.06965): every rank runs the forwards of
// all micro-batches, then all the backwards. Simple, and it holds the
// activations of every micro-batch at once.
#pragma once

#include "schedule/schedule.hpp"

namespace trainsim::schedule {

class GPipe final : public Schedule {
 public:
  std::string_view name() const override { return "gpipe"; }
  std::string_view description() const override {
    return "GPipe: all forwards, then all backwards; holds every micro-batch's activations";
  }
  Program program(const Shape& shape) const override;
};

}  // namespace trainsim::schedule
