#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "config/load.hpp"
#include "load_error.hpp"
#include "config/presets.hpp"
#include "config/schema.hpp"
#include "workload/stage_costs.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace config_test {

using namespace trainsim::config;
using nlohmann::json;

namespace {

json base() {
  return json::parse(R"({
    "cluster": {"node": "dgx-a100", "nodes": 1},
    "model": "gpt-1.7b",
    "parallel": {"tp": 2, "pp": 4, "dp": 1, "microbatch_size": 4, "global_batch": 64, "schedule": "1f1b"}
  })");
}

// The message a document fails with ("" if it loads).
std::string error_of(const json& doc, const std::vector<std::string>& overrides = {}) {
  return testing::load_error(doc, overrides);
}

}  // namespace

TEST_CASE("the base document loads, with presets expanded") {
  const Scenario s = load_document(base(), "test.json", ".");
  CHECK(s.cluster.gpus() == 8);
  CHECK(s.cluster.node.gpu.peak_tflops == 312);
  CHECK(s.model.layers == 24);
  CHECK(s.plan.microbatches() == 16);  // 64 / (1 x 4)
  CHECK(s.options.strict_memory == false);
}

TEST_CASE("malformed JSON names the file, line and column") {
  try {
    parse_json("{\n  \"a\": 1,\n  }\n", "bad.json");
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).rfind("bad.json:3:3: malformed JSON: ", 0) == 0);
  }
}

TEST_CASE("a missing file is named") {
  try {
    load_file("/nonexistent/dir/x.json");
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) == "/nonexistent/dir/x.json: cannot open config file: no such file");
  }
}

TEST_CASE("an unknown key gets the closest known key suggested") {
  json d = base();
  d["parallel"]["tpp"] = 2;
  CHECK(error_of(d).rfind("test.json: parallel.tpp: unknown key (did you mean \"tp\"?)", 0) == 0);
  json top = base();
  top["paralel"] = json::object();
  CHECK(error_of(top).rfind("test.json: paralel: unknown key (did you mean \"parallel\"?)", 0) == 0);
}

TEST_CASE("a name cut short is suggested in full, in the file and in --set") {
  // "microbatch" is 5 edits from "microbatch_size", more than a third of its
  // 10 characters allow, but begins it; "zero" begins only zero_stage.
  const std::vector<std::string>& parallel = *section_keys("parallel");
  CHECK(closest("microbatch", parallel) == "microbatch_size");
  CHECK(closest("zero", parallel) == "zero_stage");
  // A typo still wins over a prefix; under 3 characters there is no prefix match.
  CHECK(closest("tpp", parallel) == "tp");
  CHECK_FALSE(closest("gr", {"grad_dtype", "grad_bucket_mib"}).has_value());
  // Of several names it begins, the shortest: "grad" -> grad_dtype (10) before grad_bucket_mib (15).
  CHECK(closest("grad", {"grad_bucket_mib", "grad_dtype"}) == "grad_dtype");
  json d = base();
  d["parallel"]["zero"] = 1;
  CHECK(error_of(d).rfind("test.json: parallel.zero: unknown key (did you mean \"zero_stage\"?); known keys here: tp,", 0) == 0);
  CHECK(error_of(base(), {"parallel.microbatch=2"}) ==
        "test.json: --set parallel.microbatch=2: no key \"microbatch\" in parallel (did you mean parallel.microbatch_size?)");
  CHECK(unknown_key_message("nodse", {"nodes", "network"}) ==
        "unknown key (did you mean \"nodes\"?); known keys here: nodes, network");
  CHECK(unknown_key_message("xyz", {"nodes", "network"}) == "unknown key; known keys here: nodes, network");
}

TEST_CASE("a wrong type is named with what was expected") {
  json d = base();
  d["parallel"]["tp"] = "eight";
  CHECK(error_of(d) == "test.json: parallel.tp: expected a positive integer, got \"eight\"");
  json f = base();
  f["parallel"]["pp"] = 2.5;
  CHECK(error_of(f) == "test.json: parallel.pp: expected a positive integer, got 2.5");
  json o = base();
  o["options"] = {{"strict_memory", "yes"}};
  CHECK(error_of(o) == "test.json: options.strict_memory: expected true or false, got \"yes\"");
}

TEST_CASE("zero GPUs is refused") {
  json d = base();
  d["cluster"]["nodes"] = 0;
  CHECK(error_of(d) == "test.json: cluster.nodes: expected a positive integer, got 0");
}

TEST_CASE("tp x pp x dp must equal the cluster's GPU count") {
  json d = base();
  d["parallel"]["dp"] = 2;
  CHECK(error_of(d) ==
        "test.json: parallel: tp x pp x dp = 2 x 4 x 2 = 16, but the cluster has 8 GPUs (cluster.nodes = 1 x "
        "cluster.node.gpus_per_node = 8); expected parallel.dp = 1 for these GPUs");
}

TEST_CASE("layers must divide across pipeline stages") {
  // GPT 1.7B has 24 layers; 24 % 8 == 0 but with pp = 8 and tp = 1 it divides, so use 16 GPUs, pp = 16.
  json d = base();
  d["cluster"]["nodes"] = 2;
  d["parallel"]["tp"] = 1;
  d["parallel"]["pp"] = 16;
  CHECK(error_of(d) == "test.json: parallel.pp: model.layers = 24 does not divide into pp = 16 stages (or give "
                       "parallel.stage_layers)");
}

TEST_CASE("heads must divide across tensor-parallel ranks") {
  // 24 heads over tp = 16 (16 GPUs, pp = 1).
  json d = base();
  d["cluster"]["nodes"] = 2;
  d["parallel"]["tp"] = 16;
  d["parallel"]["pp"] = 1;
  CHECK(error_of(d) == "test.json: parallel.tp: model.heads = 24 does not divide across tp = 16 ranks");
}

TEST_CASE("the global batch must be a multiple of dp x micro-batch size") {
  json d = base();
  d["parallel"]["global_batch"] = 66;
  CHECK(error_of(d) ==
        "test.json: parallel.global_batch: 66 is not a multiple of dp x microbatch_size = 1 x 4 = 4");
}

