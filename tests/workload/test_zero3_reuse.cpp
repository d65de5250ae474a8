// DeepSpeed's reuse distance under recomputation: the share of a layer's
// sharded parameters gathered a second time for its backward.
#include <doctest/doctest.h>

#include "workload/transformer.hpp"
#include "workload/zero3_reuse.hpp"
#include "small_setups.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace workload_zero3_reuse_test {

using namespace trainsim::workload;

TEST_CASE("a tensor is gathered again when twice what follows it reaches the distance") {
  // Tensors 10, 1, 40, 40 in forward order; 1 persists (threshold 1).
  // Distance 100: the last 40 has nothing after it (kept); the first 40
  // has 2 x 40 = 80 < 100 (kept); the 10 has 2 x 81 = 162 (gathered
  // again): 10 of the 90 sharded.
  CHECK(regathered_share({10, 1, 40, 40}, 1, 100) == doctest::Approx(10.0 / 90.0));
  // Distance 50: 80 >= 50, the first 40 too: 50 of 90.
  CHECK(regathered_share({10, 1, 40, 40}, 1, 50) == doctest::Approx(50.0 / 90.0));
  // Distance 0 (DeepSpeed releases everything): all of it.
  CHECK(regathered_share({10, 1, 40, 40}, 1, 0) == 1.0);
  // Nothing sharded: nothing gathered.
  CHECK(regathered_share({1, 1}, 1, 1) == 0.0);
}

TEST_CASE("GPT-3 175B under DeepSpeed's default distance: two thirds of each layer") {
  // h 12288, ffn 4h: QKV 3h^2 = 453 M, output h^2 = 151 M, up and down
  // 4h^2 = 604 M each; norms and biases (at most 4h = 49,152) persist under
  // 1e5. The down projection is kept; the up projection has the down's
  // 604 M (plus its bias) after it, twice that, 1.21e9, >= 1e9: gathered again, and
  // so are the two before it: 8h^2 of 12h^2.
  CHECK(regathered_share(testing::gpt3_175b().layer_tensors(1), 1e5, 1e9) == doctest::Approx(2.0 / 3.0));
}

}  // namespace workload_zero3_reuse_test
