// Where each pipeline stage runs: the one stage -> rank map every part of the
// simulator uses (Shape::stage_rank, workload::Plan::rank_of_stage).
#pragma once

#include <string_view>

namespace trainsim::schedule {

enum class Placement {
  // Stage s on rank s mod ranks: one stage per rank, or Megatron-LM's
  // interleaving and breadth-first's looping with virtual stages.
  kLooped,
  // A V (zig-zag): chunk c = s / ranks goes down the ranks when c is even and
  // back up when odd, so with two chunks rank r holds stages r and
  // 2 ranks - 1 - r, and rank 0 both ends of the model (ZB-V).
  kVShape,
  // Two directions (DeepSeek's DualPipe): 2 x ranks stages form two
  // pipelines of the same layers. The first, stages 0 .. ranks - 1, runs down
  // the ranks; the second, a copy of the same layers with micro-batches of
  // its own, back up them: its stage ranks + j (the layers of stage j) runs
  // on rank ranks - 1 - j, as in kVShape, but the two do not join.
  kDual,
};

// How many pipelines of the same layers the placement lays over its stages.
int pipelines_of(Placement placement);

int rank_of_stage(Placement placement, int stage, int ranks);
std::string_view placement_name(Placement placement);  // "looped", "v-shape", "dual"

}  // namespace trainsim::schedule
