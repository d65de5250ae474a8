// parallel.precision "fp8", parallel.fp8_recipe and parallel.fp8_param_gather:
// what they read, and the one-line errors of what cannot run.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "config/load.hpp"
#include "load_error.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace config_fp8_keys_test {

using namespace trainsim;
using namespace trainsim::config;
using nlohmann::json;

namespace {
// Llama 3.1 8B on one DGX H100, FSDP over its 8 GPUs.
json h100() {
  return json::parse(R"({
    "cluster": {"node": "dgx-h100", "nodes": 1},
    "model": "llama3.1-8b",
    "parallel": {"tp": 1, "pp": 1, "dp": 8, "microbatch_size": 1, "global_batch": 8, "zero_stage": 3}
  })");
}
std::string error_of(const std::vector<std::string>& overrides) { return testing::load_error(h100(), overrides); }
}  // namespace

TEST_CASE("fp8 reads its recipe, tensorwise unless said") {
  const Scenario s = load_document(h100(), "test.json", ".", {"parallel.precision=fp8"});
  CHECK(s.plan.precision == workload::Precision::kFp8);
  CHECK(s.plan.fp8_recipe == workload::Fp8Recipe::kTensorwise);
  const Scenario d = load_document(h100(), "test.json", ".",
                                   {"parallel.precision=fp8", "parallel.fp8_recipe=delayed", "parallel.fp8_param_gather=true"});
  CHECK(d.plan.fp8_recipe == workload::Fp8Recipe::kDelayed);
  CHECK(d.plan.fp8_param_gather);
}

TEST_CASE("fp8: a GPU without FP8 tensor cores, mxfp8 before Blackwell, keys without fp8") {
  json a100 = h100();
  a100["cluster"]["node"] = "dgx-a100";
  CHECK(testing::load_error(a100, {"parallel.precision=fp8"}) ==
        "test.json: parallel.precision: \"fp8\" needs FP8 tensor cores, and the GPU A100-SXM4-80GB "
        "(cluster.node.gpu) has none (no peak_fp8_tflops); expected \"bf16\" or \"fp16\", or a GPU with FP8 (Hopper, "
        "Blackwell) (from --set parallel.precision=fp8)");
  CHECK(error_of({"parallel.precision=fp8", "parallel.fp8_recipe=mxfp8"}) ==
        "test.json: parallel.fp8_recipe: \"mxfp8\" needs Blackwell's block-scaled tensor cores, which the GPU "
        "H100-SXM5-80GB lacks (the presets mark them by an FP4 peak, peak_fp4_tflops); expected \"delayed\", "
        "\"tensorwise\", \"rowwise\" or \"blockwise\" (from --set parallel.fp8_recipe=mxfp8)");
  json b200 = h100();
  b200["cluster"]["node"] = "dgx-b200";
  CHECK(testing::load_error(b200, {"parallel.precision=fp8", "parallel.fp8_recipe=mxfp8"}).empty());
  CHECK(error_of({"parallel.fp8_recipe=delayed"}) ==
        "test.json: parallel.fp8_recipe: applies only with parallel.precision = \"fp8\" (from --set "
        "parallel.fp8_recipe=delayed)");
  CHECK(error_of({"parallel.fp8_param_gather=true"}) ==
        "test.json: parallel.fp8_param_gather: applies only with parallel.precision = \"fp8\" (from --set "
        "parallel.fp8_param_gather=true)");
  CHECK(error_of({"parallel.precision=fp8", "parallel.fp8_recipe=rowwise", "parallel.fp8_param_gather=true"}) ==
        "test.json: parallel.fp8_param_gather: FP8 weights are gathered with one scale a tensor, under the "
        "\"tensorwise\" and \"delayed\" recipes only; got \"rowwise\" (from --set parallel.fp8_param_gather=true)");
  CHECK(error_of({"parallel.precision=fp8", "parallel.zero_stage=1", "parallel.fp8_param_gather=true"}) ==
        "test.json: parallel.fp8_param_gather: gathers ZeRO-3's parameter shards in FP8; expected "
        "parallel.zero_stage 3, got 1 (from --set parallel.fp8_param_gather=true)");
  CHECK(error_of({"parallel.precision=fp8", "parallel.fp8_recipe=sixbit"}).find("parallel.fp8_recipe") != std::string::npos);
}

