// The zero-bubble paper's automatic schedules (Qi, Wan, Huang and Lin 2024,
// arXiv 2401.10241 §3.1), by its heuristic (not its ILP refinement): the order
// each rank runs F, I and W is found by playing the pipeline forward in time
// with the stages' own durations (Shape::times), under a memory limit of
// `limit` micro-batches in flight (F done, W not yet) per rank:
//   - warm-up: forwards while memory allows and while another forward ends
//     before the rank's first I could start;
//   - then I as soon as it is ready, else F (memory allowing), else a W when
//     the wait is at least a W long, or when the wait would make this rank the
//     one that has idled most, or when memory is full;
//   - once the forwards are used up, the I's and W's left, I first.
//   zb-1p  limit p (1F1B's peak memory);  zb-2p  limit 2p.
#pragma once

#include <string>

#include "schedule/schedule.hpp"

namespace trainsim::schedule {

class ZeroBubbleAuto final : public Schedule {
 public:
  ZeroBubbleAuto(std::string name, int limit_per_rank_count) : name_(std::move(name)), factor_(limit_per_rank_count) {}
  std::string_view name() const override { return name_; }
  bool reads_stage_times() const override { return true; }
  std::string_view description() const override {
    return factor_ == 1 ? "zero-bubble ZB-1p: placed by the paper's heuristic from the stages' F/I/W times, 1F1B's memory"
                        : "zero-bubble ZB-2p: placed by the paper's heuristic from the stages' F/I/W times, twice 1F1B's memory";
  }
  Program program(const Shape& shape) const override;

 private:
  std::string name_;
  int factor_;  // memory limit: factor x p micro-batches in flight per rank
};

}  // namespace trainsim::schedule
