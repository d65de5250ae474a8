// The "did you mean" of every unknown name (core/nearest_name.hpp).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/nearest_name.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace core_nearest_name_test {

using trainsim::core::nearest_name;

TEST_CASE("the nearest name: a typo within a third of the length, else a name cut short") {
  const std::vector<std::string> names = {"tp", "pp", "microbatch_size", "zero_stage", "gpu2->node0.nvswitch"};
  // One substitution in "zero_stagf": distance 1, within max(2, 10 / 3) = 3.
  CHECK(nearest_name("zero_stagf", names) == "zero_stage");
  // An extra letter at the end of a link name: distance 1.
  CHECK(nearest_name("gpu2->node0.nvswitchx", names) == "gpu2->node0.nvswitch");
  // "microbatch" is 5 edits short of microbatch_size (more than 10 / 3 allows), but begins it.
  CHECK(nearest_name("microbatch", names) == "microbatch_size");
  // Nothing within reach: no suggestion ("zzzz" is 4 edits from tp and pp,
  // beyond max(2, 4 / 3) = 2, and begins nothing).
  CHECK_FALSE(nearest_name("zzzz", names).has_value());
  // A 2-letter key is within 2 edits of any 2-letter name: the first such, tp.
  CHECK(nearest_name("mi", names) == "tp");
  // A key far longer than every name is ruled out by length alone.
  CHECK_FALSE(nearest_name(std::string(1000, 'x'), names).has_value());
}

}  // namespace core_nearest_name_test
