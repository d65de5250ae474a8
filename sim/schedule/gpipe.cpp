#include "schedule/gpipe.hpp"

#include <stdexcept>

namespace trainsim::schedule {

Program GPipe::program(const Shape& shape) const {
  if (shape.stages != shape.ranks) throw std::invalid_argument("gpipe runs one stage per rank (parallel.vp = 1); see breadth-first");
  Program p;
  p.ranks.resize(shape.ranks);
  for (int s = 0; s < shape.stages; ++s) {
    auto& actions = p.ranks[shape.stage_rank[s]];
    for (int mb = 0; mb < shape.microbatches; ++mb) actions.push_back({Op::kForward, s, mb});
    for (int mb = 0; mb < shape.microbatches; ++mb) actions.push_back({Op::kBackward, s, mb});
  }
  return p;
}

}  // namespace trainsim::schedule