TEST_CASE("--set overrides a key, parsing the value as JSON or a bare word") {
  const Scenario s = load_document(base(), "test.json", ".", {"parallel.schedule=gpipe", "parallel.microbatch_size=2"});
  CHECK(s.plan.schedule == "gpipe");
  CHECK(s.plan.microbatch_size == 2);
  // Into a preset: the node's GPU memory.
  const Scenario t = load_document(base(), "test.json", ".", {"cluster.node.gpu.memory_gb=40"});
  CHECK(t.cluster.node.gpu.memory_gb == 40);
  // A preset name replaces a whole section.
  const Scenario u = load_document(base(), "test.json", ".", {"cluster.node=dgx-h100"});
  CHECK(u.cluster.node.gpu.peak_tflops == 989.5);
}

TEST_CASE("--set of a path that does not exist is refused") {
  CHECK(error_of(base(), {"parallel.foo=3"}) == "test.json: --set parallel.foo=3: no key \"foo\" in parallel");
  CHECK(error_of(base(), {"parallel.tpp=3"}) ==
        "test.json: --set parallel.tpp=3: no key \"tpp\" in parallel (did you mean parallel.tp?)");
  CHECK(error_of(base(), {"parallel.tp.x=3"}) ==
        "test.json: --set parallel.tp.x=3: parallel.tp is not a section, so parallel.tp.x does not exist");
  CHECK(error_of(base(), {"parallel"}) == "test.json: --set parallel: expected key.path=value");
  CHECK(error_of(base(), {"parallel..ep=3"}) ==
        "test.json: --set parallel..ep=3: the key path \"parallel..ep\" has an empty name (two dots, or a dot at an "
        "end); expected names joined by single dots, as parallel.tp");
}

TEST_CASE("a bad value from --set says so") {
  CHECK(error_of(base(), {"parallel.tp=abc"}) ==
        "test.json: parallel.tp: expected a positive integer, got \"abc\" (from --set parallel.tp=abc)");
}

TEST_CASE("a check across keys names the --set of any key it reads, before a preset") {
  // gpt-1.7b has 24 heads; hidden 1 does not divide into them. The check sits
  // at model.heads (the preset's value), but the --set changed model.hidden.
  CHECK(error_of(base(), {"model.hidden=1"}) ==
        "test.json: model.heads: model.hidden = 1 must divide evenly into 24 heads (or give model.head_dim) (from --set model.hidden=1)");
  // ffn 1 over tp 2: the check sits at parallel.tp, which the file gave.
  CHECK(error_of(base(), {"model.ffn=1"}) ==
        "test.json: parallel.tp: model.ffn = 1 does not divide across tp = 2 ranks (from --set model.ffn=1)");
  // 2 x 4 x 2 = 16 GPUs on a node of 8: the check sits at parallel.
  CHECK(error_of(base(), {"parallel.dp=2"}) ==
        "test.json: parallel: tp x pp x dp = 2 x 4 x 2 = 16, but the cluster has 8 GPUs (cluster.nodes = 1 x "
        "cluster.node.gpus_per_node = 8); expected parallel.dp = 1 for these GPUs (from --set parallel.dp=2)");
  // Without a --set, the preset is named as before.
  json d = base();
  d["model"] = {{"layers", 24}, {"hidden", 2304}, {"heads", 25}, {"ffn", 9216}, {"seq", 2048}, {"vocab", 51200}};
  CHECK(error_of(d) == "test.json: model.heads: model.hidden = 2304 must divide evenly into 25 heads (or give model.head_dim)");
}

TEST_CASE("an unknown preset lists the known ones") {
  json d = base();
  d["model"] = "gpt-1.7";
  const std::string e = error_of(d);
  CHECK(e.rfind("test.json: model: unknown model preset \"gpt-1.7\" (did you mean \"gpt-1.7b\"?)", 0) == 0);
}

TEST_CASE("an unknown schedule is named with the known ones") {
  CHECK(error_of(base(), {"parallel.schedule=1f1f"}).rfind(
            "test.json: parallel.schedule: unknown schedule \"1f1f\" (did you mean \"1f1b\"?)", 0) == 0);
}

TEST_CASE("an error inside a preset says which preset") {
  CHECK(error_of(base(), {"cluster.node.gpu.memory_gb=-1"}) ==
        "test.json: cluster.node.gpu.memory_gb: expected a positive number, got -1 (from --set "
        "cluster.node.gpu.memory_gb=-1)");
}

TEST_CASE("values may be given inline instead of a preset") {
  json d = base();
  d["model"] = {{"name", "tiny"}, {"layers", 4}, {"hidden", 256}, {"heads", 4}, {"ffn", 1024}, {"seq", 128},
                {"vocab", 1000}};
  const Scenario s = load_document(d, "test.json", ".");
  CHECK(s.model.name == "tiny");
  CHECK(s.model.kv_heads == 4);  // defaults to heads
  d["model"].erase("seq");
  CHECK(error_of(d) == "test.json: model.seq: is missing (expected a positive integer)");
}

TEST_CASE("every preset and example loads") {
  for (const char* kind : {"gpu", "node", "model"}) CHECK(!preset_names(kind).empty());
  for (const auto& entry : std::filesystem::directory_iterator(TRAINSIM_SOURCE_DIR "/configs/examples")) {
    CAPTURE(entry.path().string());
    CHECK_NOTHROW(load_file(entry.path().string()));
  }
  for (const auto& model : preset_names("model")) {
    json d = base();
    d["model"] = model;
    d["parallel"] = {{"tp", 1}, {"pp", 1}, {"dp", 8}, {"global_batch", 8}};
    CAPTURE(model);
    CHECK(error_of(d) == "");
  }
}

TEST_CASE("a key given twice in one object is refused") {
  try {
    parse_json(R"({"parallel": {"global_batch": 64, "global_batch": 65}})", "dup.json");
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) == "dup.json: parallel.global_batch: duplicate key (each key may appear once in an object)");
  }
}

