// The keys of sharding and overlapped communication: what each reads into the
// plan, and the one-line errors of the plans they cannot describe.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "config/load.hpp"
#include "load_error.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace config_overlap_keys_test {

using namespace trainsim;
using namespace trainsim::config;
using nlohmann::json;

namespace {

// GPT 1.7B on one DGX A100: tp 2 x dp 4, 16 micro-batches of one per replica.
json base() {
  return json::parse(R"({
    "cluster": {"node": "dgx-a100", "nodes": 1},
    "model": "gpt-1.7b",
    "parallel": {"tp": 2, "pp": 1, "dp": 4, "microbatch_size": 1, "global_batch": 64}
  })");
}

std::string error_of(const std::vector<std::string>& overrides) { return testing::load_error(base(), overrides); }

Scenario load(const std::vector<std::string>& overrides) { return load_document(base(), "test.json", ".", overrides); }

}  // namespace

TEST_CASE("HSDP: a shard group that divides dp, with ZeRO-3 only") {
  CHECK(error_of({"parallel.fsdp_shard_size=2"}) ==
        "test.json: parallel.fsdp_shard_size: applies only with parallel.zero_stage = 3 (parameters sharded unit by "
        "unit), got zero_stage = 0 (from --set parallel.fsdp_shard_size=2)");
  CHECK(error_of({"parallel.zero_stage=3", "parallel.fsdp_shard_size=3"}) ==
        "test.json: parallel.fsdp_shard_size: 3 does not divide dp = 4; expected the size of a group of replicas that "
        "shard the model, with dp / fsdp_shard_size groups replicating it (from --set parallel.fsdp_shard_size=3)");
  const Scenario s = load({"parallel.zero_stage=3", "parallel.fsdp_shard_size=2"});
  CHECK(s.plan.shard_group_size() == 2);
  CHECK(s.plan.shard_replicas() == 2);
  // Unset: one group of all the replicas.
  const Scenario fsdp = load({"parallel.zero_stage=3"});
  CHECK(fsdp.plan.shard_group_size() == 4);
  CHECK(fsdp.plan.shard_replicas() == 1);
}

TEST_CASE("the distributed optimizer is ZeRO-1; another stage beside it is refused") {
  CHECK(load({"parallel.distributed_optimizer=true"}).plan.zero_stage == 1);
  CHECK(load({"parallel.distributed_optimizer=true", "parallel.zero_stage=1"}).plan.zero_stage == 1);
  CHECK(error_of({"parallel.distributed_optimizer=true", "parallel.zero_stage=3"}) ==
        "test.json: parallel.distributed_optimizer: shards the optimizer state as ZeRO stage 1 does, but "
        "parallel.zero_stage = 3; drop one of the two (from --set parallel.distributed_optimizer=true)");
}

