// NVLink domains over several nodes (cluster.node.nvlink_domain_nodes), the
// NICs a network preset names, and the Blackwell and H800 presets.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "config/load.hpp"
#include "hw/calibration_profile.hpp"
#include "hw/collective.hpp"
#include "load_error.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace config_nvlink_domain_test {

using namespace trainsim;
using namespace trainsim::config;
using nlohmann::json;

namespace {

// GPT 1.7B on two GB200 NVL72 racks (36 trays of 4 GPUs): tp 8 x dp 18.
json nvl72() {
  return json::parse(R"({
    "cluster": {"node": "gb200-nvl72", "nodes": 36, "network": "cx7-400g-rail"},
    "model": "gpt-1.7b",
    "parallel": {"tp": 8, "pp": 1, "dp": 18, "microbatch_size": 1, "global_batch": 72}
  })");
}

Scenario load(const json& doc, const std::vector<std::string>& overrides = {}) {
  return load_document(doc, "test.json", ".", overrides);
}

}  // namespace

TEST_CASE("an NVLink domain of 18 trays is one node of 72 GPUs, its NICs and hosts together") {
  const Scenario s = load(nvl72());
  const hw::ClusterSpec& c = s.cluster;
  // 36 trays / 18 a domain = 2 domains; 4 GPUs x 18 = 72 a domain, one NIC each.
  CHECK(c.nodes == 2);
  CHECK(c.node.gpus_per_node == 72);
  CHECK(c.node.nics_per_node == 72);
  CHECK(c.node.nodes_per_nvlink_domain == 18);
  CHECK(c.gpus() == 144);
  // Host memory and bandwidth add up over the 18 trays: 960 GB x 18, 1.024 TB/s x 18.
  CHECK(c.node.host_memory_gb == doctest::Approx(17280.0));
  CHECK(c.node.host_memory_tb_per_s == doctest::Approx(18.432));
  // And the cores: 2 Grace CPUs of 72 a tray, 144 x 18 = 2,592 a domain, as NVIDIA counts an NVL72's.
  CHECK(c.node.host_cores == 2592);
  // The rail preset's 144 nodes a group are 144 / 18 = 8 domains.
  CHECK(c.network.nodes_per_leaf == 8);
  CHECK(c.node_of(71) == 0);
  CHECK(c.node_of(72) == 1);
}

