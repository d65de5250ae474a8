#include "schedule/breadth_first.hpp"

#include <stdexcept>

namespace trainsim::schedule {

Program BreadthFirst::program(const Shape& shape) const {
  const int p = shape.ranks, v = shape.virtual_stages(), m = shape.microbatches;
  if (shape.stages != p * v) throw std::invalid_argument("breadth-first needs pp x vp stages");
  Program out;
  out.ranks.resize(p);
  for (int r = 0; r < p; ++r) {
    auto& a = out.ranks[r];
    for (int c = 0; c < v; ++c) {
      for (int mb = 0; mb < m; ++mb) a.push_back({Op::kForward, c * p + r, mb});
    }
    for (int c = v - 1; c >= 0; --c) {
      for (int mb = 0; mb < m; ++mb) a.push_back({Op::kBackward, c * p + r, mb});
    }
  }
  return out;
}

}  // namespace trainsim::schedule
