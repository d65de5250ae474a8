#include "schedule/two_bp.hpp"

#include <stdexcept>

#include "schedule/gpipe.hpp"
#include "schedule/one_f_one_b.hpp"

namespace trainsim::schedule {

namespace {

// Each B becomes an I in place; the W's follow at the end, in micro-batch order.
Program split_and_defer(const Program& with_b) {
  Program out;
  out.ranks.resize(with_b.ranks.size());
  for (std::size_t r = 0; r < with_b.ranks.size(); ++r) {
    std::vector<Action> deferred;
    for (const Action& a : with_b.ranks[r]) {
      if (a.op == Op::kBackward) {
        out.ranks[r].push_back({Op::kInputGrad, a.stage, a.microbatch});
        deferred.push_back({Op::kWeightGrad, a.stage, a.microbatch});
      } else {
        out.ranks[r].push_back(a);
      }
    }
    out.ranks[r].insert(out.ranks[r].end(), deferred.begin(), deferred.end());
  }
  return out;
}

}  // namespace

Program TwoBP::program(const Shape& shape) const {
  if (shape.stages != shape.ranks) throw std::invalid_argument("2bp runs one stage per rank (parallel.vp = 1)");
  return split_and_defer(OneFOneB().program(shape));
}

Program GPipeTwoBP::program(const Shape& shape) const {
  if (shape.stages != shape.ranks) throw std::invalid_argument("gpipe-2bp runs one stage per rank (parallel.vp = 1)");
  return split_and_defer(GPipe().program(shape));
}

}  // namespace trainsim::schedule