TEST_CASE("a GPU's FP8 figures come in pairs, under its FP8 peak") {
  json doc = h100();
  CHECK(testing::load_error(doc, {"cluster.node.gpu.gemm_fp8_max_tflops=2500"}) ==
        "test.json: cluster.node.gpu.gemm_fp8_max_tflops: expected a number from 0.001 to 1979, got 2500 (from --set "
        "cluster.node.gpu.gemm_fp8_max_tflops=2500)");
}

TEST_CASE("FP8 GEMM figures come as a curve and its ceiling together") {
  json doc = h100();
  CHECK(testing::load_error(doc, {R"(cluster.node.gpu={"peak_tflops": 989.5, "memory_gb": 80, "hbm_tb_per_s": 3.35,
        "hbm_achievable_tb_per_s": 2.49, "gemm_tflops": [[4096, 783]], "gemm_max_tflops": 794.5,
        "attention_tflops": [[16384, 328]], "kernel_overhead_us": 3, "peak_fp8_tflops": 1979,
        "gemm_fp8_tflops": [[4096, 1382]]})"})
            .find("cluster.node.gpu.gemm_fp8_max_tflops: missing: FP8 GEMM throughput takes both gemm_fp8_tflops "
                  "(the curve) and gemm_fp8_max_tflops (its ceiling)") != std::string::npos);
}

TEST_CASE("a GPU's sustained_tensor_fraction is read from its preset and stays within (0, 1]") {
  // The H100 SXM's burn on normal data, as measured on an H200 (the same
  // GH100 compute at 700 W): 665.6 of a short-run 784.5 TFLOP/s, 0.848.
  const Scenario s = load_document(h100(), "test.json", ".", {});
  CHECK(s.cluster.node.gpu.sustained_tensor_fraction == doctest::Approx(0.848));
  CHECK(testing::load_error(h100(), {"cluster.node.gpu.sustained_tensor_fraction=1.2"}) ==
        "test.json: cluster.node.gpu.sustained_tensor_fraction: expected a number from 0.05 to 1, got 1.2 (from --set "
        "cluster.node.gpu.sustained_tensor_fraction=1.2)");
}

TEST_CASE("fp8_library: the recipe's library by default, a named one checked against its recipes") {
  // tensorwise is torchao's unless named; delayed and blockwise only Transformer Engine's.
  CHECK(load_document(h100(), "test.json", ".", {"parallel.precision=fp8"}).plan.fp8_runtime() ==
        workload::Fp8Library::kTorchao);
  CHECK(load_document(h100(), "test.json", ".", {"parallel.precision=fp8", "parallel.fp8_recipe=blockwise"})
            .plan.fp8_runtime() == workload::Fp8Library::kTransformerEngine);
  const Scenario te = load_document(h100(), "test.json", ".",
                                    {"parallel.precision=fp8", "parallel.fp8_library=transformer-engine"});
  CHECK(te.plan.fp8_recipe == workload::Fp8Recipe::kTensorwise);
  CHECK(te.plan.fp8_runtime() == workload::Fp8Library::kTransformerEngine);
  CHECK(error_of({"parallel.precision=fp8", "parallel.fp8_recipe=rowwise", "parallel.fp8_library=transformer-engine"}) ==
        "test.json: parallel.fp8_library: transformer-engine has no \"rowwise\" recipe; expected \"delayed\", "
        "\"tensorwise\", \"blockwise\" or \"mxfp8\" (or fp8_library \"torchao\") (from --set "
        "parallel.fp8_library=transformer-engine)");
  CHECK(error_of({"parallel.precision=fp8", "parallel.fp8_recipe=delayed", "parallel.fp8_library=torchao"}) ==
        "test.json: parallel.fp8_library: torchao has no \"delayed\" recipe; expected \"tensorwise\", \"rowwise\" or "
        "\"mxfp8\" (or fp8_library \"transformer-engine\") (from --set parallel.fp8_library=torchao)");
  CHECK(error_of({"parallel.fp8_library=torchao"}) ==
        "test.json: parallel.fp8_library: applies only with parallel.precision = \"fp8\" (from --set "
        "parallel.fp8_library=torchao)");
}

}  // namespace config_fp8_keys_test