TEST_CASE("a number too large for a double is named by line, column and JSON path") {
  auto error = [](const std::string& text) {
    try {
      parse_json(text, "big.json");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // `1e400` starts at byte 16 of line 1: column 17.
  CHECK(error(R"({"description": 1e400})") ==
        "big.json:1:17: description: the number 1e400 is beyond the range of a double (about 1.8e308)");
  // 400 digits are no integer that fits either; the second element of a
  // list on line 3, column 13. Only the number's start is echoed.
  const std::string digits(400, '9');
  CHECK(error("{\n \"parallel\": {\n  \"tp\": [1, " + digits + "]}}") ==
        "big.json:3:13: parallel.tp[1]: the number 9999999999999999999999999999999999999... is beyond the range "
        "of a double (about 1.8e308)");
  // A string holding such a number is no number: the one after it is named.
  CHECK(error(R"({"a": "1e999", "b": -1e999})") ==
        "big.json:1:21: b: the number -1e999 is beyond the range of a double (about 1.8e308)");
}

TEST_CASE("malformed JSON inside a value names its path as well") {
  try {
    parse_json(R"({"parallel": {"tp": tru}})", "bad.json");
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).rfind("bad.json:1:24: malformed JSON (at parallel.tp): ", 0) == 0);
  }
}

TEST_CASE("values far outside any real system are refused") {
  CHECK(error_of(base(), {"cluster.node.gpu.memory_gb=1e10"}) ==
        "test.json: cluster.node.gpu.memory_gb: expected a number from 0.001 to 100000, got 10000000000.0 (from --set "
        "cluster.node.gpu.memory_gb=1e10)");
  CHECK(error_of(base(), {"model.seq=2147483647"}) ==
        "test.json: model.seq: expected at most 10000000, got 2147483647 (from --set model.seq=2147483647)");
  CHECK(error_of(base(), {"cluster.nodes=9000000"}) ==
        "test.json: cluster.nodes: 9000000 nodes x 8 GPUs = 72000000 GPUs, more than the 10000000 supported (from --set "
        "cluster.nodes=9000000)");
}

TEST_CASE("--set of a number out of range, or of bytes that are not UTF-8, is refused") {
  CHECK(error_of(base(), {"parallel.tp=1e400"}) == "test.json: --set parallel.tp=1e400: the number is out of range");
  CHECK(error_of(base(), {"model.name=\xff"}) == "test.json: --set \"model.name=\xef\xbf\xbd\": not valid UTF-8");
}

TEST_CASE("a directory is not a config") {
  try {
    load_file(TRAINSIM_SOURCE_DIR "/configs");
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) == TRAINSIM_SOURCE_DIR "/configs: cannot open config file: it is a directory");
  }
}

TEST_CASE("JSON nested too deeply is refused before it is parsed") {
  try {
    parse_json(std::string(1000, '[') + std::string(1000, ']'), "deep.json");
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) == "deep.json: malformed JSON: nested deeper than 64 levels");
  }
  CHECK(error_of(base(), {"description=" + std::string(100, '[') + std::string(100, ']')}) ==
        "test.json: --set description: nested deeper than 64 levels");
}

TEST_CASE("a device or pipe is not a config") {
  try {
    load_file("/dev/null");
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) == "/dev/null: cannot open config file: not a regular file");
  }
}

TEST_CASE("measured throughput above the peak is refused") {
  CHECK(error_of(base(), {"cluster.node.gpu.gemm_max_tflops=500"}) ==
        "test.json: cluster.node.gpu.gemm_max_tflops: cannot exceed peak_tflops (from --set "
        "cluster.node.gpu.gemm_max_tflops=500)");
  CHECK(error_of(base(), {"cluster.node.gpu.attention_tflops=[[512, 99], [2048, 400]]"}) ==
        "test.json: cluster.node.gpu.attention_tflops[1]: 400 TFLOP/s exceeds peak_tflops = 312 (from --set "
        "cluster.node.gpu.attention_tflops=[[512, 99], [2048, 400]])");
}

TEST_CASE("a node's NCCL send/recv rate is read, optional, and at most the NVLink line rate") {
  // dgx-a100: 46.1 GB/s, the median of the zero-bubble paper's six 1F1B profiles.
  CHECK(load_document(base(), "test.json", ".").cluster.node.nvlink_sendrecv_gb_per_s == 46.1);
  CHECK(error_of(base(), {"cluster.node.nvlink_sendrecv_gb_per_s=400"}) ==
        "test.json: cluster.node.nvlink_sendrecv_gb_per_s: 400 GB/s is above the NVLink line rate nvlink_gb_per_s "
        "(300 GB/s); expected at most that (when lowering nvlink_gb_per_s, lower this too) (from --set "
        "cluster.node.nvlink_sendrecv_gb_per_s=400)");
  // A what-if on a slower NVLink names the send/recv rate it now exceeds.
  CHECK(error_of(base(), {"cluster.node.nvlink_gb_per_s=40"}).find("cluster.node.nvlink_sendrecv_gb_per_s: 46.1 GB/s is "
                                                                     "above the NVLink line rate") != std::string::npos);
  CHECK(error_of(base(), {"cluster.node.nvlink_sendrecv_gb_per_s=0"}) ==
        "test.json: cluster.node.nvlink_sendrecv_gb_per_s: expected a positive number, got 0 (from --set "
        "cluster.node.nvlink_sendrecv_gb_per_s=0)");
  // An inline node without it: 0, sends move at the line rate.
  json d = base();
  d["cluster"]["node"] = {{"gpu", "A100-SXM4-80GB"}, {"gpus_per_node", 8}, {"nvlink_gb_per_s", 300},
                          {"nvlink_latency_us", 0.6}, {"nvlink_bus_gb_per_s", 240}, {"nics_per_node", 8},
                          {"nic_gbit_per_s", 200}, {"nic_bus_gb_per_s", 24}, {"nic_latency_us", 0.6}};
  CHECK(load_document(d, "test.json", ".").cluster.node.nvlink_sendrecv_gb_per_s == 0.0);
}

