// model.moe, parallel.ep, parallel.moe_dispatcher and options.moe_imbalance:
// how they read, and the one-line errors of experts that do not fit a plan.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "config/load.hpp"
#include "load_error.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace config_moe_keys_test {

using namespace trainsim;
using namespace trainsim::config;
using nlohmann::json;

namespace {
// Mixtral 8x7B on two DGX H100s: tp 2 x dp 8, its 8 experts over ep 8.
json base() {
  return json::parse(R"({
    "cluster": {"node": "dgx-h100", "nodes": 2},
    "model": "mixtral-8x7b",
    "parallel": {"tp": 2, "pp": 1, "dp": 8, "ep": 8, "sequence_parallel": true, "microbatch_size": 1, "global_batch": 8}
  })");
}
std::string error_of(const std::vector<std::string>& overrides) { return testing::load_error(base(), overrides); }
}  // namespace

TEST_CASE("a MoE model and its plan read as given; drop-less and balanced by default") {
  const Scenario s = load_document(base(), "test.json", ".", {});
  CHECK(s.model.moe.experts == 8);
  CHECK(s.model.moe.top_k == 2);
  CHECK(s.model.moe.expert_ffn == 14336);
  CHECK(s.model.moe.capacity_factor == 0.0);
  CHECK(s.plan.ep == 8);
  CHECK(s.plan.expert_replicas() == 2);  // tp x dp / ep = 16 / 8
  CHECK(s.plan.moe_dispatcher == workload::MoeDispatcher::kAllToAll);
  CHECK(s.plan.moe_imbalance == 1.0);
  const Scenario t = load_document(base(), "test.json", ".",
                                   {"parallel.moe_dispatcher=allgather", "options.moe_imbalance=1.3",
                                    "model.moe.router=sigmoid"});
  CHECK(t.plan.moe_dispatcher == workload::MoeDispatcher::kAllGather);
  CHECK(t.plan.moe_imbalance == 1.3);
  CHECK(t.model.moe.router == workload::MoeRouter::kSigmoid);
  CHECK_FALSE(s.plan.overlap.moe_a2a);
  CHECK(load_document(base(), "test.json", ".", {"options.moe_a2a_overlap=true"}).plan.overlap.moe_a2a);
  // Qwen3's heads are wider than hidden / heads.
  const Scenario q = load_document(base(), "test.json", ".", {"model=qwen3-235b-a22b", "parallel.ep=8"});
  CHECK(q.model.head_dim() == 128);
  CHECK(q.model.q_dim() == 8192);
  CHECK(q.model.qk_norm);
}

