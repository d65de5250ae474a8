#include "schedule/zero_bubble.hpp"

#include <algorithm>
#include <functional>
#include <stdexcept>

namespace trainsim::schedule {

namespace {

Program zero_bubble(const Shape& shape, const std::function<int(int)>& warmup, const std::function<int(int)>& deferred,
                    const char* name) {
  if (shape.stages != shape.ranks) {
    throw std::invalid_argument(std::string(name) + " runs one stage per rank (parallel.vp = 1)");
  }
  const int m = shape.microbatches;
  Program out;
  out.ranks.resize(shape.ranks);
  for (int r = 0; r < shape.ranks; ++r) {
    auto& a = out.ranks[r];
    const int s = r;  // one stage per rank
    int f = 0, i = 0, w = 0;
    auto forward = [&] { a.push_back({Op::kForward, s, f++}); };
    auto input = [&] { a.push_back({Op::kInputGrad, s, i++}); };
    auto weight = [&] { a.push_back({Op::kWeightGrad, s, w++}); };
    for (int k = std::min(warmup(r), m); k > 0; --k) forward();
    for (int k = deferred(r); k > 0 && f < m; --k) {
      forward();
      input();
    }
    while (f < m) {
      forward();
      input();
      weight();
    }
    while (i < m) {
      input();
      weight();
    }
    while (w < m) weight();
  }
  return out;
}

}  // namespace

Program ZeroBubbleH1::program(const Shape& shape) const {
  const int p = shape.ranks;
  return zero_bubble(shape, [p](int r) { return p - r - 1; }, [](int r) { return r; }, "zb-h1");
}

Program ZeroBubbleH2::program(const Shape& shape) const {
  const int p = shape.ranks;
  return zero_bubble(shape, [p](int r) { return 2 * (p - r) - 2; }, [](int r) { return 2 * r; }, "zb-h2");
}

}  // namespace trainsim::schedule