TEST_CASE("a node's NCCL bus bandwidths are at most their links' line rates") {
  // dgx-a100: NVLink 300 GB/s a direction, NCCL's 240 GB/s over it; HDR NICs
  // of 200 Gb/s = 25 GB/s, NCCL's 24 GB/s through one.
  CHECK(error_of(base(), {"cluster.node.nvlink_bus_gb_per_s=3000"}) ==
        "test.json: cluster.node.nvlink_bus_gb_per_s: 3000 GB/s is above the NVLink line rate nvlink_gb_per_s "
        "(300 GB/s); expected at most that (when lowering nvlink_gb_per_s, lower this too) (from --set "
        "cluster.node.nvlink_bus_gb_per_s=3000)");
  CHECK(error_of(base(), {"cluster.node.nic_bus_gb_per_s=1000"}) ==
        "test.json: cluster.node.nic_bus_gb_per_s: 1000 GB/s is above the NIC line rate nic_gbit_per_s = 200 Gb/s "
        "(25 GB/s); expected at most that (when lowering nic_gbit_per_s, lower this too) (from --set "
        "cluster.node.nic_bus_gb_per_s=1000)");
  // A what-if on a slower NIC names the bus figure it now exceeds (24 GB/s > 100 Gb/s / 8).
  CHECK(error_of(base(), {"cluster.node.nic_gbit_per_s=100"}).find("cluster.node.nic_bus_gb_per_s: 24 GB/s is above "
                                                                    "the NIC line rate") != std::string::npos);
  // At the line rate exactly: allowed.
  CHECK(load_document(base(), "test.json", ".", {"cluster.node.nic_bus_gb_per_s=25"}).cluster.node.nic_bus_gb_per_s ==
        25.0);
}

TEST_CASE("a flat network refuses the keys of a network of leaves") {
  for (const char* key : {"nodes_per_leaf", "oversubscription", "switch_latency_us"}) {
    json doc = base();
    doc["cluster"]["network"] = {{key, 2}};
    CHECK(error_of(doc) == "test.json: cluster.network." + std::string(key) +
                               ": only read by a network of leaves: expected cluster.network.kind \"fat-tree\" or "
                               "\"rail\" (a flat network, the default kind, is one non-blocking switch)");
    doc["cluster"]["network"]["kind"] = "fat-tree";
    CHECK_NOTHROW(load_document(doc, "test.json", "."));
  }
}

TEST_CASE("notes must be text") {
  CHECK(error_of(base(), {"cluster.node.gpu.sources={\"peak_tflops\": 5}"}) ==
        "test.json: cluster.node.gpu.sources.peak_tflops: expected text, got 5 (from --set "
        "cluster.node.gpu.sources={\"peak_tflops\": 5})");
}

TEST_CASE("a plan too large to simulate is refused up front") {
  // pp 4 x (1e9 / 4) micro-batches = 1e9 (stage, micro-batch) pairs.
  CHECK(error_of(base(), {"parallel.global_batch=1000000000"}) ==
        "test.json: parallel: pp x vp x micro-batches = 4 x 1 x 250000000 = 1000000000 is more than the 2500000 the "
        "simulator takes (raise parallel.microbatch_size or lower parallel.global_batch) (from --set "
        "parallel.global_batch=1000000000)");
}

TEST_CASE("Adam's moment type is read; it shrinks the optimizer state") {
  // GPT 1.7B at tp 2 x pp 4: FP32 moments by default; BF16 ones take 4 bytes a
  // parameter off the unsharded optimizer state (K 12 -> 8).
  const Scenario fp32 = load_document(base(), "test.json", ".");
  CHECK(fp32.plan.moment_dtype == trainsim::workload::MomentDtype::kFp32);
  const Scenario bf16 = load_document(base(), "test.json", ".", {"parallel.optimizer_moment_dtype=bf16"});
  CHECK(bf16.plan.moment_dtype == trainsim::workload::MomentDtype::kBf16);
  const auto costs32 = trainsim::workload::stage_costs(fp32.model, fp32.plan, fp32.cluster);
  const auto costs16 = trainsim::workload::stage_costs(bf16.model, bf16.plan, bf16.cluster);
  CHECK(static_cast<double>(costs32.stages[1].model_state_bytes - costs16.stages[1].model_state_bytes) ==
        doctest::Approx(4.0 * costs32.stages[1].params).epsilon(1e-9));
  CHECK(error_of(base(), {"parallel.optimizer_moment_dtype=int8"}) ==
        "test.json: parallel.optimizer_moment_dtype: expected \"fp32\", \"bf16\", \"fp16\" or \"fp8\", got \"int8\" "
        "(from --set parallel.optimizer_moment_dtype=int8)");
}

TEST_CASE("recompute and sequence parallelism are read, and bad values named") {
  const Scenario s = load_document(base(), "test.json", ".", {"parallel.recompute=selective", "parallel.sequence_parallel=true"});
  CHECK(s.plan.recompute == trainsim::workload::Recompute::kSelective);
  CHECK(s.plan.sequence_parallel);
  // With one tensor rank there is nothing to split: it runs without (with a warning), as Megatron-LM does.
  const Scenario one = load_document(base(), "test.json", ".",
                                     {"parallel.tp=1", "parallel.dp=2", "parallel.sequence_parallel=true"});
  CHECK_FALSE(one.plan.sequence_parallel);
  CHECK(error_of(base(), {"parallel.recompute=some"}) ==
        "test.json: parallel.recompute: expected \"none\", \"selective\", \"full\" or \"selective-op\", got \"some\" "
        "(from --set "
        "parallel.recompute=some)");
}

TEST_CASE("ZeRO stages 0 to 3 are read; others refused") {
  CHECK(load_document(base(), "test.json", ".", {"parallel.zero_stage=3"}).plan.zero_stage == 3);
  CHECK(error_of(base(), {"parallel.zero_stage=4"}) ==
        "test.json: parallel.zero_stage: expected 0, 1, 2 or 3, got 4 (from --set parallel.zero_stage=4)");
  CHECK(load_document(base(), "test.json", ".", {"parallel.grad_bucket_mib=50"}).plan.grad_bucket_mib == 50);
}

TEST_CASE("a network is a preset or inline; flat when not given") {
  CHECK(load_document(base(), "test.json", ".").cluster.network.kind == trainsim::hw::NetworkKind::kFlat);
  const Scenario s = load_document(base(), "test.json", ".", {"cluster.network=selene-fat-tree"});
  CHECK(s.cluster.network.kind == trainsim::hw::NetworkKind::kFatTree);
  CHECK(s.cluster.network.nodes_per_leaf == 20);
  const Scenario r = load_document(base(), "test.json", ".",
                                   {"cluster.network={\"kind\": \"rail\", \"nodes_per_leaf\": 4, \"oversubscription\": 2}"});
  CHECK(r.cluster.network.kind == trainsim::hw::NetworkKind::kRail);
  CHECK(r.cluster.network.oversubscription == 2);
  CHECK(error_of(base(), {"cluster.network.kind=torus"}) ==
        "test.json: cluster.network.kind: expected \"flat\", \"fat-tree\", \"rail\" or \"custom\", got \"torus\" "
        "(from --set "
        "cluster.network.kind=torus)");
  CHECK(error_of(base(), {"cluster.network=clos"}).rfind("test.json: cluster.network: unknown network preset \"clos\"", 0) == 0);
}

