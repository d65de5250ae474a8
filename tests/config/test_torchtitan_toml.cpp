// A TorchTitan job's TOML as a trainsim config (config/torchtitan_toml.hpp).
// The fixtures in torchtitan/ set out the settings of two jobs that shipped
// with TorchTitan, beside configs of the same runs written by hand.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "config/error.hpp"
#include "config/json_text.hpp"
#include "config/load.hpp"
#include "config/torchtitan_toml.hpp"
#include "driver/whatif.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace config_torchtitan_toml_test {

using namespace trainsim;
using namespace trainsim::config;

namespace {

const std::string kDir = TRAINSIM_SOURCE_DIR "/tests/config/torchtitan";

double iteration_s(const Scenario& sc) { return driver::summarize(sc, driver::simulate(sc), "x").iteration_time_s; }

TorchTitanImport import_text(const std::string& toml, const ImportCluster& cluster = {"dgx-h100", 1, ""}) {
  return config_from_torchtitan(toml, "job.toml", cluster);
}

std::string error_of(const std::string& toml, const ImportCluster& cluster = {"dgx-h100", 1, ""}) {
  try {
    (void)import_text(toml, cluster);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

const std::string kLlama8b = "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nlocal_batch_size = 2\nseq_len = 8192\n";

}  // namespace

TEST_CASE("TorchTitan's Llama 3 and DeepSeek-V3 16B jobs import to the runs written by hand") {
  for (const auto& run : {std::pair<std::string, ImportCluster>{"llama3_8b", {"dgx-a100", 8, ""}},
                          std::pair<std::string, ImportCluster>{"llama3_405b", {"dgx-h100", 64, ""}},
                          std::pair<std::string, ImportCluster>{"deepseek_v3_16b", {"dgx-h100", 2, ""}}}) {
    const std::string& name = run.first;
    const ImportCluster& cluster = run.second;
    CAPTURE(name);
    const TorchTitanImport t =
        config_from_torchtitan(read_text(kDir + "/" + name + ".toml", "fixture"), name + ".toml", cluster);
    CHECK(t.not_modelled.empty());
    // The 405B job converts its linear layers to torchao's Float8.
    if (name == "llama3_405b") CHECK(t.config["parallel"]["fp8_library"] == "torchao");
    const Scenario imported = load_document(t.config, name + ".toml", ".");
    const Scenario by_hand = load_file(kDir + "/" + name + ".json");
    CHECK(imported.model.total_params() == by_hand.model.total_params());
    CHECK(iteration_s(imported) == iteration_s(by_hand));
  }
}

TEST_CASE("TorchTitan's pipelines, HSDP and defaults") {
  // pp 4 with Interleaved1F1B: 2 stages a rank, 8 stages. TorchTitan counts
  // the embedding and the output as a layer each: 32 + 2 = 34 over 8 stages,
  // 4 each and the first 2 one more: 5 5 4 4 4 4 4 4, less the embedding on
  // the first and the output on the last: 4 5 4 4 4 4 4 3. Its micro-batch
  // is pipeline_parallel_microbatch_size (1 by default); FSDP's "default"
  // keeps the parameters gathered under pipelining.
  TorchTitanImport t = import_text(kLlama8b +
                                   "[parallelism]\npipeline_parallel_degree = 4\n"
                                   "pipeline_parallel_schedule = \"Interleaved1F1B\"\n",
                                   {"dgx-h100", 1, ""});
  const auto& p = t.config["parallel"];
  CHECK(p["schedule"] == "interleaved-1f1b");
  CHECK(p["vp"] == 2);
  CHECK(p["stage_layers"] == nlohmann::json::array({4, 5, 4, 4, 4, 4, 4, 3}));
  CHECK(p["microbatch_size"] == 1);
  CHECK(p["dp"] == 2);
  CHECK(p["global_batch"] == 4);  // local 2 x dp 2
  CHECK(p["reshard_after_forward"] == false);
  // Pipelining runs FSDP stages' backwards without gradient sync.
  CHECK(p["fsdp_grad_sync"] == "last-backward");
  // TorchTitan's default checkpointing: every 2nd block, 5 / 2 = 2 of the
  // stage's (at most 5) blocks wholly redone.
  CHECK(p["recompute"] == "full");
  CHECK(p["recompute_layers"] == 2);
  CHECK_NOTHROW(load_document(t.config, "job.toml", "."));
  // HSDP: replicas of 2, each sharding over 4 of the 8 GPUs.
  t = import_text(kLlama8b + "[activation_checkpoint]\nmode = \"none\"\n[parallelism]\ndata_parallel_replicate_degree = 2\n"
                             "frobnicate = 1\n");
  CHECK(t.config["parallel"]["dp"] == 8);
  CHECK(t.config["parallel"]["fsdp_shard_size"] == 4);
  CHECK(t.config["parallel"]["fsdp_param_shards"] == "fp32");  // FSDP2's shards are the FP32 weights
  CHECK(!t.config["parallel"].contains("recompute"));
  CHECK(t.not_modelled == std::vector<std::string>{"parallelism.frobnicate"});
  // Replicas alone: plain data parallelism, nothing sharded.
  t = import_text(kLlama8b + "[parallelism]\ndata_parallel_replicate_degree = 8\ndata_parallel_shard_degree = 1\n");
  CHECK(t.config["parallel"]["dp"] == 8);
  CHECK(!t.config["parallel"].contains("zero_stage"));
  CHECK(!t.config["parallel"].contains("fsdp_param_shards"));
  // Context parallelism is PyTorch's: its rotate method, and its merges.
  t = import_text(kLlama8b + "[parallelism]\ncontext_parallel_degree = 2\n");
  CHECK(t.config["parallel"]["cp"] == 2);
  CHECK(t.config["parallel"]["cp_algorithm"] == "all-gather");
  CHECK(t.config["parallel"]["cp_merge"] == "pytorch");
  t = import_text(kLlama8b + "[parallelism]\ncontext_parallel_degree = 2\ncontext_parallel_rotate_method = \"alltoall\"\n");
  CHECK(t.config["parallel"]["cp_algorithm"] == "ring");
  CHECK(load_document(t.config, "job.toml", ".").plan.cp_merge == workload::CpMerge::kPyTorch);
  // torchao's MX linear layers on Blackwell: the mxfp8 recipe as torchao runs it.
  const std::string mx = "[model]\nname = \"llama3\"\nflavor = \"8B\"\nconverters = [\"quantize.linear.mx\"]\n"
                         "[training]\nlocal_batch_size = 2\nseq_len = 8192\n";
  t = import_text(mx + "[quantize.linear.mx]\nrecipe_name = \"mxfp8_cublas\"\n", {"dgx-b200", 1, ""});
  CHECK(t.config["parallel"]["precision"] == "fp8");
  CHECK(t.config["parallel"]["fp8_recipe"] == "mxfp8");
  CHECK(t.config["parallel"]["fp8_library"] == "torchao");
  CHECK(t.not_modelled.empty());
  CHECK(load_document(t.config, "job.toml", ".").plan.fp8_runtime() == workload::Fp8Library::kTorchao);
  CHECK(error_of(mx + "[quantize.linear.mx]\nrecipe_name = \"mxfp4\"\n", {"dgx-b200", 1, ""}) ==
        "job.toml: quantize.linear.mx.recipe_name: \"mxfp4\" is not modelled; expected an mxfp8 recipe (mxfp8, "
        "mxfp8_cublas, ...)");
}

TEST_CASE("torch.compile in a TorchTitan job: the blocks' element-wise ops fused, the loss compiled") {
  // The old key (training.compile) compiles the blocks and the loss function
  // (components/loss.py since April 2025); compile.components picks either.
  TorchTitanImport t = import_text(kLlama8b + "compile = true\n");
  CHECK(t.config["parallel"]["elementwise"] == "fused");
  CHECK(t.config["parallel"]["loss"] == "compiled");
  CHECK(load_document(t.config, "job.toml", ".").plan.loss == workload::LossKernel::kCompiled);
  t = import_text(kLlama8b + "[compile]\nenable = true\ncomponents = [\"model\"]\n");
  CHECK(t.config["parallel"]["elementwise"] == "fused");
  CHECK(t.config["parallel"]["loss"] == "pytorch");
  t = import_text(kLlama8b + "[compile]\nenable = true\ncomponents = [\"loss\"]\n");
  CHECK(t.config["parallel"]["elementwise"] == "eager");
  CHECK(t.config["parallel"]["loss"] == "compiled");
  t = import_text(kLlama8b);
  CHECK(t.config["parallel"]["elementwise"] == "eager");
  CHECK(t.config["parallel"]["loss"] == "pytorch");
}

TEST_CASE("a TorchTitan job trainsim cannot map is an error naming the file and the key") {
  CHECK(error_of("[model\nname = 1\n") == "job.toml:1:7: malformed TOML: Error while parsing table header: expected ']', saw '\\n'");
  CHECK(error_of("[model]\nname = \"llama4\"\nflavor = \"17bx16e\"\n") ==
        "job.toml: model.flavor: llama4 17bx16e has no trainsim preset; the mapped ones are deepseek_v3 16B, deepseek_v3 "
        "671B, llama3 405B, llama3 70B, llama3 8B (or write the config's model by hand, or from its Hugging Face config)");
  CHECK(error_of(kLlama8b + "[activation_checkpoint]\nselective_ac_option = \"some\"\n") ==
        "job.toml: activation_checkpoint.selective_ac_option: \"some\": expected \"op\" or a whole number n >= 1");
  CHECK(error_of(kLlama8b + "[parallelism]\npipeline_parallel_degree = 2\n"
                            "pipeline_parallel_schedule = \"InterleavedZeroBubble\"\n") ==
        "job.toml: parallelism.pipeline_parallel_schedule: \"InterleavedZeroBubble\" is not modelled; trainsim runs "
        "GPipe, 1F1B, Interleaved1F1B, LoopedBFS, ZBVZeroBubble and DualPipeV");
  CHECK(error_of(kLlama8b + "[parallelism]\ntensor_parallel_degree = 3\n") ==
        "job.toml: parallelism: tp x pp x cp x replicate = 3 x 1 x 1 x 1 does not divide the 8 GPUs of 1 dgx-h100 nodes");
  CHECK(error_of(kLlama8b + "[training]\nmixed_precision_param = \"float32\"\n").rfind("job.toml:", 0) == 0);
  CHECK(error_of(kLlama8b + "[parallelism]\nexpert_tensor_parallel_degree = 2\n") ==
        "job.toml: parallelism.expert_tensor_parallel_degree: above 1 is not modelled for TorchTitan jobs; expected 1");
}

}  // namespace config_torchtitan_toml_test