TEST_CASE("a tensor group across two trays of a domain runs on NVLink, as inside one tray") {
  const Scenario s = load(nvl72());
  // GPUs 0-7 sit on trays 0 and 1 of the first rack: one node after folding.
  const hw::CollectiveGroup across_trays = hw::group_of(s.cluster, {0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(across_trays.nodes == 1);
  CHECK(across_trays.ranks_per_node == 8);
  // Without the domain the same GPUs span two 4-GPU nodes and cross the NICs.
  const Scenario trays = load(nvl72(), {"cluster.node.nvlink_domain_nodes=1"});
  const hw::CollectiveGroup split = hw::group_of(trays.cluster, {0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(split.nodes == 2);
  const double bytes = 256.0 * (1 << 20);
  const double on_nvlink = hw::collective_time(hw::CollectiveKind::kAllReduce, bytes, across_trays, s.cluster.node,
                                               hw::CollectiveAlgorithm::kRing)
                               .to_seconds();
  const double over_nics = hw::collective_time(hw::CollectiveKind::kAllReduce, bytes, split, trays.cluster.node,
                                               hw::CollectiveAlgorithm::kRing)
                               .to_seconds();
  // Ring all-reduce of 256 MiB over 8 ranks: 2 x 7/8 x 268.4 MB = 469.8 MB of bus
  // traffic; at NVLink 5's 722 GB/s that is 0.65 ms. Split over two trays, the
  // rings cross between them through each tray's 4 NICs at 47.5 GB/s, 190 GB/s
  // together: 2.47 ms. Latencies add microseconds to either.
  CHECK(on_nvlink == doctest::Approx(469.8e6 / 722e9).epsilon(0.1));
  CHECK(over_nics == doctest::Approx(469.8e6 / 190e9).epsilon(0.1));
}

TEST_CASE("NVLink domains: nodes that do not fill them, leaves that split them, custom networks") {
  CHECK(testing::load_error(nvl72(), {"cluster.nodes=20"}) ==
        "test.json: cluster.nodes: 20 nodes do not make whole NVLink domains of 18 nodes "
        "(cluster.node.nvlink_domain_nodes); expected a multiple of 18, or cluster.nvlink_domain_nodes: the nodes the "
        "job takes of each domain (a divisor of cluster.nodes, at most 18) (from --set cluster.nodes=20)");
  CHECK(testing::load_error(nvl72(), {"cluster.network.nodes_per_leaf=32"}) ==
        "test.json: cluster.network.nodes_per_leaf: 32 nodes per leaf split the NVLink domains of 18 nodes "
        "(cluster.node.nvlink_domain_nodes); expected a multiple of 18 (from --set cluster.network.nodes_per_leaf=32)");
  CHECK(testing::load_error(nvl72(), {"cluster.node.nvlink_domain_nodes=0"}).find(
            "cluster.node.nvlink_domain_nodes") != std::string::npos);
}

TEST_CASE("a job on part of each NVLink domain: 16 of a rack's 18 trays (a Slurm segment)") {
  // 64 GPUs on 16 trays of one rack: cluster.nvlink_domain_nodes = 16 folds
  // them into one domain of 16 x 4 = 64 GPUs, 64 NICs, 16 x 960 GB of host memory.
  const Scenario s = load(nvl72(), {"cluster.nodes=16", "cluster.nvlink_domain_nodes=16", "parallel.dp=8",
                                    "parallel.global_batch=64"});
  CHECK(s.cluster.nodes == 1);
  CHECK(s.cluster.node.gpus_per_node == 64);
  CHECK(s.cluster.node.nics_per_node == 64);
  CHECK(s.cluster.node.nodes_per_nvlink_domain == 16);
  CHECK(s.cluster.node.host_memory_gb == doctest::Approx(15360.0));
  // 256 GPUs as 4 racks of 16 trays: 64 trays / 16 = 4 domains; the rail
  // preset's 144 nodes a group are 8 whole racks of 18, so 8 domains a leaf
  // whatever share of each rack the job takes.
  const Scenario racks = load(nvl72(), {"cluster.nodes=64", "cluster.nvlink_domain_nodes=16", "parallel.dp=32",
                                        "parallel.global_batch=256"});
  CHECK(racks.cluster.nodes == 4);
  CHECK(racks.cluster.network.nodes_per_leaf == 8);
  // A share that does not divide the leaf (17 of 18 trays) still leaves the racks whole.
  CHECK(load(nvl72(), {"cluster.nodes=68", "cluster.nvlink_domain_nodes=17", "parallel.dp=34",
                       "parallel.global_batch=272"})
            .cluster.network.nodes_per_leaf == 8);
  // A segment is at most the rack; on a node without domains it can only be 1.
  CHECK(testing::load_error(nvl72(), {"cluster.nvlink_domain_nodes=20"}) ==
        "test.json: cluster.nvlink_domain_nodes: 20 nodes a domain, but the node's NVLink domain holds 18 "
        "(cluster.node.nvlink_domain_nodes); expected at most 18 (from --set cluster.nvlink_domain_nodes=20)");
  json dgx = nvl72();
  dgx["cluster"] = json::parse(R"({"node": "dgx-h100", "nodes": 18, "nvlink_domain_nodes": 2})");
  CHECK(testing::load_error(dgx) ==
        "test.json: cluster.nvlink_domain_nodes: 2 nodes a domain, but the node's NVLink domain holds 1 "
        "(cluster.node.nvlink_domain_nodes); expected at most 1");
  // A segment must divide the job's nodes, and the message names the segment's key.
  CHECK(testing::load_error(nvl72(), {"cluster.nodes=36", "cluster.nvlink_domain_nodes=16"}) ==
        "test.json: cluster.nodes: 36 nodes do not make whole NVLink domains of 16 nodes (cluster.nvlink_domain_nodes); "
        "expected a multiple of 16 (from --set cluster.nodes=36)");
}

TEST_CASE("a network preset's NICs replace the node's; one figure without the other is refused") {
  // cx8-800g-rail: ConnectX-8, 800 Gb/s, 95 GB/s through NCCL (derived in the preset).
  const Scenario s = load(nvl72(), {"cluster.network=cx8-800g-rail"});
  CHECK(s.cluster.node.nic_gbit_per_s == 800.0);
  CHECK(s.cluster.node.nic_bus_gb_per_s == 95.0);
  json doc = nvl72();
  doc["cluster"]["network"] = json::parse(R"({"kind": "rail", "nodes_per_leaf": 18, "nic_gbit_per_s": 800})");
  CHECK(testing::load_error(doc) ==
        "test.json: cluster.network.nic_bus_gb_per_s: missing: a network that names its NICs gives both "
        "nic_gbit_per_s (line rate) and nic_bus_gb_per_s (what NCCL reaches through one)");
  doc["cluster"]["network"]["nic_bus_gb_per_s"] = 120;
  CHECK(testing::load_error(doc) ==
        "test.json: cluster.network.nic_bus_gb_per_s: 120 GB/s is above the line rate nic_gbit_per_s = 800 Gb/s "
        "(100 GB/s)");
}

TEST_CASE("Blackwell and H800 presets load with their spec figures") {
  json doc = nvl72();
  doc["cluster"] = json::parse(R"({"node": "dgx-b200", "nodes": 18})");
  const Scenario b200 = load(doc);
  CHECK(b200.cluster.node.gpu.name == "B200-SXM-180GB");
  CHECK(b200.cluster.node.gpu.peak_tflops == 2250.0);
  CHECK(b200.cluster.node.gpu.peak_fp8_tflops == 4500.0);
  CHECK(b200.cluster.node.gpu.peak_fp4_tflops == 9000.0);
  CHECK(b200.cluster.node.nvlink_gb_per_s == 900.0);
  doc["cluster"] = json::parse(R"({"node": "hgx-h800", "nodes": 18})");
  const Scenario h800 = load(doc);
  // H100 compute, NVLink cut to 200 GB/s a direction.
  CHECK(h800.cluster.node.gpu.peak_tflops == 989.5);
  CHECK(h800.cluster.node.nvlink_gb_per_s == 200.0);
  // A lower-precision peak below the BF16 one is a typo.
  CHECK(testing::load_error(doc, {"cluster.node.gpu.peak_fp8_tflops=500"}).find(
            "cluster.node.gpu.peak_fp8_tflops") != std::string::npos);
}

TEST_CASE("a GPU's shape grid: the Hopper and Blackwell presets carry XLA's; a malformed one is refused") {
  json doc = nvl72();
  doc["cluster"] = json::parse(R"({"node": "dgx-b200", "nodes": 18})");
  const Scenario b200 = load(doc);
  REQUIRE(b200.cluster.node.gpu.gemm_grid != nullptr);
  // 5 sizes (256..4096) on each of m, n and k.
  CHECK(b200.cluster.node.gpu.gemm_grid->tflops.size() == 125);
  json a100 = nvl72();
  a100["cluster"] = json::parse(R"({"node": "dgx-a100", "nodes": 18})");
  CHECK(load(a100).cluster.node.gpu.gemm_grid == nullptr);  // no published sweep of the A100 by shape
  CHECK(testing::load_error(doc, {R"(cluster.node.gpu.gemm_grid={"m": [256], "n": [256], "k": [256, 512], "tflops": [1]})"}) ==
        "test.json: cluster.node.gpu.gemm_grid.tflops: expected |m| x |n| x |k| = 2 values, got 1 (from --set "
        "cluster.node.gpu.gemm_grid={\"m\": [256], \"n\": [256], \"k\": [256, 512], \"tflops\": [1]})");
  CHECK(testing::load_error(doc, {R"(cluster.node.gpu.gemm_grid={"m": [512, 256], "n": [1], "k": [1], "tflops": [1, 1]})"})
            .find("gemm_grid.m[1]: expected sizes in ascending order") != std::string::npos);
  // FP8 by shape: the B200's is XLA's own FP8 sweep, on its 5 sizes; the
  // Hopper presets' on XLA's 5 sizes and 8192; only beside an FP8 curve,
  // under the FP8 peak.
  REQUIRE(b200.cluster.node.gpu.gemm_fp8_grid != nullptr);
  CHECK(b200.cluster.node.gpu.gemm_fp8_grid->tflops.size() == 125);
  doc["cluster"] = json::parse(R"({"node": "dgx-h100", "nodes": 18})");
  REQUIRE(load(doc).cluster.node.gpu.gemm_fp8_grid != nullptr);
  CHECK(load(doc).cluster.node.gpu.gemm_fp8_grid->tflops.size() == 216);
  CHECK(testing::load_error(doc, {R"(cluster.node.gpu.gemm_fp8_grid={"m": [256], "n": [256], "k": [256], "tflops": [2500]})"})
            .find("gemm_fp8_grid.tflops[0]: 2500 TFLOP/s exceeds peak_fp8_tflops = 1979") != std::string::npos);
  CHECK(testing::load_error(a100, {R"(cluster.node.gpu.gemm_fp8_grid={"m": [256], "n": [256], "k": [256], "tflops": [1]})"})
            .find("cluster.node.gpu.gemm_fp8_grid: needs gemm_fp8_tflops and gemm_fp8_max_tflops") != std::string::npos);
}

}  // namespace config_nvlink_domain_test