TEST_CASE("fidelity and collective model are read, and bad values named") {
  const Scenario s = load_document(base(), "test.json", ".", {"options.fidelity=full", "options.collectives=flow"});
  CHECK(s.options.full_fidelity);
  CHECK(s.options.flow_collectives);
  const Scenario d = load_document(base(), "test.json", ".");
  CHECK_FALSE(d.options.full_fidelity);
  CHECK_FALSE(d.options.flow_collectives);
  CHECK(error_of(base(), {"options.fidelity=exact"}) ==
        "test.json: options.fidelity: expected \"symmetric\" or \"full\", got \"exact\" (from --set "
        "options.fidelity=exact)");
  CHECK(error_of(base(), {"options.collectives=packet"}) ==
        "test.json: options.collectives: expected \"analytic\" or \"flow\", got \"packet\" (from --set "
        "options.collectives=packet)");
}

TEST_CASE("the collective algorithm is read, auto by default, and a bad one named") {
  using A = trainsim::hw::CollectiveAlgorithm;
  CHECK(load_document(base(), "test.json", ".").options.collective_algorithm == A::kAuto);
  CHECK(load_document(base(), "test.json", ".", {"options.collective_algorithm=ring"}).options.collective_algorithm ==
        A::kRing);
  CHECK(load_document(base(), "test.json", ".", {"options.collective_algorithm=tree"}).options.collective_algorithm ==
        A::kTree);
  CHECK(load_document(base(), "test.json", ".", {"options.collective_algorithm=hierarchical"})
            .options.collective_algorithm == A::kHierarchical);
  CHECK(error_of(base(), {"options.collective_algorithm=butterfly"}) ==
        "test.json: options.collective_algorithm: expected \"auto\", \"ring\", \"tree\" or \"hierarchical\", got "
        "\"butterfly\" (from --set options.collective_algorithm=butterfly)");
}

TEST_CASE("pipeline sends overlap compute by default, or block it") {
  CHECK_FALSE(load_document(base(), "test.json", ".").options.blocking_sends);
  CHECK(load_document(base(), "test.json", ".", {"options.pipeline_sends=blocking"}).options.blocking_sends);
  CHECK_FALSE(load_document(base(), "test.json", ".", {"options.pipeline_sends=overlapped"}).options.blocking_sends);
  CHECK(error_of(base(), {"options.pipeline_sends=sync"}) ==
        "test.json: options.pipeline_sends: expected \"overlapped\" or \"blocking\", got \"sync\" (from --set "
        "options.pipeline_sends=sync)");
}

TEST_CASE("precision is bf16 by default; fp16 makes the gradients fp16 unless they are fp32") {
  using P = trainsim::workload::Precision;
  using D = trainsim::workload::GradDtype;
  CHECK(load_document(base(), "test.json", ".").plan.precision == P::kBf16);
  const auto fp16 = load_document(base(), "test.json", ".", {"parallel.precision=fp16"}).plan;
  CHECK(fp16.precision == P::kFp16);
  CHECK(fp16.grad_dtype == D::kFp16);
  CHECK(load_document(base(), "test.json", ".", {"parallel.precision=fp16", "parallel.grad_dtype=fp32"}).plan.grad_dtype ==
        D::kFp32);
  CHECK(error_of(base(), {"parallel.precision=fp16", "parallel.grad_dtype=bf16"}) ==
        "test.json: parallel.grad_dtype: bf16 gradients under fp16 precision; expected \"fp16\" or \"fp32\" (or set "
        "parallel.precision) (from --set parallel.grad_dtype=bf16)");
  CHECK(error_of(base(), {"parallel.precision=fp4"}) ==
        "test.json: parallel.precision: expected \"bf16\", \"fp16\" or \"fp8\", got \"fp4\" (from --set parallel.precision=fp4)");
}

TEST_CASE("pipeline sends are scattered and gathered by default, or sent whole") {
  using S = trainsim::workload::PipelineSendSplit;
  CHECK(load_document(base(), "test.json", ".").plan.send_split == S::kScatterGather);
  CHECK(load_document(base(), "test.json", ".", {"parallel.pipeline_send_split=full"}).plan.send_split == S::kFull);
  CHECK(load_document(base(), "test.json", ".", {"parallel.pipeline_send_split=scatter-gather"}).plan.send_split ==
        S::kScatterGather);
  CHECK(error_of(base(), {"parallel.pipeline_send_split=half"}) ==
        "test.json: parallel.pipeline_send_split: expected \"scatter-gather\" or \"full\", got \"half\" (from --set "
        "parallel.pipeline_send_split=half)");
}

TEST_CASE("the CUDA context is 400 MiB by default, or as given, and must leave room for tensors") {
  CHECK(load_document(base(), "test.json", ".").options.cuda_context_bytes == 400.0 * 1048576.0);
  CHECK(load_document(base(), "test.json", ".", {"options.cuda_context_mib=1573"}).options.cuda_context_bytes ==
        1573.0 * 1048576.0);
  CHECK(load_document(base(), "test.json", ".", {"options.cuda_context_mib=0"}).options.cuda_context_bytes == 0.0);
  CHECK(error_of(base(), {"options.cuda_context_mib=-1"}).find("test.json: options.cuda_context_mib: expected a number "
                                                               ">= 0") == 0);
  // 80 GB is 76293.9 MiB: a context of 76294 MiB leaves nothing for the tensors.
  CHECK(error_of(base(), {"options.cuda_context_mib=76294"}) ==
        "test.json: options.cuda_context_mib: 76294 MiB leaves no memory for tensors on the A100-SXM4-80GB (80 GB) "
        "(from --set options.cuda_context_mib=76294)");
}