TEST_CASE("overlap keys: defaults as documented, and the plans they need") {
  const Scenario plain = load({});
  CHECK(plain.plan.overlap.grad_reduce);  // what the buckets always did
  CHECK(!plain.plan.overlap.param_gather);
  CHECK(!plain.plan.overlap.tp_comm);
  // Compute beside communication: the published average unless
  // options.comm_slowdown says otherwise, one figure for every overlap.
  CHECK(plain.plan.overlap.compute_slowdown == 0.189);
  CHECK(load({"options.comm_slowdown=0.3"}).plan.overlap.compute_slowdown == 0.3);
  CHECK(load({"options.comm_slowdown=0"}).plan.overlap.compute_slowdown == 0.0);
  const Scenario off = load({"options.overlap_grad_reduce=false"});
  CHECK(!off.plan.overlap.grad_reduce);

  CHECK(error_of({"options.overlap_param_gather=true"}) ==
        "test.json: options.overlap_param_gather: overlaps the all-gather of the parameters that ZeRO-1/2 or the "
        "distributed optimizer updated in shards; expected parallel.distributed_optimizer = true or zero_stage 1 or "
        "2, got zero_stage = 0 (from --set options.overlap_param_gather=true)");
  CHECK(error_of({"options.overlap_param_gather=true", "parallel.zero_stage=3"}).find(
            "(ZeRO-3 gathers unit by unit already)") != std::string::npos);
  CHECK(load({"options.overlap_param_gather=true", "parallel.distributed_optimizer=true"}).plan.overlap.param_gather);

  CHECK(error_of({"options.tp_comm_overlap=true"}) ==
        "test.json: options.tp_comm_overlap: overlaps the all-gathers and reduce-scatters of sequence parallelism; "
        "expected parallel.sequence_parallel = true (from --set options.tp_comm_overlap=true)");
  CHECK(error_of({"options.tp_comm_overlap=true", "parallel.sequence_parallel=true", "parallel.tp=1",
                  "parallel.dp=8"}) ==
        "test.json: options.tp_comm_overlap: there is no tensor-parallel communication to overlap with tp = 1 (from "
        "--set options.tp_comm_overlap=true)");
  CHECK(load({"options.tp_comm_overlap=true", "parallel.sequence_parallel=true"}).plan.overlap.tp_comm);
  CHECK(load({"options.tp_comm_overlap=true", "parallel.sequence_parallel=true"}).plan.overlap.tp_comm_backward);
  // "forward": PyTorch's async TP, the forward's collectives pipelined only.
  const Scenario forward = load({"options.tp_comm_overlap=forward", "parallel.sequence_parallel=true"});
  CHECK(forward.plan.overlap.tp_comm);
  CHECK(!forward.plan.overlap.tp_comm_backward);
  CHECK(error_of({"options.tp_comm_overlap=1"}) ==
        "test.json: options.tp_comm_overlap: expected true, false or \"forward\", got 1 (from --set "
        "options.tp_comm_overlap=1)");
  CHECK(error_of({"options.tp_comm_overlap=backward"}).find("expected true, false or \"forward\"") !=
        std::string::npos);
}

TEST_CASE("TorchTitan's layer code: separate projections, batch-first sequence parallelism") {
  CHECK(!load({}).plan.separate_projections);
  CHECK(!load({}).plan.sp_batch_first);
  CHECK(load({"parallel.separate_projections=true"}).plan.separate_projections);
  CHECK(load({"parallel.sequence_parallel=true", "parallel.sp_batch_first=true"}).plan.sp_batch_first);
  // Inert without sequence parallelism (a sweep may take sequence_parallel as an axis beside it).
  CHECK(error_of({"parallel.sp_batch_first=true"}) == "");
  CHECK(error_of({"parallel.separate_projections=\"yes\""}).find("parallel.separate_projections: expected true or "
                                                                  "false") != std::string::npos);
}

TEST_CASE("recompute_layers: with full recompute only, no more than a stage holds") {
  CHECK(error_of({"parallel.recompute_layers=4"}) ==
        "test.json: parallel.recompute_layers: applies only with parallel.recompute = \"full\" (the layers fully "
        "recomputed) (from --set parallel.recompute_layers=4)");
  // gpt-1.7b: 24 layers on one stage.
  CHECK(error_of({"parallel.recompute=full", "parallel.recompute_layers=25"}) ==
        "test.json: parallel.recompute_layers: 25 layers, but no stage holds more than 24; expected at most that many "
        "a stage (from --set parallel.recompute_layers=25)");
  CHECK(load({"parallel.recompute=full", "parallel.recompute_layers=6"}).plan.recomputed_layers(24) == 6);
}

TEST_CASE("DeepSpeed's stage-3 knobs: with ZeRO-3, one prefetch rule at a time") {
  CHECK(error_of({"parallel.fsdp_prefetch_params=5e7"}).find("applies only with parallel.zero_stage = 3") !=
        std::string::npos);
  CHECK(error_of({"parallel.zero_stage=3", "parallel.fsdp_prefetch=2", "parallel.fsdp_prefetch_params=5e7"}) ==
        "test.json: parallel.fsdp_prefetch_params: sets the prefetch window in parameters (DeepSpeed's "
        "stage3_prefetch_bucket_size), parallel.fsdp_prefetch in units (FSDP's); give one of the two (from --set "
        "parallel.fsdp_prefetch_params=5e7)");
  const Scenario s = load({"parallel.zero_stage=3", "parallel.fsdp_prefetch_params=5e7",
                           "parallel.fsdp_persistence_threshold=1e5"});
  CHECK(s.plan.fsdp_prefetch_params == 5e7);
  CHECK(s.plan.fsdp_persistence_threshold == 1e5);
}

