#include "schedule/placement.hpp"

namespace trainsim::schedule {

int rank_of_stage(Placement placement, int stage, int ranks) {
  const int chunk = stage / ranks, offset = stage % ranks;
  if (placement == Placement::kVShape && chunk % 2 == 1) return ranks - 1 - offset;
  return offset;
}

std::string_view placement_name(Placement placement) {
  return placement == Placement::kVShape ? "v-shape" : "looped";
}

}  // namespace trainsim::schedule