TEST_CASE("gradients: fused accumulation into a bf16 buffer by default, or as named") {
  using G = trainsim::workload::GradAccumulation;
  using D = trainsim::workload::GradDtype;
  const auto plain = load_document(base(), "test.json", ".").plan;
  CHECK(plain.grad_accumulation == G::kFused);
  CHECK(plain.grad_dtype == D::kBf16);
  CHECK(load_document(base(), "test.json", ".", {"parallel.grad_accumulation=add"}).plan.grad_accumulation == G::kAdd);
  CHECK(load_document(base(), "test.json", ".", {"parallel.grad_accumulation=cast-add"}).plan.grad_accumulation ==
        G::kCastAdd);
  CHECK(load_document(base(), "test.json", ".", {"parallel.grad_dtype=fp32"}).plan.grad_dtype == D::kFp32);
  CHECK(error_of(base(), {"parallel.grad_dtype=fp16"}) ==
        "test.json: parallel.grad_dtype: fp16 gradients under bf16 precision; expected \"bf16\" or \"fp32\" (or set "
        "parallel.precision) (from --set parallel.grad_dtype=fp16)");
  // FP8 keeps BF16 weights: the message says both.
  CHECK(error_of(base(), {"parallel.grad_dtype=fp16", "parallel.precision=fp8", "cluster.node=dgx-h100"}) ==
        "test.json: parallel.grad_dtype: fp16 gradients under fp8 (BF16 weights) precision; expected \"bf16\" or "
        "\"fp32\" (or set parallel.precision) (from --set parallel.grad_dtype=fp16)");
  CHECK(error_of(base(), {"parallel.grad_accumulation=add-fp32"}) ==
        "test.json: parallel.grad_accumulation: expected \"fused\", \"add\" or \"cast-add\", got \"add-fp32\" "
        "(from --set parallel.grad_accumulation=add-fp32)");
  CHECK(error_of(base(), {"parallel.grad_dtype=fp8"}) ==
        "test.json: parallel.grad_dtype: expected \"bf16\", \"fp16\" or \"fp32\", got \"fp8\" "
        "(from --set parallel.grad_dtype=fp8)");
}

TEST_CASE("stages may hold different numbers of layers") {
  // 24 layers over 4 stages as 5 + 7 + 7 + 5.
  const Scenario s = load_document(base(), "test.json", ".", {"parallel.stage_layers=[5, 7, 7, 5]"});
  CHECK(s.plan.layers_of_stage(0, 24) == 5);
  CHECK(s.plan.layers_of_stage(1, 24) == 7);
  CHECK(error_of(base(), {"parallel.stage_layers=[6, 6, 6]"}) ==
        "test.json: parallel.stage_layers: expected pp x vp = 4 x 1 = 4 entries adding up to model.layers = 24, got 3 "
        "adding up to 18 "
        "(from --set parallel.stage_layers=[6, 6, 6])");
  CHECK(error_of(base(), {"parallel.stage_layers=[6, 0, 12, 6]"}) ==
        "test.json: parallel.stage_layers[1]: expected a positive integer (only the first and last stages may hold "
        "no layers), got 0 (from --set parallel.stage_layers=[6, 0, 12, 6])");
  CHECK(error_of(base(), {"parallel.stage_layers=[-1, 7, 9, 9]"}) ==
        "test.json: parallel.stage_layers[0]: expected a whole number of layers, 0 or more (the first and last stages "
        "hold the embedding and the output head), got -1 (from --set parallel.stage_layers=[-1, 7, 9, 9])");
}

TEST_CASE("the first and last stages may hold no layers: the embedding and the output head alone") {
  // 24 layers as 0 + 12 + 12 + 0: the first stage runs only the embedding, the
  // last only the output head.
  const Scenario s = load_document(base(), "test.json", ".", {"parallel.stage_layers=[0, 12, 12, 0]"});
  CHECK(s.plan.layers_of_stage(0, 24) == 0);
  CHECK(s.plan.layers_of_stage(3, 24) == 0);
}

TEST_CASE("stragglers and link faults are read, and bad entries named") {
  const Scenario s = load_document(base(), "test.json", ".",
                                   {R"(options.gpu_speed=[{"gpu": 3, "factor": 0.8}])",
                                    R"(options.links=[{"link": "gpu0->node0.nic0", "bandwidth_factor": 0.5}, {"link": "a<->b", "failed": true}])"});
  REQUIRE(s.options.gpu_speed.size() == 1);
  CHECK(s.options.gpu_speed[0].factor == 0.8);
  REQUIRE(s.options.links.size() == 2);
  CHECK(s.options.links[1].failed);
  CHECK(error_of(base(), {R"(options.gpu_speed=[{"gpu": 3, "speed": 0.8}])"}).rfind(
            "test.json: options.gpu_speed[0].speed: unknown key", 0) == 0);
  CHECK(error_of(base(), {R"(options.links=[{"link": "x"}])"}) ==
        "test.json: options.links[0]: expected \"bandwidth_factor\" (a degraded link) or \"failed\": true (from --set "
        "options.links=[{\"link\": \"x\"}])");
  // Failed and degraded at once: one would silently win.
  CHECK(error_of(base(), {R"(options.links=[{"link": "x", "failed": true, "bandwidth_factor": 0.5}])"}) ==
        "test.json: options.links[0].bandwidth_factor: a failed link carries nothing; expected \"bandwidth_factor\" (a "
        "degraded link) or \"failed\": true, not both (from --set options.links=[{\"link\": \"x\", \"failed\": "
        "true, \"bandwidth_factor\": 0.5}])");
  // Not failed, and degraded: a degraded link.
  CHECK(load_document(base(), "test.json", ".",
                      {R"(options.links=[{"link": "x", "failed": false, "bandwidth_factor": 0.5}])"})
            .options.links[0]
            .bandwidth_factor == 0.5);
}

TEST_CASE("parallel.twobp_concat is read only by the schedules that defer every W") {
  CHECK(error_of(base(), {"parallel.twobp_concat=true"}) ==
        "test.json: parallel.twobp_concat: only read by the 2bp and gpipe-2bp schedules (or a CSV schedule), which "
        "defer every micro-batch's W to the end; got schedule \"1f1b\" (from --set parallel.twobp_concat=true)");
  for (const char* schedule : {"2bp", "gpipe-2bp"}) {
    CHECK(load_document(base(), "test.json", ".",
                        {"parallel.twobp_concat=true", std::string("parallel.schedule=") + schedule})
              .plan.twobp_concat);
  }
}

TEST_CASE("comm_slowdown is read and bounded") {
  CHECK(load_document(base(), "test.json", ".", {"options.comm_slowdown=0.1"}).options.comm_slowdown == 0.1);
  CHECK(error_of(base(), {"options.comm_slowdown=-1"}) ==
        "test.json: options.comm_slowdown: expected a number >= 0, got -1 (from --set options.comm_slowdown=-1)");
}