TEST_CASE("element-wise kernels: fused by default, eager for Llama-style models only") {
  CHECK(load({}).plan.elementwise == workload::Elementwise::kFused);
  CHECK(error_of({"parallel.elementwise=eager"}) ==
        "test.json: parallel.elementwise: \"eager\" is modelled for Llama-style models (RMSNorm, rotary embeddings, "
        "SwiGLU); a GPT's LayerNorm and GeLU are single kernels in eager PyTorch too: expected \"fused\" (from --set "
        "parallel.elementwise=eager)");
  CHECK(load({"model=llama2-7b", "parallel.elementwise=eager"}).plan.elementwise == workload::Elementwise::kEager);
  // K and V copied to every query head: asked for, never by default.
  CHECK(!load({"model=llama2-70b"}).plan.kv_repeat);
  CHECK(load({"model=llama2-70b", "parallel.kv_repeat=true"}).plan.kv_repeat);
  CHECK(error_of({"parallel.kv_repeat=\"yes\""}).find("test.json: parallel.kv_repeat: expected") == 0);
  CHECK(load({"model=llama2-7b", "parallel.recompute=selective-op"}).plan.recompute == workload::Recompute::kSelectiveOp);
  CHECK(error_of({"parallel.recompute=selective-op"}).find("\"selective-op\" is TorchTitan's per-op checkpointing") !=
        std::string::npos);
  CHECK(error_of({"parallel.zero_stage=3", "options.overlap_grad_reduce=false"}) ==
        "test.json: options.overlap_grad_reduce: ZeRO-3 (FSDP, DeepSpeed stage 3) reduce-scatters each unit's "
        "gradients as soon as its backward ends; expected true with zero_stage 3 (from --set "
        "options.overlap_grad_reduce=false)");
}

TEST_CASE("offload: with ZeRO, on a node whose host is known") {
  CHECK(error_of({"parallel.offload=optimizer"}) ==
        "test.json: parallel.offload: \"optimizer\" offloads each replica's shard of the optimizer state, which ZeRO "
        "keeps; expected parallel.zero_stage 1, 2 or 3, got 0 (from --set parallel.offload=optimizer)");
  CHECK(error_of({"parallel.offload=optimizer+params", "parallel.zero_stage=2"}).find(
            "\"optimizer+params\" offloads each replica's parameter shard, which only ZeRO-3 keeps; expected "
            "parallel.zero_stage 3, got 2") != std::string::npos);
  CHECK(load({"parallel.offload=optimizer", "parallel.zero_stage=1"}).plan.offload == workload::Offload::kOptimizer);
  // The host's cores: the preset's, from NVIDIA's DGX A100 datasheet; a count, never zero.
  CHECK(load({}).cluster.node.host_cores == 128);
  CHECK(error_of({"cluster.node.host_cores=0"}).find("cluster.node.host_cores: expected a positive integer") !=
        std::string::npos);
  // A node that does not give its host.
  json doc = base();
  doc["cluster"]["node"] = "jean-zay-a100";
  doc["parallel"]["zero_stage"] = 3;
  doc["parallel"]["offload"] = "optimizer";
  CHECK(testing::load_error(doc) ==
        "test.json: parallel.offload: the node \"jean-zay-a100\" does not give its host's host_memory_gb, "
        "host_memory_tb_per_s, pcie_gb_per_s; set cluster.node.host_memory_gb (see docs/hardware.md)");
}

TEST_CASE("checkpoint_in_cpu: full recompute's checkpoints, on a node whose host link is known") {
  CHECK(!load({}).plan.checkpoint_in_cpu);
  CHECK(load({"parallel.recompute=full", "parallel.checkpoint_in_cpu=true"}).plan.checkpoint_in_cpu);
  CHECK(error_of({"parallel.checkpoint_in_cpu=true"}) ==
        "test.json: parallel.checkpoint_in_cpu: moves full recompute's checkpoints to the host, and recompute \"none\" "
        "makes none; expected parallel.recompute \"full\" (from --set parallel.checkpoint_in_cpu=true)");
  CHECK(error_of({"parallel.recompute=selective", "parallel.checkpoint_in_cpu=true"}).find("recompute \"selective\" makes none") !=
        std::string::npos);
  CHECK(error_of({"parallel.recompute=full", "parallel.checkpoint_in_cpu=1"}).find(
            "test.json: parallel.checkpoint_in_cpu: expected") == 0);
  json doc = base();
  doc["cluster"]["node"] = "jean-zay-a100";
  doc["parallel"]["recompute"] = "full";
  doc["parallel"]["checkpoint_in_cpu"] = true;
  CHECK(testing::load_error(doc) ==
        "test.json: parallel.checkpoint_in_cpu: the node \"jean-zay-a100\" does not give its host's pcie_gb_per_s, "
        "host_memory_gb; set cluster.node.pcie_gb_per_s (see docs/hardware.md)");
}