TEST_CASE("experts that do not fit the plan, and expert keys without experts") {
  CHECK(error_of({"parallel.ep=3"}) ==
        "test.json: parallel.ep: expected a divisor of model.moe.experts = 8 (each rank holds experts / ep), got 3 "
        "(from --set parallel.ep=3)");
  CHECK(error_of({"model.moe.experts=16", "parallel.ep=16", "parallel.tp=1", "parallel.dp=2",
                  "cluster.nodes=1", "cluster.node.gpus_per_node=2", "parallel.global_batch=2"}) ==
        "test.json: parallel.ep: expected a divisor of a pipeline stage's GPUs, tp x cp x dp = 1 x 1 x 2 = 2 (the MoE "
        "layers run as ep x (tp x cp x dp / ep) over them), got 16 (from --set parallel.ep=16)");
  CHECK(error_of({"parallel.etp=3"}) ==
        "test.json: parallel.etp: expected a divisor of model.moe.expert_ffn = 14336 (each expert's width splits over "
        "etp), got 3 (from --set parallel.etp=3)");
  CHECK(error_of({"parallel.etp=4"}) ==
        "test.json: parallel.etp: ep x etp = 8 x 4 must divide a pipeline stage's GPUs, tp x cp x dp = 16 (the MoE "
        "layers run as etp x ep x edp over them) (from --set parallel.etp=4)");
  CHECK(error_of({"model=llama3.1-8b", "parallel.ep=1", "parallel.etp=2"}) ==
        "test.json: parallel.etp: applies only to a MoE model (model.moe) (from --set parallel.etp=2)");
  CHECK(error_of({"model.moe.top_k=9"}) ==
        "test.json: model.moe.top_k: expected at most model.moe.experts = 8 experts a token, got 9 (from --set "
        "model.moe.top_k=9)");
  CHECK(error_of({"parallel.sequence_parallel=false"}) ==
        "test.json: parallel.sequence_parallel: a MoE model with tp = 2 needs sequence parallelism (each tensor rank "
        "routes its own 1/tp of the tokens, as Megatron-Core requires); expected true (from --set "
        "parallel.sequence_parallel=false)");
  CHECK(error_of({"model.ffn=14336"}) ==
        "test.json: model.ffn: every layer of this MoE model is a MoE layer (model.moe.dense_layers 0, layer_freq 1), "
        "so a dense MLP width has no use; give the experts' widths in model.moe (expert_ffn, shared_expert_ffn) (from "
        "--set model.ffn=14336)");
  // Dense layers need it: DeepSeek-V3's first 3.
  CHECK(error_of({"model.moe.dense_layers=3"}) ==
        "test.json: model.ffn: is missing: the dense layers model.moe.dense_layers and layer_freq leave need their MLP "
        "width (expected a positive integer) (from --set model.moe.dense_layers=3)");
  CHECK(error_of({"model.moe.dense_layers=32", "model.ffn=14336"}) ==
        "test.json: model.moe.dense_layers: leaves no MoE layer among model.layers = 32 (dense_layers 32, layer_freq "
        "1); expected fewer dense layers (from --set model.moe.dense_layers=32)");
  CHECK(error_of({"model.moe.layer_freq=0", "model.ffn=14336"}) ==
        "test.json: model.moe.layer_freq: expected a positive integer, got 0 (from --set model.moe.layer_freq=0)");
  CHECK(error_of({"model.moe.shared_expert_ffn=10"}) ==
        "test.json: model.moe.shared_expert_ffn: applies only with model.moe.shared_experts > 0 (from --set "
        "model.moe.shared_expert_ffn=10)");
  CHECK(error_of({"options.moe_imbalance=0.5"}) ==
        "test.json: options.moe_imbalance: expected a number from 1 to 1e+06, got 0.5 (from --set "
        "options.moe_imbalance=0.5)");
  CHECK(error_of({"model.moe.capacity_factor=1.0", "options.moe_imbalance=1.2"}) ==
        "test.json: options.moe_imbalance: applies to drop-less routing; with model.moe.capacity_factor every "
        "expert's input is padded or cut to that capacity, which sets the busiest expert's load (from --set "
        "options.moe_imbalance=1.2)");
  CHECK(error_of({"model=llama3.1-8b"}) ==
        "test.json: parallel.ep: applies only to a MoE model (model.moe) (from --set model=llama3.1-8b)");
  CHECK(error_of({"model=llama3.1-8b", "parallel.ep=1", "parallel.moe_dispatcher=alltoall"}) ==
        "test.json: parallel.moe_dispatcher: applies only to a MoE model (model.moe) (from --set "
        "parallel.moe_dispatcher=alltoall)");
  CHECK(error_of({"model=llama3.1-8b", "parallel.ep=1", "options.moe_imbalance=1.5"}) ==
        "test.json: options.moe_imbalance: applies only to a MoE model (model.moe) (from --set "
        "options.moe_imbalance=1.5)");
  CHECK(error_of({"parallel.ep=1", "parallel.moe_dispatcher=deepep"}) ==
        "test.json: parallel.moe_dispatcher: there is no dispatch to run with parallel.ep = 1 (from --set "
        "parallel.moe_dispatcher=deepep)");
  CHECK(error_of({"parallel.ep=1", "options.moe_a2a_overlap=true"}) ==
        "test.json: options.moe_a2a_overlap: there is no dispatch or combine to overlap with parallel.ep = 1 (from "
        "--set options.moe_a2a_overlap=true)");
  CHECK(error_of({"model=llama3.1-8b", "parallel.ep=1", "options.moe_a2a_overlap=true"}) ==
        "test.json: options.moe_a2a_overlap: applies only to a MoE model (model.moe) (from --set "
        "options.moe_a2a_overlap=true)");
  json gpt = base();
  gpt["model"] = json::parse(R"({"arch": "gpt", "layers": 2, "hidden": 64, "heads": 4, "seq": 128, "vocab": 100,
                                "moe": {"experts": 8, "top_k": 2, "expert_ffn": 256}})");
  CHECK(testing::load_error(gpt) ==
        "test.json: model.moe: expects model.arch = \"llama\" (experts are SwiGLU MLPs, as in Mixtral, Qwen3 and "
        "DeepSeek)");
}