TEST_CASE("a straggler must be a GPU of the cluster, listed once") {
  // The base cluster has 8 GPUs: ids 0 to 7.
  CHECK(error_of(base(), {R"(options.gpu_speed=[{"gpu": 8, "factor": 0.8}])"}) ==
        "test.json: options.gpu_speed[0].gpu: expected a GPU id from 0 to 7 (the cluster has 8 GPUs), got 8 (from --set "
        "options.gpu_speed=[{\"gpu\": 8, \"factor\": 0.8}])");
  // 2^31: past an int, and the message still says what would do.
  CHECK(error_of(base(), {R"(options.gpu_speed=[{"gpu": 2147483648, "factor": 0.8}])"})
            .rfind("test.json: options.gpu_speed[0].gpu: expected a GPU id from 0 to 7 (the cluster has 8 GPUs), got "
                   "2147483648 (from --set",
                   0) == 0);
  CHECK(error_of(base(), {R"(options.gpu_speed=[{"gpu": 3, "factor": 0.8}, {"gpu": 3, "factor": 0.5}])"}) ==
        "test.json: options.gpu_speed[1].gpu: GPU 3 is listed twice (first at options.gpu_speed[0]) (from --set "
        "options.gpu_speed=[{\"gpu\": 3, \"factor\": 0.8}, {\"gpu\": 3, \"factor\": 0.5}])");
}

TEST_CASE("virtual stages must divide the layers") {
  // 24 layers over pp 4 x vp 2 = 8 stages of 3 layers; vp 5 gives 20 stages, 24 % 20 != 0.
  const Scenario s = load_document(base(), "test.json", ".", {"parallel.vp=2"});
  CHECK(s.plan.stages() == 8);
  CHECK(s.plan.layers_of_stage(7, 24) == 3);
  CHECK(s.plan.rank_of_stage(5) == 1);
  CHECK(error_of(base(), {"parallel.vp=5"}) ==
        "test.json: parallel.vp: model.layers = 24 does not divide into pp x vp = 4 x 5 = 20 stages (or give "
        "parallel.stage_layers) (from --set parallel.vp=5)");
  CHECK(error_of(base(), {"parallel.vp=0"}).find("parallel.vp: expected") != std::string::npos);
}

TEST_CASE("the attention kernels are flash by default, flash-v1, cudnn or unfused on request, and nothing else") {
  CHECK(load_document(base(), "test.json", ".", {}).plan.attention == trainsim::workload::Attention::kFlash);
  CHECK(load_document(base(), "test.json", ".", {"parallel.attention=unfused"}).plan.attention ==
        trainsim::workload::Attention::kUnfused);
  CHECK(load_document(base(), "test.json", ".", {"parallel.attention=flash-v1"}).plan.attention ==
        trainsim::workload::Attention::kFlashV1);
  CHECK(load_document(base(), "test.json", ".", {"parallel.attention=cudnn", "cluster.node=dgx-h100"}).plan.attention ==
        trainsim::workload::Attention::kCudnn);
  CHECK(error_of(base(), {"parallel.attention=fused"}) ==
        "test.json: parallel.attention: expected \"flash\", \"flash-v1\", \"cudnn\" or \"unfused\", got \"fused\" (from --set "
        "parallel.attention=fused)");
}

TEST_CASE("flash-v1 and cudnn need the GPU's figures for their kernel, each under the peak") {
  // The A100 preset has them (attention_v1_tflops); the B200's has none.
  CHECK(load_document(base(), "test.json", ".", {"parallel.attention=flash-v1"}).cluster.node.gpu.attention_v1_tflops.size() ==
        6);
  CHECK(error_of(base(), {"parallel.attention=flash-v1", "cluster.node=dgx-b200"}) ==
        "test.json: parallel.attention: \"flash-v1\" times attention at the GPU's FlashAttention-1 figures, and the GPU "
        "B200-SXM-180GB (cluster.node.gpu) has none (attention_v1_tflops); expected \"flash\" or \"unfused\", or a GPU "
        "with them (from --set parallel.attention=flash-v1)");
  // cuDNN's figures: the H100's preset has them, the A100's not.
  CHECK(error_of(base(), {"parallel.attention=cudnn"}) ==
        "test.json: parallel.attention: \"cudnn\" times attention at the GPU's cuDNN attention figures, and the GPU "
        "A100-SXM4-80GB (cluster.node.gpu) has none (attention_cudnn_tflops); expected \"flash\" or \"unfused\", or a "
        "GPU with them (from --set parallel.attention=cudnn)");
  CHECK(error_of(base(), {"cluster.node.gpu.attention_cudnn_tflops=[[1024, 313]]"}) ==
        "test.json: cluster.node.gpu.attention_cudnn_tflops[0]: 313 TFLOP/s exceeds peak_tflops = 312 (from --set "
        "cluster.node.gpu.attention_cudnn_tflops=[[1024, 313]])");
  CHECK(error_of(base(), {"cluster.node.gpu.attention_v1_tflops=[[1024, 400]]"}) ==
        "test.json: cluster.node.gpu.attention_v1_tflops[0]: 400 TFLOP/s exceeds peak_tflops = 312 (from --set "
        "cluster.node.gpu.attention_v1_tflops=[[1024, 400]])");
}

