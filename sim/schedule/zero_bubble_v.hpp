// ZB-V (Qi, Wan, Huang and Lin 2024, "Pipeline Parallelism with Controllable
// Memory", arXiv 2405.15362): each rank holds two model chunks placed in a V
// (stage r and stage 2p - 1 - r on rank r; Placement::kVShape), so a
// micro-batch's forward runs down the ranks and back up, and rank 0 holds
// both ends of the model. The backward is split into I and W.
//
// The order is found by playing the pipeline forward in time with the stages'
// own durations (Shape::times; F = I = W = 1 when unknown): whenever a rank is
// free it runs a ready I, else a ready F (the up chunk's first), else a W it
// owes, else it waits for the next I or F. Memory: a rank keeps at most 2p
// chunk activations (F done, W not yet), each half of a 1F1B stage's on the
// same p ranks, so its peak equals 1F1B's p micro-batches in flight.
//
// No deadlock, for any m >= 1: a down F (stage r) may not take a slot
// promised to the up F (stage 2p - 1 - r) of an earlier micro-batch still on
// its way. Take the oldest unfinished micro-batch j: an I or W of it needs no
// memory; its next F is next in its stage's order, and only micro-batches
// >= j hold memory. Down, its rank holds
// nothing of them; up, it holds only their down activations, each with a
// promised slot. A down F needs held + promised + 1 <= 2p before it, so
// held + promised <= 2p + 1 ever after: 2 x held <= 2p + 1, held <= p, and a
// slot is free.
//
// Uniform costs (F = I = W per chunk, free communication): no rank starts
// before the forward reaches it, so the iteration lasts at least
// 6 m F + (p - 1) F (rank p - 1 waits (p - 1) F, then runs 2m chunks x 3).
// It takes exactly that when m = p, and for m >= p never more than (both
// checked for p up to 8)
// 6 m F + 2 (p - 1) F, what zb-h1 takes on the same p ranks holding a whole
// rank's share (two chunks) per stage (tests/lower/test_pipeline.cpp).
#pragma once

#include "schedule/schedule.hpp"

namespace trainsim::schedule {

class ZeroBubbleV final : public Schedule {
 public:
  std::string_view name() const override { return "zb-v"; }
  bool reads_stage_times() const override { return true; }
  std::string_view description() const override {
    return "zero-bubble ZB-V: two chunks per rank in a V (parallel.vp = 2), I/W split placed by time; 1F1B's memory";
  }
  Program program(const Shape& shape) const override;
  Placement placement() const override { return Placement::kVShape; }
};

}  // namespace trainsim::schedule
