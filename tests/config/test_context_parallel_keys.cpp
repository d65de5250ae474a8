// parallel.cp, parallel.cp_algorithm and parallel.cp_merge: the GPU count they join, and the
// one-line errors of what cannot split.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "config/load.hpp"
#include "load_error.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace config_context_parallel_keys_test {

using namespace trainsim;
using namespace trainsim::config;
using nlohmann::json;

namespace {
// Llama 3.1 8B (32 heads, 8 KV heads, 8,192 tokens) on one DGX H100: cp 2 x dp 4.
json base() {
  return json::parse(R"({
    "cluster": {"node": "dgx-h100", "nodes": 1},
    "model": "llama3.1-8b",
    "parallel": {"tp": 1, "pp": 1, "dp": 4, "cp": 2, "microbatch_size": 1, "global_batch": 4}
  })");
}
std::string error_of(const std::vector<std::string>& overrides) { return testing::load_error(base(), overrides); }
}  // namespace

TEST_CASE("cp joins the GPU count; the ring is the default algorithm") {
  const Scenario s = load_document(base(), "test.json", ".", {});
  CHECK(s.plan.cp == 2);
  CHECK(s.plan.cp_algorithm == workload::CpAlgorithm::kRing);
  CHECK(s.plan.gpus() == 8);
  CHECK(error_of({"parallel.dp=8"}) ==
        "test.json: parallel: tp x cp x pp x dp = 1 x 2 x 1 x 8 = 16, but the cluster has 8 GPUs (cluster.nodes = 1 "
        "x cluster.node.gpus_per_node = 8); expected parallel.dp = 4 for these GPUs (from --set parallel.dp=8)");
  CHECK(load_document(base(), "test.json", ".", {"parallel.cp_algorithm=all-gather"}).plan.cp_algorithm ==
        workload::CpAlgorithm::kAllGather);
}

TEST_CASE("context parallelism: sequences, heads and attention that do not split") {
  // The ring splits 8,192 into 2 x cp chunks; 8,190 does not.
  CHECK(error_of({"model.seq=8190"}) ==
        "test.json: parallel.cp: model.seq = 8190 does not split into 4 equal chunks (2 x cp = 2 x 2: each rank takes "
        "two, for causal load balancing) (from --set model.seq=8190)");
  // All-to-all hands out heads: 4 KV heads do not go round tp x cp = 8 ranks.
  CHECK(error_of({"parallel.cp=8", "parallel.dp=1", "parallel.global_batch=1", "parallel.cp_algorithm=all-to-all",
                  "model.kv_heads=4"}) ==
        "test.json: parallel.cp: all-to-all context parallelism hands each rank heads / (tp x cp) heads: model.heads "
        "= 32 and model.kv_heads = 4 must divide by tp x cp = 1 x 8 (from --set parallel.cp=8)");
  CHECK(error_of({"parallel.attention=unfused"}) ==
        "test.json: parallel.cp: context parallelism splits FlashAttention's fused kernel by blocks; expected "
        "a fused parallel.attention (\"flash\", \"flash-v1\" or \"cudnn\"), got \"unfused\" (from --set "
        "parallel.attention=unfused)");
  CHECK(error_of({"parallel.cp=1", "parallel.dp=8", "parallel.global_batch=8", "parallel.cp_algorithm=ring"}) ==
        "test.json: parallel.cp_algorithm: applies only with parallel.cp > 1 (context parallelism) (from --set "
        "parallel.cp_algorithm=ring)");
  CHECK(error_of({"parallel.zero_stage=3", "parallel.fsdp_shard_size=3"}) ==
        "test.json: parallel.fsdp_shard_size: 3 does not divide dp x cp = 4 x 2 = 8, the ranks that shard the model; "
        "expected a group size that does (from --set parallel.fsdp_shard_size=3)");
  json layers = base();
  layers["model"] = "vgg-16";
  layers["parallel"] = json::parse(R"({"dp": 4, "cp": 2, "global_batch": 8})");
  CHECK(testing::load_error(layers).find("test.json: parallel.cp: does not apply to a layer-table model") == 0);
}

TEST_CASE("parallel.cp_merge: PyTorch's merges, with its rotate methods and load balancing") {
  CHECK(load_document(base(), "test.json", ".", {}).plan.cp_merge == workload::CpMerge::kFused);
  CHECK(load_document(base(), "test.json", ".", {"parallel.cp_algorithm=all-gather", "parallel.cp_merge=pytorch"})
            .plan.cp_merge == workload::CpMerge::kPyTorch);
  // PyTorch balances causal attention with two chunks a rank whatever brings
  // the keys: 8,194 splits into 2 parts but not into 2 x cp = 4.
  CHECK(error_of({"parallel.cp_algorithm=all-gather", "parallel.cp_merge=pytorch", "model.seq=8194"}) ==
        "test.json: parallel.cp: model.seq = 8194 does not split into 4 equal chunks (2 x cp = 2 x 2: each rank takes "
        "two, for causal load balancing) (from --set model.seq=8194)");
  CHECK(error_of({"parallel.cp_algorithm=all-to-all", "parallel.cp_merge=pytorch"}) ==
        "test.json: parallel.cp_merge: \"pytorch\" is PyTorch's context_parallel, whose rotate methods are "
        "\"all-gather\" and \"ring\" (its alltoall); expected parallel.cp_algorithm \"all-gather\" or \"ring\", "
        "got \"all-to-all\" (from --set parallel.cp_merge=pytorch)");
  CHECK(error_of({"parallel.cp=1", "parallel.dp=8", "parallel.global_batch=8", "parallel.cp_merge=pytorch"}) ==
        "test.json: parallel.cp_merge: applies only with parallel.cp > 1 (context parallelism) (from --set "
        "parallel.cp_merge=pytorch)");
  CHECK(error_of({"parallel.cp_merge=eager"}) ==
        "test.json: parallel.cp_merge: expected \"fused\" or \"pytorch\", got \"eager\" (from --set "
        "parallel.cp_merge=eager)");
}

}  // namespace config_context_parallel_keys_test