TEST_CASE("ZeRO-3's unit keys: only with zero_stage 3, units dividing every stage") {
  // The base plan: 24 layers on pp 4 (6 a stage), tp 2 x dp 1.
  CHECK(error_of(base(), {"parallel.fsdp_unit_layers=2"}) ==
        "test.json: parallel.fsdp_unit_layers: applies only with parallel.zero_stage = 3 (parameters sharded unit by "
        "unit), got zero_stage = 0 (from --set parallel.fsdp_unit_layers=2)");
  CHECK(error_of(base(), {"parallel.reshard_after_forward=false"}).find("applies only with parallel.zero_stage = 3") !=
        std::string::npos);
  CHECK(error_of(base(), {"parallel.fsdp_copy_out=true"}) ==
        "test.json: parallel.fsdp_copy_out: applies only with parallel.zero_stage = 3 (parameters sharded unit by "
        "unit), got zero_stage = 0 (from --set parallel.fsdp_copy_out=true)");
  const std::vector<std::string> zero3 = {"parallel.zero_stage=3"};
  auto with = [&](const std::string& o) {
    std::vector<std::string> v = zero3;
    v.push_back(o);
    return error_of(base(), v);
  };
  CHECK(with("parallel.fsdp_unit_layers=3") == "");  // 6 = 2 x 3
  CHECK(error_of(base(), {"parallel.fsdp_max_reuse_distance=1e9", "parallel.recompute=full"}) ==
        "test.json: parallel.fsdp_max_reuse_distance: applies only with parallel.zero_stage = 3 (parameters sharded "
        "unit by unit), got zero_stage = 0 (from --set parallel.fsdp_max_reuse_distance=1e9)");
  CHECK(with("parallel.fsdp_max_reuse_distance=1e9") ==
        "test.json: parallel.fsdp_max_reuse_distance: decides what a layer's recomputation gives back before its "
        "backward; expected parallel.recompute = \"full\" (layers recomputed whole) (from --set "
        "parallel.fsdp_max_reuse_distance=1e9)");
  CHECK(with("parallel.fsdp_max_reuse_distance=-1").find("parallel.fsdp_max_reuse_distance: expected") !=
        std::string::npos);
  CHECK(load_document(base(), "test.json", ".",
                      {"parallel.zero_stage=3", "parallel.recompute=full", "parallel.fsdp_max_reuse_distance=0"})
            .plan.fsdp_max_reuse_distance == 0.0);  // DeepSpeed's 0: everything given back
  CHECK(!load_document(base(), "test.json", ".", zero3).plan.fsdp_max_reuse_distance);  // FSDP's way
  CHECK(with("parallel.fsdp_unit_layers=4") ==
        "test.json: parallel.fsdp_unit_layers: stage 0 holds 6 layers, which do not divide into units of 4; expected a "
        "divisor of every stage's layers (from --set parallel.fsdp_unit_layers=4)");
  CHECK(with("parallel.fsdp_prefetch=-1") ==
        "test.json: parallel.fsdp_prefetch: expected a whole number of units from 0 to 64, got -1 (from --set "
        "parallel.fsdp_prefetch=-1)");
  const Scenario s = load_document(base(), "test.json", ".", {"parallel.zero_stage=3", "parallel.fsdp_prefetch=2",
                                                              "parallel.reshard_after_forward=false"});
  CHECK(s.plan.fsdp_prefetch == 2);
  CHECK(!s.plan.reshard_after_forward);
  CHECK(s.plan.fsdp_unit_layers == 1);  // FSDP2's default: one block a unit
  CHECK(!s.plan.fsdp_copy_out);  // the gathered buffer used in place unless asked
  CHECK(error_of(base(), {"parallel.zero_stage=3", "parallel.fsdp_copy_out=1"}).find(
            "parallel.fsdp_copy_out: expected") != std::string::npos);
  CHECK(!s.plan.fsdp_separate_reduce_scatter_group);  // one group for gathers and scatters, every framework's default
  CHECK(load_document(base(), "test.json", ".", {"parallel.zero_stage=3", "parallel.fsdp_reduce_scatter_group=separate"})
            .plan.fsdp_separate_reduce_scatter_group);
  CHECK(with("parallel.fsdp_reduce_scatter_group=own") ==
        "test.json: parallel.fsdp_reduce_scatter_group: expected \"shared\" or \"separate\", got \"own\" (from --set "
        "parallel.fsdp_reduce_scatter_group=own)");
  CHECK(error_of(base(), {"parallel.fsdp_reduce_scatter_group=shared"}) ==
        "test.json: parallel.fsdp_reduce_scatter_group: applies only with parallel.zero_stage = 3 (parameters sharded "
        "unit by unit), got zero_stage = 0 (from --set parallel.fsdp_reduce_scatter_group=shared)");
  // PyTorch FSDP's FP32 shards against DeepSpeed's 16-bit ones (the default).
  CHECK(!s.plan.fsdp_fp32_shards);
  CHECK(load_document(base(), "test.json", ".", {"parallel.zero_stage=3", "parallel.fsdp_param_shards=fp32"})
            .plan.fsdp_fp32_shards);
  CHECK(with("parallel.fsdp_param_shards=bf16") ==
        "test.json: parallel.fsdp_param_shards: expected \"16-bit\" or \"fp32\", got \"bf16\" (from --set "
        "parallel.fsdp_param_shards=bf16)");
  CHECK(error_of(base(), {"parallel.fsdp_param_shards=fp32"}).find(
            "parallel.fsdp_param_shards: applies only with parallel.zero_stage = 3") != std::string::npos);
  CHECK(error_of(base(), {"parallel.zero_stage=3", "parallel.fsdp_param_shards=fp32",
                          "parallel.fsdp_persistence_threshold=100000"}).find(
            "parallel.fsdp_param_shards: \"fp32\" is PyTorch FSDP's, which shards every tensor") != std::string::npos);
  CHECK(error_of(base(), {"parallel.zero_stage=3", "parallel.fsdp_param_shards=fp32", "parallel.offload=optimizer"})
            .find("parallel.fsdp_param_shards: \"fp32\" with offloading is not modelled") != std::string::npos);
}

TEST_CASE("parallel.fsdp_grad_sync: each-backward or last-backward, only with zero_stage 3") {
  CHECK(error_of(base(), {"parallel.fsdp_grad_sync=last-backward"}) ==
        "test.json: parallel.fsdp_grad_sync: applies only with parallel.zero_stage = 3 (parameters sharded unit by "
        "unit), got zero_stage = 0 (from --set parallel.fsdp_grad_sync=last-backward)");
  CHECK(error_of(base(), {"parallel.zero_stage=3", "parallel.fsdp_grad_sync=last"}) ==
        "test.json: parallel.fsdp_grad_sync: expected \"each-backward\" or \"last-backward\", got \"last\" (from "
        "--set parallel.fsdp_grad_sync=last)");
  CHECK(!load_document(base(), "test.json", ".", {"parallel.zero_stage=3"}).plan.grad_sync_after_last_backward);
  CHECK(load_document(base(), "test.json", ".", {"parallel.zero_stage=3", "parallel.fsdp_grad_sync=last-backward"})
            .plan.grad_sync_after_last_backward);
}

}  // namespace config_test