TEST_CASE("parallel.recompute_modules: Megatron-Core's parts of a layer, under selective recompute") {
  const Scenario s = load_document(base(), "test.json", ".",
                                   {"parallel.recompute=selective", R"(parallel.recompute_modules=["moe_act","layernorm"])"});
  CHECK(s.plan.recompute_modules == (workload::kModuleMoeAct | workload::kModuleLayernorm));
  CHECK(error_of({R"(parallel.recompute_modules=["moe"])"}) ==
        "test.json: parallel.recompute_modules: applies only with parallel.recompute = \"selective\" (the parts "
        "selective recompute redoes) (from --set parallel.recompute_modules=[\"moe\"])");
  CHECK(error_of({"parallel.recompute=selective", R"(parallel.recompute_modules=["bogus"])"}) ==
        "test.json: parallel.recompute_modules[0]: expected one of \"core_attn\", \"layernorm\", \"mlp\", \"moe\", "
        "\"moe_act\", \"mla_up_proj\", got \"bogus\" (from --set parallel.recompute_modules=[\"bogus\"])");
  CHECK(error_of({"parallel.recompute=selective", "parallel.recompute_modules=[]"}) ==
        "test.json: parallel.recompute_modules: expected a non-empty list of \"core_attn\", \"layernorm\", \"mlp\", "
        "\"moe\", \"moe_act\", \"mla_up_proj\", got [] (from --set parallel.recompute_modules=[])");
  CHECK(error_of({"parallel.recompute=selective", R"(parallel.recompute_modules=["moe","moe"])"}) ==
        "test.json: parallel.recompute_modules[1]: \"moe\" is listed twice (from --set "
        "parallel.recompute_modules=[\"moe\",\"moe\"])");
  CHECK(error_of({"parallel.recompute=selective", R"(parallel.recompute_modules=["mlp"])"}) ==
        "test.json: parallel.recompute_modules: \"mlp\" is a dense layer's MLP, and every layer of this MoE model has "
        "a MoE block instead; expected \"moe\" or \"moe_act\" (from --set parallel.recompute_modules=[\"mlp\"])");
  CHECK(error_of({"model=llama3.1-8b", "parallel.ep=1", "parallel.recompute=selective",
                  R"(parallel.recompute_modules=["moe"])"}) ==
        "test.json: parallel.recompute_modules: \"moe\" and \"moe_act\" need a MoE model (model.moe) (from --set "
        "parallel.recompute_modules=[\"moe\"])");
  CHECK(error_of({"parallel.recompute=selective", R"(parallel.recompute_modules=["moe"])", "parallel.elementwise=eager"}) ==
        "test.json: parallel.recompute_modules: Megatron-Core's recompute modules come with its fused element-wise "
        "kernels; expected parallel.elementwise \"fused\", got \"eager\" (from --set parallel.recompute_modules=[\"moe\"])");
}

