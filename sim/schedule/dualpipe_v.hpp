// DualPipeV (DeepSeek's DualPipe cut in half, Sea AI Lab's "cut-in-half";
// deepseek-ai/DualPipe dualpipe/dualpipev.py, commit 3da1bbe): two chunks per
// rank in a V (stage r and stage 2p - 1 - r on rank r; Placement::kVShape,
// as ZB-V), one copy of the parameters. Rank r runs DualPipe's eight phases
// (dual_phases.hpp) with n = p, h = r, F0/B0 its down chunk and F1/B1 its up
// chunk. Needs m >= 2p micro-batches. Bubble, in the DualPipe README's terms
// for 2p stages: (p - 1)(F&B + B - 3W), F&B the time of an overlapped pair.
#pragma once

#include "schedule/schedule.hpp"

namespace trainsim::schedule {

class DualPipeV final : public Schedule {
 public:
  std::string_view name() const override { return "dualpipev"; }
  std::string_view description() const override {
    return "DeepSeek's DualPipeV: two chunks per rank in a V (parallel.vp = 2), forward and backward chunks paired "
           "to hide each other's expert-parallel exchanges; needs micro-batches >= 2 pp";
  }
  Program program(const Shape& shape) const override;
  Placement placement() const override { return Placement::kVShape; }
};

}  // namespace trainsim::schedule
