// Interleaved 1F1B (Megatron-LM's virtual pipeline, Narayanan et al. 2021,
// arXiv 2104.04473 §2.2.2): each rank holds v model chunks (stage c * p + r on
// rank r) and runs 1F1B over "virtual micro-batches", switching chunk every p
// micro-batches. The bubble shrinks to (p - 1)(F + B) / v, where F and B are a
// rank's whole per-micro-batch work, for v times the point-to-point traffic.
//
// Warm-up as Megatron-LM computes it: 2 (p - r - 1) + (v - 1) p forward steps
// on rank r (Shape::extra_warmup more), or every step when m = p. Like
// Megatron-LM's original schedule, it needs m to be a multiple of p.
#pragma once

#include "schedule/schedule.hpp"

namespace trainsim::schedule {

class InterleavedOneFOneB final : public Schedule {
 public:
  std::string_view name() const override { return "interleaved-1f1b"; }
  std::string_view description() const override {
    return "Megatron-LM's interleaved 1F1B: parallel.vp chunks per rank, bubble (p - 1)(F + B) / vp; m a multiple of pp";
  }
  Program program(const Shape& shape) const override;
};

}  // namespace trainsim::schedule
