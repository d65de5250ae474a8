// Breadth-first pipeline parallelism (Lamy-Poirier 2022, arXiv 2211.05953):
// looped placement as in interleaved 1F1B (stage c * p + r on rank r), but a
// rank runs every micro-batch through one local stage before it starts the
// next: forwards chunk by chunk, then backwards in reverse chunk order.
// Uniform costs give (m v + p - 1)(F + B) per chunk's F and B when m >= p, the
// interleaved schedule's bubble; activations of all m micro-batches are held,
// as in GPipe. Its point is sharded data parallelism: under ZeRO-3 a local
// stage's weights are gathered once per pass (the run of its forwards, then of
// its backwards) instead of once per micro-batch, and its gradients are
// reduce-scattered as soon as its last backward ends.
#pragma once

#include "schedule/schedule.hpp"

namespace trainsim::schedule {

class BreadthFirst final : public Schedule {
 public:
  std::string_view name() const override { return "breadth-first"; }
  std::string_view description() const override {
    return "breadth-first: looped stages (parallel.vp per rank), each local stage runs all micro-batches in turn; "
           "one ZeRO-3 gather per pass";
  }
  Program program(const Shape& shape) const override;
};

}  // namespace trainsim::schedule
