#include <doctest/doctest.h>

#include <string>

#include "config/load.hpp"
#include "load_error.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace config_burst_config_test {

using namespace trainsim::config;
using nlohmann::json;

namespace {

// VGG-16 on two DGX A100 nodes, burst parallelism.
json burst() {
  return json::parse(R"({
    "cluster": {"node": "dgx-a100", "nodes": 2},
    "model": "vgg-16",
    "parallel": {"global_batch": 32, "schedule": "burst"}
  })");
}

// A two-layer table, inline.
json tiny_table() {
  return json::parse(R"({
    "name": "tiny", "arch": "layers", "input_bytes_per_sample": 1000,
    "layers": [
      {"name": "a", "flops_per_sample": 2000, "params": 10, "output_bytes_per_sample": 100, "gemms": [[10, 10, 10]]},
      {"name": "b", "flops_per_sample": 0, "params": 0, "output_bytes_per_sample": 10}
    ]
  })");
}

std::string error_of(const json& doc, const std::vector<std::string>& overrides = {}) {
  return testing::load_error(doc, overrides, "burst.json");
}

}  // namespace

TEST_CASE("a layer-table preset loads, with burst defaults") {
  const Scenario s = load_document(burst(), "burst.json", ".");
  REQUIRE(s.layer_model.has_value());
  CHECK(s.layer_model->name == "VGG-16");
  CHECK(s.layer_model->layers.size() == 16);
  CHECK(s.layer_model->layers[0].gemms.size() == 1);
  CHECK(s.model.name == "VGG-16");
  CHECK(s.burst.amplification_limit == 2.0);
  CHECK(s.burst.interference == 0.0);  // nothing measured, nothing assumed
  CHECK(!s.burst.background.has_value());
  CHECK(s.burst.layer_gpus.empty());
}

TEST_CASE("burst settings and a background job load") {
  json d = burst();
  d["parallel"]["burst"] = {{"amplification_limit", 3},
                            {"interference", 0.1},
                            {"background", {{"model", "resnet-50"}, {"batch", 16}}}};
  const Scenario s = load_document(d, "burst.json", ".");
  CHECK(s.burst.amplification_limit == 3.0);
  CHECK(s.burst.interference == 0.1);
  REQUIRE(s.burst.background.has_value());
  CHECK(s.burst.background->model.name == "ResNet-50");
  CHECK(s.burst.background->batch == 16);
  // An inline table, and a given plan of one divisor of 16 per layer.
  d["model"] = tiny_table();
  d["parallel"]["burst"] = {{"layer_gpus", {16, 1}}};
  const Scenario t = load_document(d, "burst.json", ".");
  CHECK(t.layer_model->layers[1].name == "b");
  CHECK(t.burst.layer_gpus == std::vector<int>{16, 1});
}

TEST_CASE("a layer-table model runs data-parallel on every GPU without the burst schedule") {
  json d = burst();
  d["parallel"] = {{"dp", 16}, {"global_batch", 32}};
  CHECK(error_of(d) == "");
  d["parallel"]["dp"] = 8;
  CHECK(error_of(d) == "burst.json: parallel.dp: a layer-table model runs data-parallel on every GPU: expected 16 "
                       "(cluster.nodes = 2 x gpus_per_node = 8), got 8");
  d["parallel"] = {{"dp", 16}, {"global_batch", 8}};
  CHECK(error_of(d) == "burst.json: parallel.global_batch: 8 samples leave GPUs without any under data parallelism "
                       "over 16 GPUs (the burst schedule can use fewer)");
}

TEST_CASE("bad layer tables name the JSON path") {
  json d = burst();
  d["model"] = tiny_table();
  CHECK(error_of(d) == "");
  json bad = d;
  bad["model"]["layers"][1]["params"] = -1;
  CHECK(error_of(bad) == "burst.json: model.layers[1].params: expected a number from 0 to 1e+13, got -1");
  bad = d;
  bad["model"]["layers"][0].erase("output_bytes_per_sample");
  CHECK(error_of(bad) ==
        "burst.json: model.layers[0].output_bytes_per_sample: is missing (expected a number from 1 to 1e+12)");
  bad = d;
  bad["model"]["layers"][0]["param"] = 1;
  CHECK(error_of(bad) == "burst.json: model.layers[0].param: unknown key (did you mean \"params\"?); known keys here: "
                         "name, flops_per_sample, params, output_bytes_per_sample, gemms");
  bad = d;
  bad["model"]["layers"][0]["gemms"] = {{10, 10, 20}};  // 4000 FLOPs > 2000
  CHECK(error_of(bad) == "burst.json: model.layers[0].gemms: the GEMMs' FLOPs (2 m n k, summed: 4000) exceed "
                         "flops_per_sample = 2000");
  bad = d;
  bad["model"]["layers"][0]["gemms"] = {{10, 10}};
  CHECK(error_of(bad) == "burst.json: model.layers[0].gemms[0]: expected [m_per_sample, n, k], each from 1 to 1e9, "
                         "got [10,10]");
  bad = d;
  bad["model"]["layers"] = json::array();
  CHECK(error_of(bad) == "burst.json: model.layers: expected a non-empty list of layers {name, flops_per_sample, "
                         "params, output_bytes_per_sample[, gemms]}, got []");
  bad = d;
  bad["model"]["hidden"] = 1024;
  CHECK(error_of(bad) == "burst.json: model.hidden: not a key of a layer-table model (arch \"layers\"); remove it");
  CHECK(error_of(burst(), {"model.layers=12"}) ==
        "burst.json: model.layers: expected a non-empty list of layers {name, flops_per_sample, params, "
        "output_bytes_per_sample[, gemms]}, got 12 (from --set model.layers=12)");
}

