// Megatron-Core's etp-ep-edp folding of a MoE stage's GPUs (workload/expert_folding.hpp).
#include <doctest/doctest.h>

#include <vector>

#include "workload/expert_folding.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_expert_folding_test {

using trainsim::workload::ExpertFolding;

TEST_CASE("16 GPUs at etp 2, ep 4: groups by hand") {
  // j = t + 2 (e + 4 d): t = j % 2, e = (j / 2) % 4, d = j / 8.
  const ExpertFolding f{2, 4};
  // Expert-tensor groups: pairs {0,1} {2,3} ... -> j 5 is in group 2.
  CHECK(f.etp_group_of(5) == 2);
  // Expert-parallel groups: same t and d, e = 0..3. j 5 has t 1, d 0 -> {1,3,5,7}, group 1;
  // j 12 has t 0, d 1 -> {8,10,12,14}, group 2.
  CHECK(f.ep_group_of(5) == 1);
  CHECK(f.ep_group_of(12) == 2);
  // Expert-data-parallel groups: same t and e, d = 0..1. j 13 = 5 + 8 -> group 5.
  CHECK(f.edp_group_of(13) == 5);
  CHECK(f.edp_group_of(5) == 5);
}

TEST_CASE("each group's members are the GPUs the group_of functions put in it") {
  for (const ExpertFolding f : {ExpertFolding{1, 8}, ExpertFolding{2, 4}, ExpertFolding{4, 2}, ExpertFolding{1, 1}}) {
    const int gpus = 16;
    const int edp = gpus / (f.etp * f.ep);
    std::vector<int> seen_ep(gpus, 0), seen_etp(gpus, 0), seen_edp(gpus, 0);
    for (int index = 0; index < gpus / f.ep; ++index) {
      for (int i = 0; i < f.ep; ++i) {
        const int j = f.ep_member(index, i);
        CHECK(f.ep_group_of(j) == index);
        ++seen_ep[static_cast<std::size_t>(j)];
      }
    }
    for (int index = 0; index < gpus / f.etp; ++index) {
      for (int i = 0; i < f.etp; ++i) {
        const int j = f.etp_member(index, i);
        CHECK(f.etp_group_of(j) == index);
        ++seen_etp[static_cast<std::size_t>(j)];
      }
    }
    for (int index = 0; index < f.etp * f.ep; ++index) {
      for (int i = 0; i < edp; ++i) {
        const int j = f.edp_member(index, i);
        CHECK(f.edp_group_of(j) == index);
        ++seen_edp[static_cast<std::size_t>(j)];
      }
    }
    // Every GPU in exactly one group of each kind.
    CHECK(seen_ep == std::vector<int>(gpus, 1));
    CHECK(seen_etp == std::vector<int>(gpus, 1));
    CHECK(seen_edp == std::vector<int>(gpus, 1));
  }
}

}  // namespace workload_expert_folding_test