TEST_CASE("offload_grad_copy: DeepSpeed's blocking copy by default where ZeRO-3 offloads the optimizer alone") {
  // ZeRO-3 with the optimizer alone offloaded is DeepSpeed's stage 3: blocking.
  CHECK(load({"parallel.zero_stage=3", "parallel.offload=optimizer"}).plan.grad_copy() ==
        workload::OffloadGradCopy::kBlocking);
  // ZeRO-1/2 (DeepSpeed's stage 1/2 copies beside the compute) and ZeRO-3 with
  // the parameters too (FSDP's CPU offload): async.
  CHECK(load({"parallel.zero_stage=1", "parallel.offload=optimizer"}).plan.grad_copy() ==
        workload::OffloadGradCopy::kAsync);
  CHECK(load({"parallel.zero_stage=3", "parallel.offload=optimizer+params"}).plan.grad_copy() ==
        workload::OffloadGradCopy::kAsync);
  CHECK(load({"parallel.zero_stage=3", "parallel.offload=optimizer+params", "parallel.offload_grad_copy=blocking"})
            .plan.grad_copy() == workload::OffloadGradCopy::kBlocking);
  CHECK(error_of({"parallel.offload_grad_copy=async"}) ==
        "test.json: parallel.offload_grad_copy: says how offloaded gradients reach the host; expected "
        "parallel.offload \"optimizer\" or \"optimizer+params\", got \"none\" (from --set "
        "parallel.offload_grad_copy=async)");
  CHECK(error_of({"parallel.zero_stage=1", "parallel.offload=optimizer", "parallel.offload_grad_copy=blocking"}) ==
        "test.json: parallel.offload_grad_copy: applies only with parallel.zero_stage = 3 (parameters sharded unit "
        "by unit), got zero_stage = 1 (from --set parallel.offload_grad_copy=blocking)");
  CHECK(error_of({"parallel.zero_stage=3", "parallel.offload=optimizer", "parallel.offload_grad_copy=sometimes"}) ==
        "test.json: parallel.offload_grad_copy: expected \"async\" or \"blocking\", got \"sometimes\" (from --set "
        "parallel.offload_grad_copy=sometimes)");
  // DeepSpeed's pipeline engine refuses ZeRO-2 and ZeRO-3.
  CHECK(error_of({"parallel.zero_stage=3", "parallel.offload=optimizer", "parallel.pp=2", "parallel.dp=2"})
            .find("parallel.offload_grad_copy: \"blocking\" is DeepSpeed's stage 3 (the default where ZeRO-3 "
                  "offloads the optimizer alone), which DeepSpeed runs without pipeline parallelism") !=
        std::string::npos);
  CHECK(load({"parallel.zero_stage=3", "parallel.offload=optimizer", "parallel.pp=2", "parallel.dp=2",
              "parallel.offload_grad_copy=async"})
            .plan.grad_copy() == workload::OffloadGradCopy::kAsync);
  // Scatters after the last backward leave no backward to hold back.
  CHECK(error_of({"parallel.zero_stage=3", "parallel.offload=optimizer", "parallel.fsdp_grad_sync=last-backward"}) ==
        "test.json: parallel.offload_grad_copy: \"blocking\" (DeepSpeed's stage 3, the default with offload "
        "\"optimizer\") holds each backward back for its own scatters, and parallel.fsdp_grad_sync "
        "\"last-backward\" scatters after the last backward; expected \"async\" or fsdp_grad_sync "
        "\"each-backward\" (from --set parallel.fsdp_grad_sync=last-backward)");
}

}  // namespace config_overlap_keys_test
