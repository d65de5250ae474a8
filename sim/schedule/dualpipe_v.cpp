#include "schedule/dualpipe_v.hpp"

#include "schedule/dual_phases.hpp"

#include <stdexcept>
#include <string>

namespace trainsim::schedule {

Program DualPipeV::program(const Shape& shape) const {
  const int p = shape.ranks, m = shape.microbatches;
  if (shape.pipelines != 1 || shape.stages != 2 * p) {
    throw std::invalid_argument("dualpipev runs two stages per rank in a V (parallel.vp = 2), got vp = " +
                                std::to_string(shape.virtual_stages()));
  }
  for (int s = 0; s < shape.stages; ++s) {
    if (shape.stage_rank[s] != rank_of_stage(Placement::kVShape, s, p)) {
      throw std::invalid_argument("dualpipev places stage " + std::to_string(s) + " on rank " +
                                  std::to_string(rank_of_stage(Placement::kVShape, s, p)) +
                                  " (a V), the shape on rank " + std::to_string(shape.stage_rank[s]));
    }
  }
  if (m < 2 * p) {
    throw std::invalid_argument("dualpipev needs at least 2 x pp = " + std::to_string(2 * p) +
                                " micro-batches per pipeline, got " + std::to_string(m));
  }
  Program program;
  program.ranks.resize(p);
  for (int r = 0; r < p; ++r) program.ranks[r] = dual_phases(p, r, m, {r, 2 * p - 1 - r});  // down, up
  return program;
}

}  // namespace trainsim::schedule
