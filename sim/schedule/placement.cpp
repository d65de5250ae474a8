#include "schedule/placement.hpp"

namespace trainsim::schedule {

int rank_of_stage(Placement placement, int stage, int ranks) {
  const int chunk = stage / ranks, offset = stage % ranks;
  if (placement != Placement::kLooped && chunk % 2 == 1) return ranks - 1 - offset;
  return offset;
}

std::string_view placement_name(Placement placement) {
  switch (placement) {
    case Placement::kLooped: return "looped";
    case Placement::kVShape: return "v-shape";
    case Placement::kDual: return "dual";
  }
  return "looped";
}

int pipelines_of(Placement placement) { return placement == Placement::kDual ? 2 : 1; }

}  // namespace trainsim::schedule
