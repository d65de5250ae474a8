#include "schedule/one_f_one_b.hpp"

#include <algorithm>
#include <stdexcept>

namespace trainsim::schedule {

Program OneFOneB::program(const Shape& shape) const {
  if (shape.stages != shape.ranks) throw std::invalid_argument("1f1b runs one stage per rank (parallel.vp = 1); see interleaved-1f1b");
  Program p;
  p.ranks.resize(shape.ranks);
  const int m = shape.microbatches;
  for (int s = 0; s < shape.stages; ++s) {
    auto& actions = p.ranks[shape.stage_rank[s]];
    const int warmup = std::min(shape.stages - s - 1 + shape.extra_warmup, m);
    for (int mb = 0; mb < warmup; ++mb) actions.push_back({Op::kForward, s, mb});
    for (int k = 0; k < m - warmup; ++k) {
      actions.push_back({Op::kForward, s, warmup + k});
      actions.push_back({Op::kBackward, s, k});
    }
    for (int mb = m - warmup; mb < m; ++mb) actions.push_back({Op::kBackward, s, mb});
  }
  return p;
}

}  // namespace trainsim::schedule