TEST_CASE("bad burst settings name the JSON path") {
  CHECK(error_of(burst(), {"parallel.burst.amplification_limit=0.5"}) ==
        "burst.json: parallel.burst.amplification_limit: expected a number from 1 to 1e+06, got 0.5 (from --set "
        "parallel.burst.amplification_limit=0.5)");
  CHECK(error_of(burst(), {"parallel.burst.interference=0.1"}) ==
        "burst.json: parallel.burst.interference: applies only with parallel.burst.background (the job it slows the "
        "foreground for) (from --set parallel.burst.interference=0.1)");
  CHECK(error_of(burst(), {"parallel.burst.layer_gpus=[16, 1]"}) ==
        "burst.json: parallel.burst.layer_gpus: expected one GPU count per layer (16 layers), got 2 (from --set "
        "parallel.burst.layer_gpus=[16, 1])");
  CHECK(error_of(burst(), {"parallel.burst.layer_gpus=[16,16,16,16,16,16,16,16,16,16,16,16,16,3,1,1]"})
            .starts_with("burst.json: parallel.burst.layer_gpus[13]: expected a divisor of the cluster's 16 GPUs up to "
                         "parallel.global_batch = 32 (layer \"fc6\"), got 3"));
  CHECK(error_of(burst(), {"parallel.burst.background.model=gpt-1.7b", "parallel.burst.background.batch=8"}) ==
        "burst.json: parallel.burst.background.model: expected a layer-table model (arch \"layers\"), such as "
        "\"resnet-50\" (from --set parallel.burst.background.model=gpt-1.7b)");
  CHECK(error_of(burst(), {"parallel.burst.background.model=resnet-50"}) ==
        "burst.json: parallel.burst.background.batch: is missing (expected a positive integer)");
  CHECK(error_of(burst(), {"parallel.tp=2"}) ==
        "burst.json: parallel.tp: does not apply to a layer-table model (it runs data-parallel, or with "
        "parallel.schedule = \"burst\") (from --set parallel.tp=2)");
  CHECK(error_of(burst(), {"parallel.dp=4"}) ==
        "burst.json: parallel.dp: the burst schedule gives each layer its GPUs among all 16: expected 16 or none, got 4 "
        "(from --set parallel.dp=4)");
  CHECK(error_of(burst(), {"parallel.dp=16"}) == "");
  CHECK(error_of(burst(), {"options.comm_slowdown=0.1"}).starts_with("burst.json: options.comm_slowdown: not modelled"));
}

TEST_CASE("burst needs a layer table, and parallel.burst needs burst") {
  json d = burst();
  d["model"] = "gpt-1.7b";
  d["parallel"] = {{"global_batch", 32}, {"schedule", "burst"}};
  CHECK(error_of(d) == "burst.json: parallel.schedule: \"burst\" needs a layer-table model (model.arch = \"layers\"; "
                       "presets vgg-16, resnet-50)");
  json e = burst();
  e["parallel"] = {{"dp", 16}, {"global_batch", 32}, {"burst", {{"amplification_limit", 2}}}};
  CHECK(error_of(e) == "burst.json: parallel.burst: applies only with parallel.schedule = \"burst\"");
  json f = burst();
  f["parallel"]["schedule"] = "bursty";
  CHECK(error_of(f).starts_with("burst.json: parallel.schedule: unknown schedule \"bursty\" (did you mean \"burst\"?)"));
}

TEST_CASE("a layer-table model refuses the transformer's gradient settings") {
  // Its gradients are one all-reduce per layer in 16 bits; the settings that
  // shape a transformer stage's gradients do not reach it, so they are refused.
  const std::string why =
      "does not apply to a layer-table model (it runs data-parallel, or with parallel.schedule = \"burst\")";
  CHECK(error_of(burst(), {"parallel.grad_accumulation=add"}) ==
        "burst.json: parallel.grad_accumulation: " + why + " (from --set parallel.grad_accumulation=add)");
  CHECK(error_of(burst(), {"parallel.grad_dtype=fp32"}) ==
        "burst.json: parallel.grad_dtype: " + why + " (from --set parallel.grad_dtype=fp32)");
  // Not "fp16 gradients under bf16 precision": neither key applies here.
  CHECK(error_of(burst(), {"parallel.grad_dtype=fp16"}) ==
        "burst.json: parallel.grad_dtype: " + why + " (from --set parallel.grad_dtype=fp16)");
  CHECK(error_of(burst(), {"parallel.precision=fp16"}) ==
        "burst.json: parallel.precision: " + why + " (from --set parallel.precision=fp16)");
  CHECK(error_of(burst(), {"parallel.pipeline_send_split=full"}) ==
        "burst.json: parallel.pipeline_send_split: " + why + " (from --set parallel.pipeline_send_split=full)");
}

TEST_CASE("a layer-table model refuses the keys of kernels, losses and overlapped communication") {
  const std::string why =
      "does not apply to a layer-table model (it runs data-parallel, or with parallel.schedule = \"burst\")";
  for (const std::string key : {"parallel.elementwise=eager", "parallel.loss=pytorch",
                                "options.overlap_grad_reduce=false", "parallel.kv_repeat=true",
                                "parallel.separate_projections=true", "parallel.sp_batch_first=true"}) {
    CAPTURE(key);
    const std::string path = key.substr(0, key.find('='));
    CHECK(error_of(burst(), {key}).starts_with("burst.json: " + path + ": " + why));
  }
  CHECK(error_of(burst(), {"parallel.distributed_optimizer=true"}) ==
        "burst.json: parallel.distributed_optimizer: " + why + " (from --set parallel.distributed_optimizer=true)");
}

}  // namespace config_burst_config_test
