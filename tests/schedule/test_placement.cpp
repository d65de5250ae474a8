#include <doctest/doctest.h>

#include <vector>

#include "schedule/action.hpp"
#include "schedule/csv.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace schedule_placement_test {

using namespace trainsim::schedule;

TEST_CASE("looped placement: stage s on rank s mod p") {
  // p = 3, vp = 2: stages 0..5 on ranks 0 1 2 0 1 2.
  CHECK(Shape::placed(Placement::kLooped, 3, 2, 4).stage_rank == std::vector<int>{0, 1, 2, 0, 1, 2});
  CHECK(Shape::looped(3, 2, 4).stage_rank == std::vector<int>{0, 1, 2, 0, 1, 2});
}

TEST_CASE("V placement: down the ranks, then back up") {
  // p = 3, vp = 2: stage s < 3 on rank s, stage s >= 3 on rank 2p - 1 - s =
  // 5 - s; ranks 0 1 2 2 1 0, so rank 0 holds both ends.
  const Shape s = Shape::placed(Placement::kVShape, 3, 2, 4);
  CHECK(s.stages == 6);
  CHECK(s.stage_rank == std::vector<int>{0, 1, 2, 2, 1, 0});
  CHECK(rank_of_stage(Placement::kVShape, 5, 3) == 0);
  // One rank: both stages on it. More chunks keep zig-zagging: p = 2, vp = 3.
  CHECK(Shape::placed(Placement::kVShape, 1, 2, 1).stage_rank == std::vector<int>{0, 0});
  CHECK(Shape::placed(Placement::kVShape, 2, 3, 1).stage_rank == std::vector<int>{0, 1, 1, 0, 0, 1});
  CHECK(placement_name(Placement::kVShape) == "v-shape");
  CHECK(placement_name(Placement::kLooped) == "looped");
}

TEST_CASE("a CSV program implies its placement") {
  // Rows are ranks. Stages 0 and 3 on rank 0, 1 and 2 on rank 1: a V.
  CHECK(implied_placement(parse_csv("0F0,3F0,3B0,0B0\n1F0,2F0,2B0,1B0\n")) == Placement::kVShape);
  // Stages 0 and 2 on rank 0: looped.
  CHECK(implied_placement(parse_csv("0F0,2F0,2B0,0B0\n1F0,3F0,3B0,1B0\n")) == Placement::kLooped);
  // One stage per rank fits both; looped is the answer.
  CHECK(implied_placement(parse_csv("0F0,0B0\n1F0,1B0\n")) == Placement::kLooped);
  // Neither fits (stage 1 on rank 0): looped, and the check names the action.
  CHECK(implied_placement(parse_csv("1F0,1B0\n0F0,0B0\n")) == Placement::kLooped);
}

TEST_CASE("dual placement: two pipelines of the same layers, down the ranks and back up") {
  // p = 3: stages 0-2 (the first direction) on ranks 0 1 2, stages 3-5 (the
  // second, a copy of the same layers) on ranks 2 1 0; 8 micro-batches, 4
  // through each direction.
  const Shape s = Shape::placed(Placement::kDual, 3, 1, 8);
  CHECK(s.stages == 6);
  CHECK(s.pipelines == 2);
  CHECK(s.pipeline_length() == 3);
  CHECK(s.microbatches == 4);
  CHECK(s.virtual_stages() == 1);
  CHECK(s.stage_rank == std::vector<int>{0, 1, 2, 2, 1, 0});
  // Stage 2 ends the first pipeline and stage 3 starts the second: they do not join.
  CHECK(s.has_next(1));
  CHECK(!s.has_next(2));
  CHECK(!s.has_previous(3));
  CHECK(s.has_previous(4));
  // Stage j's copy is stage 3 + j, and back.
  CHECK(s.copy_of(0) == 3);
  CHECK(s.copy_of(5) == 2);
  CHECK(placement_name(Placement::kDual) == "dual");
  CHECK(pipelines_of(Placement::kDual) == 2);
  CHECK(pipelines_of(Placement::kVShape) == 1);
  // One pipeline: every stage but the ends has neighbours, each its own copy.
  const Shape v = Shape::placed(Placement::kVShape, 3, 2, 8);
  CHECK(v.has_next(2));
  CHECK(v.has_previous(3));
  CHECK(v.copy_of(4) == 4);
  CHECK(v.microbatches == 8);
  // The directions split the micro-batches evenly.
  CHECK_THROWS_WITH_AS(Shape::placed(Placement::kDual, 2, 1, 7),
                       "its 2 pipelines (directions) split the 7 micro-batches evenly; expected a multiple of 2",
                       std::invalid_argument);
}

}  // namespace schedule_placement_test
