// DualPipeV (DeepSeek's DualPipe cut in half, Sea AI Lab's "cut-in-half";
// deepseek-ai/DualPipe dualpipe/dualpipev.py, commit 3da1bbe): two chunks per
// rank in a V (stage r and stage 2p - 1 - r on rank r; Placement::kVShape,
// as ZB-V), one copy of the parameters. Each rank runs eight phases, with
// F0/F1 the forward of its down/up chunk, B0/B1 a full backward, I0/I1 a
// backward whose weight gradient is deferred and W the oldest deferred one:
//   1  2(p - r - 1) x F0
//   2  (r + 1) x (F0 F1)
//   3  (p - r - 1) x (I1 W F1)
//   4  (m - 2p + r + 1) x (F0 B1 F1 B0)   each F beside the B after it
//   5  (p - r - 1) x (B1 F1 B0)            F1 beside B0
//   6  (r + 1) x (B1 B0)                   the second half as I's (see the .cpp)
//   7  (p - r - 1) x (W I0)
//   8  (r + 1) x W
// The pairs of phases 4 and 5 are DualPipe's overlapped forward-backward
// chunks: with a MoE model and options.moe_a2a_overlap each one's dispatch
// and combine runs under the other's compute (lower/a2a_pairs.hpp). The
// reference runs the last rank's first F0 B1 of phase 4 one after the other
// to shorten its bubble; the pairing here overlaps them too.
// Needs m >= 2p micro-batches. Bubble, in the DualPipe README's terms for
// 2p stages: (p - 1)(F&B + B - 3W), F&B the time of an overlapped pair.
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
