// Reading calibration profiles: the committed synthetic sample, and each kind
// of bad profile with the message that names the file and the JSON path.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "config/calibration_load.hpp"
#include "config/load.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace config_calibration_load_test {

using namespace trainsim;
using nlohmann::json;

namespace {

const std::string kSample = std::string(TRAINSIM_SOURCE_DIR) + "/tests/calibration/sample-profile.json";

json sample() { return config::parse_json(config::read_text(kSample, "test"), kSample); }

// The message a profile fails with ("" if it loads).
std::string error_of(const json& doc) {
  try {
    config::read_calibration_profile(doc, "p.json");
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the sample profile loads with every section") {
  const auto p = config::load_calibration_profile(kSample);
  CHECK(p->header.gpu_name == "NVIDIA A100-SXM4-80GB");
  CHECK(p->header.note.find("SYNTHETIC") != std::string::npos);
  // The sample's grid is 100 + 10 i_m + 20 i_n + 40 i_k over axes 256, 1024, 4096.
  REQUIRE(p->gemm_bf16.m.size() == 3);
  CHECK(p->gemm_bf16.at(2, 1, 0) == 140);
  CHECK(p->gemm_bf16.at(0, 0, 2) == 180);
  CHECK(p->gemm_fp16.has_value());
  CHECK_FALSE(p->gemm_fp8.has_value());
  CHECK(p->model_gemms.size() == 1);
  CHECK(p->attention.size() == 1);
  CHECK(p->hbm_tb_per_s() == 1.0);  // the copy at its largest size, 4 GiB
  CHECK(p->launch_us.median == 6.0);
  CHECK(p->p2p_skipped.empty());
  CHECK(p->p2p_latency_us.median == 10.0);
  CHECK(p->nccl_ranks == 8);
  CHECK(p->nccl.size() == 3);
  CHECK(p->nccl_bus_gb_per_s() == doctest::Approx(99.536497).epsilon(1e-9).scale(0));
}

TEST_CASE("a profile of another schema version is refused") {
  json doc = sample();
  doc["schema_version"] = 2;
  CHECK(error_of(doc) == "p.json: schema_version: this trainsim reads calibration profiles of schema version 1, got 2");
  doc.erase("schema_version");
  CHECK(error_of(doc) == "p.json: schema_version: is missing (expected an integer)");
}

TEST_CASE("a missing field is named by its path") {
  json doc = sample();
  doc["header"].erase("gpu_name");
  CHECK(error_of(doc) == "p.json: header.gpu_name: is missing (expected a string)");
  doc = sample();
  doc["launch"].erase("graph_us");
  CHECK(error_of(doc) == "p.json: launch.graph_us: is missing (expected an object {\"median\", \"min\", \"max\"})");
  doc = sample();
  doc["gemm"].erase("bf16");
  CHECK(error_of(doc) == "p.json: gemm.bf16: is missing (expected the BF16 grid)");
  doc = sample();
  doc["nccl"].erase("reduce_scatter");
  CHECK(error_of(doc) == "p.json: nccl.reduce_scatter: is missing (expected a non-empty list)");
}

TEST_CASE("a grid with a hole is refused") {
  json doc = sample();
  doc["gemm"]["bf16"]["tflops"][1][2].erase(0);
  CHECK(error_of(doc) == "p.json: gemm.bf16.tflops[1][2]: expected a list of 3 entries, one per value of k, got 2 entries");
  doc = sample();
  doc["gemm"]["bf16"]["tflops_max"].erase(2);
  CHECK(error_of(doc) == "p.json: gemm.bf16.tflops_max: expected a list of 3 entries, one per value of m, got 2 entries");
  doc = sample();
  doc["gemm"]["fp16"]["n"].push_back(16384);  // an axis longer than its table
  CHECK(error_of(doc) == "p.json: gemm.fp16.tflops[0]: expected a list of 4 entries, one per value of n, got 3 entries");
}

TEST_CASE("NaN and negative timings are refused") {
  json doc = sample();
  doc["gemm"]["bf16"]["tflops"][2][1][0] = -1;
  CHECK(error_of(doc) == "p.json: gemm.bf16.tflops[2][1][0]: expected a positive number, got -1");
  doc = sample();
  // NaN has no JSON form: a writer puts null (nlohmann's dump does).
  doc["gemm"]["bf16"]["tflops"][0][0][0] = std::numeric_limits<double>::quiet_NaN();
  CHECK(error_of(doc) == "p.json: gemm.bf16.tflops[0][0][0]: expected a positive number, got null");
  doc = sample();
  doc["nccl"]["all_reduce"][1]["time_us"]["median"] = -5;
  CHECK(error_of(doc) == "p.json: nccl.all_reduce[1].time_us.median: expected a positive number, got -5");
  doc = sample();
  doc["launch"]["plain_us"]["min"] = "NaN";
  CHECK(error_of(doc) == "p.json: launch.plain_us.min: expected a positive number, got \"NaN\"");
  doc = sample();
  doc["hbm"]["copy"][0]["tb_per_s"]["max"] = 1.0;  // below its median of 2.5
  CHECK(error_of(doc) == "p.json: hbm.copy[0].tb_per_s: expected min <= median <= max, got 2.375 / 2.5 / 1");
}

TEST_CASE("other bad profiles") {
  json doc = sample();
  doc["hbm"]["copyy"] = doc["hbm"]["copy"];
  CHECK(error_of(doc) == "p.json: hbm.copyy: unknown key (did you mean \"copy\"?); known keys here: copy, triad");
  doc = sample();
  doc["gemm"]["bf16"]["k"] = {256, 4096, 1024};
  CHECK(error_of(doc) == "p.json: gemm.bf16.k[2]: sizes must ascend");
  doc = sample();
  doc["nccl"] = {{"measured", false}, {"reason", "one GPU visible"}};
  const auto p = config::read_calibration_profile(doc, "p.json");
  CHECK(p->nccl_skipped == "one GPU visible");
  CHECK(p->nccl.empty());
  CHECK_THROWS_WITH_AS(config::load_calibration_profile("no-such-profile.json"),
                       "no-such-profile.json: cannot open calibration profile: no such file", config::ConfigError);
}

TEST_CASE("cluster.calibration attaches the profile and its measured figures to the node") {
  const std::string example = std::string(TRAINSIM_SOURCE_DIR) + "/configs/examples/gpt-1.7b-8xa100.json";
  const config::Scenario plain = config::load_file(example);
  CHECK(plain.cluster.node.gpu.calibration == nullptr);
  const config::Scenario sc = config::load_file(example, {"cluster.calibration=" + kSample});
  const hw::NodeSpec& n = sc.cluster.node;
  REQUIRE(n.gpu.calibration != nullptr);
  CHECK(n.gpu.hbm_achievable_tb_per_s == 1.0);  // was the preset's 1.62
  CHECK(n.gpu.kernel_overhead_us == 6.0);       // was 3.0
  CHECK(n.nvlink_gb_per_s == 150.0);            // peer to peer at 1 GiB
  CHECK(n.nvlink_latency_us == 10.0);
  CHECK(n.nvlink_sendrecv_gb_per_s == 40.0);    // NCCL send/recv at 1 GiB; was the preset's 46.1
  // NCCL ran on 8 GPUs, as many as a DGX A100 has: its all-reduce sets the bus bandwidth.
  CHECK(n.nvlink_bus_gb_per_s == doctest::Approx(99.536497).epsilon(1e-9).scale(0));
  // The preset's peak and capacity stay: calibration measures rates, not the spec.
  CHECK(n.gpu.peak_tflops == plain.cluster.node.gpu.peak_tflops);
  CHECK(n.gpu.memory_gb == plain.cluster.node.gpu.memory_gb);
}

TEST_CASE("NCCL's send/recv in a profile sets the node's send/recv rate, at most the peer copy's") {
  const std::string example = std::string(TRAINSIM_SOURCE_DIR) + "/configs/examples/gpt-1.7b-8xa100.json";
  const hw::NodeSpec preset = config::load_file(example).cluster.node;  // dgx-a100: 46.1 GB/s
  json doc = sample();
  // Without send_recv (an optional key; older profiles lack it) the preset's rate stays.
  doc["nccl"].erase("send_recv");
  CHECK(config::calibrated(preset, config::read_calibration_profile(doc, "p.json")).nvlink_sendrecv_gb_per_s == 46.1);
  // Measured: the largest size's median, 60 GB/s.
  doc["nccl"]["send_recv"] = {{{"bytes", 1048576}, {"gb_per_s", {{"median", 20}, {"min", 19}, {"max", 21}}}},
                              {{"bytes", 1073741824}, {"gb_per_s", {{"median", 60}, {"min", 57}, {"max", 63}}}}};
  CHECK(config::calibrated(preset, config::read_calibration_profile(doc, "p.json")).nvlink_sendrecv_gb_per_s == 60);
  // Above the sample's peer copy (150 GB/s at 1 GiB, which becomes nvlink_gb_per_s): held to it.
  doc["nccl"]["send_recv"][1]["gb_per_s"] = {{"median", 200}, {"min", 190}, {"max", 210}};
  CHECK(config::calibrated(preset, config::read_calibration_profile(doc, "p.json")).nvlink_sendrecv_gb_per_s == 150);
  // Without send_recv, a measured peer copy below the preset's rate holds it too: 30 GB/s.
  doc["nccl"].erase("send_recv");
  doc["p2p"]["points"][1]["gb_per_s"] = {{"median", 30}, {"min", 29}, {"max", 31}};
  CHECK(config::calibrated(preset, config::read_calibration_profile(doc, "p.json")).nvlink_sendrecv_gb_per_s == 30);
  doc = sample();
  doc["nccl"]["send_recv"] = {{{"bytes", 1048576}, {"gb_per_s", {{"median", 20}, {"min", 19}, {"max", 21}}}},
                              {{"bytes", 1073741824}, {"gb_per_s", {{"median", 60}, {"min", 57}, {"max", 63}}}}};
  doc["nccl"]["send_recv"][1]["bytes"] = 1024;
  CHECK(error_of(doc) == "p.json: nccl.send_recv[1].bytes: sizes must ascend");
}

TEST_CASE("cluster.calibration errors name the key or the profile's path") {
  const std::string example = std::string(TRAINSIM_SOURCE_DIR) + "/configs/examples/gpt-1.7b-8xa100.json";
  try {
    config::load_file(example, {"cluster.calibration=missing.json"});
    FAIL("expected an error");
  } catch (const config::ConfigError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("gpt-1.7b-8xa100.json: cluster.calibration: no such file: ") != std::string::npos);
    CHECK(msg.find("configs/examples/missing.json (from --set cluster.calibration=missing.json)") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(config::load_file(example, {"cluster.calibration=3"}),
                       doctest::Contains("cluster.calibration: expected a string, got 3"), config::ConfigError);
}

TEST_CASE("a profile of another GPU is refused, naming the key, the profile's GPU and the cluster's") {
  // The sample was measured (made up) on "NVIDIA A100-SXM4-80GB"; the Llama 2
  // example runs on dgx-h200 nodes, whose GPU preset is H200-SXM-141GB.
  const std::string h200 = std::string(TRAINSIM_SOURCE_DIR) + "/configs/examples/llama2-70b-64xh200.json";
  try {
    config::load_file(h200, {"cluster.calibration=" + kSample});
    FAIL("expected an error");
  } catch (const config::ConfigError& e) {
    CHECK(std::string(e.what()) ==
          h200 + ": cluster.calibration: the profile " + kSample +
              " was measured on NVIDIA A100-SXM4-80GB (header.gpu_name), but the cluster's GPU is H200-SXM-141GB "
              "(cluster.node.gpu.name); expected a profile of that GPU (if it is the same chip under another name, "
              "set cluster.node.gpu.name to \"NVIDIA A100-SXM4-80GB\") (from --set cluster.calibration=" +
              kSample + ")");
  }
  // The same chip under another name: said so, and accepted.
  const config::Scenario renamed =
      config::load_file(h200, {"cluster.node.gpu.name=NVIDIA A100-SXM4-80GB", "cluster.calibration=" + kSample});
  CHECK(renamed.cluster.node.gpu.calibration != nullptr);
  // A100 nodes of another preset (jean-zay-a100) take the A100 profile.
  const std::string a100 = std::string(TRAINSIM_SOURCE_DIR) + "/configs/examples/gpt-1.7b-8xa100.json";
  CHECK(config::load_file(a100, {"cluster.node=jean-zay-a100", "cluster.calibration=" + kSample})
            .cluster.node.gpu.calibration != nullptr);
}

}  // namespace config_calibration_load_test