TEST_CASE("what MoE plans cannot run yet says so") {
  // ZeRO-3 runs a unit a layer, timed analytically, with every layer a MoE
  // one or with dense layers among them.
  CHECK(error_of({"parallel.zero_stage=3", "parallel.distributed_optimizer=false"}).empty());
  CHECK(error_of({"parallel.zero_stage=3", "model.moe.dense_layers=1", "model.ffn=14336"}).empty());
  CHECK(error_of({"parallel.zero_stage=3", "options.collectives=flow"}).empty());
  // HSDP: each shard group (fsdp_shard_size replicas of tp 2 GPUs) must hold
  // whole expert-parallel groups of ep 8: a shard size of 4 does, 2 not.
  CHECK(error_of({"parallel.zero_stage=3", "parallel.fsdp_shard_size=4"}).empty());
  CHECK(error_of({"parallel.zero_stage=3", "parallel.fsdp_shard_size=2"}) ==
        "test.json: parallel.fsdp_shard_size: with experts each shard group must hold whole expert-parallel groups, "
        "but fsdp_shard_size x tp = 2 x 2 = 4 GPUs is not a multiple of ep x etp = 8 x 1 = 8; expected a multiple of "
        "4 (from --set parallel.fsdp_shard_size=2)");
  CHECK(error_of({"parallel.zero_stage=3", "parallel.fsdp_persistence_threshold=100"}) ==
        "test.json: parallel.fsdp_persistence_threshold: ZeRO-3's persistent small tensors with a MoE model "
        "(model.moe) is not modelled yet (from --set parallel.fsdp_persistence_threshold=100)");
  // Offloading: each GPU's shards of the experts and of the rest go to the host.
  CHECK(error_of({"parallel.zero_stage=1", "parallel.offload=optimizer"}).empty());
  CHECK(error_of({"parallel.zero_stage=3", "parallel.offload=optimizer+params"}).empty());
}

TEST_CASE("parallel.offload_modules: Megatron-Core's MoE modules, read as bits; the others refused") {
  CHECK(load_document(base(), "test.json", ".", {}).plan.offload_modules == 0u);
  const Scenario s = load_document(base(), "test.json", ".", {R"(parallel.offload_modules=["moe_act","expert_fc1"])"});
  CHECK(s.plan.offload_modules == (workload::kOffloadExpertFc1 | workload::kOffloadMoeAct));
  CHECK(error_of({R"(parallel.offload_modules=["core_attn"])"}) ==
        "test.json: parallel.offload_modules[0]: offloading \"core_attn\" is not modelled yet; expected \"expert_fc1\" "
        "or \"moe_act\" (from --set parallel.offload_modules=[\"core_attn\"])");
  CHECK(error_of({R"(parallel.offload_modules=["moe_act","moe_act"])"}) ==
        "test.json: parallel.offload_modules[1]: \"moe_act\" is listed twice (from --set "
        "parallel.offload_modules=[\"moe_act\",\"moe_act\"])");
  CHECK(error_of({"parallel.offload_modules=[]"}) ==
        "test.json: parallel.offload_modules: expected a non-empty list of \"expert_fc1\", \"moe_act\", got [] (from "
        "--set parallel.offload_modules=[])");
  // Full recompute keeps no input of the MoE block to offload.
  CHECK(error_of({R"(parallel.offload_modules=["expert_fc1"])", "parallel.recompute=full"}) ==
        "test.json: parallel.offload_modules: recompute \"full\" keeps none of the MoE block's inputs for its backward, "
        "so none can be offloaded; expected parallel.recompute \"none\" or \"selective\" without \"moe\" (from --set "
        "parallel.offload_modules=[\"expert_fc1\"])");
  // Recomputing the MoE block whole keeps nothing of it to offload.
  CHECK(error_of({R"(parallel.offload_modules=["moe_act"])", "parallel.recompute=selective",
                  R"(parallel.recompute_modules=["moe"])"}) ==
        "test.json: parallel.offload_modules: recompute \"selective\" with module \"moe\" keeps none of the MoE "
        "block's inputs for its backward, so none can be offloaded; expected parallel.recompute \"none\" or "
        "\"selective\" without \"moe\" (from --set parallel.offload_modules=[\"moe_act\"])");
  // A dense model has no MoE block.
  json dense = base();
  dense["model"] = "llama3.1-8b";
  dense["parallel"].erase("ep");
  CHECK(testing::load_error(dense, {R"(parallel.offload_modules=["expert_fc1"])"}) ==
        "test.json: parallel.offload_modules: \"expert_fc1\" and \"moe_act\" are a MoE block's; expected a MoE "
        "model (model.moe) (from --set parallel.offload_modules=[\"expert_fc1\"])");
  // A node preset without its host's figures.
  CHECK(error_of({R"(parallel.offload_modules=["expert_fc1"])", "cluster.node=grand-teton-h100"}).find(
            "parallel.offload_modules: the node \"grand-teton-h100\" does not give its host's pcie_gb_per_s, "
            "host_memory_gb; set cluster.node.pcie_gb_per_s") != std::string::npos);
}

}  // namespace config_moe_keys_test
