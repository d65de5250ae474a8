// DualPipe (DeepSeek-V3 technical report, arXiv 2412.19437 §3.2.1;
// deepseek-ai/DualPipe dualpipe/dualpipe.py, commit 3da1bbe): micro-batches
// enter the pipeline from both ends. Half of them run down the p ranks
// through stages 0 .. p - 1, the other half up them through a second copy
// of the same layers (Placement::kDual: stage p + j on rank p - 1 - j), so
// each rank holds two copies' worth of parameters, one stage of each
// direction, and the copies add their gradients before the step.
// Rank r runs DualPipe's eight phases (dual_phases.hpp) with n = p / 2 and
// h = min(r, p - 1 - r); on the first half of the ranks chunk 0 is the
// downward stage and chunk 1 the upward one, on the second half the other
// way round (the ranks mirror each other).
// Needs an even pp, one stage a rank each way (parallel.vp = 1) and at least
// 2 x pp micro-batches, an even number of them. Bubble, in the DualPipe
// README's terms for pp ranks: (pp / 2 - 1)(F&B + B - 3W), F&B the time of an
// overlapped forward-backward pair; activations in flight: pp + 1 chunks.
#pragma once

#include "schedule/schedule.hpp"

namespace trainsim::schedule {

class DualPipe final : public Schedule {
 public:
  std::string_view name() const override { return "dualpipe"; }
  std::string_view description() const override {
    return "DeepSeek's DualPipe: micro-batches from both ends of the pipeline over two copies of each stage's "
           "layers, forward and backward chunks paired to hide each other's expert-parallel exchanges; needs an "
           "even pp, vp = 1 and an even number of micro-batches >= 2 pp";
  }
  Program program(const Shape& shape) const override;
  Placement placement() const override { return Placement::kDual; }
};

}  // namespace trainsim::schedule
