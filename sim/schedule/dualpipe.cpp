#include "schedule/dualpipe.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "schedule/dual_phases.hpp"

namespace trainsim::schedule {

Program DualPipe::program(const Shape& shape) const {
  const int p = shape.ranks, m = shape.microbatches;  // m: through each direction
  if (shape.pipelines != 2 || shape.stages != 2 * p) {
    throw std::invalid_argument("dualpipe runs one stage per rank in each direction (parallel.vp = 1), got vp = " +
                                std::to_string(shape.virtual_stages()));
  }
  for (int s = 0; s < shape.stages; ++s) {
    if (shape.stage_rank[s] != rank_of_stage(Placement::kDual, s, p)) {
      throw std::invalid_argument("dualpipe places stage " + std::to_string(s) + " on rank " +
                                  std::to_string(rank_of_stage(Placement::kDual, s, p)) + ", the shape on rank " +
                                  std::to_string(shape.stage_rank[s]));
    }
  }
  if (p % 2 != 0) {
    throw std::invalid_argument("dualpipe pairs rank r with rank pp - 1 - r; expected an even pp, got " +
                                std::to_string(p));
  }
  if (m < p) {
    throw std::invalid_argument("dualpipe needs at least 2 x pp = " + std::to_string(2 * p) +
                                " micro-batches per pipeline (half from each end), got " + std::to_string(2 * m));
  }
  Program program;
  program.ranks.resize(p);
  for (int r = 0; r < p; ++r) {
    const int down = r, up = p + (p - 1 - r);  // this rank's stage of each direction
    const bool first_half = r < p / 2;
    program.ranks[r] = dual_phases(p / 2, std::min(r, p - 1 - r), m, first_half ? std::array{down, up}
                                                                                 : std::array{up, down});
  }
  return program;
}

}  // namespace trainsim::schedule
