#include <doctest/doctest.h>

#include <string>

#include "config/load.hpp"
#include "load_error.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace config_custom_network_test {

using namespace trainsim::config;
using nlohmann::json;

namespace {

// 4 DGX A100 nodes (8 NICs each), two per leaf, the leaves on a spine;
// stage 0 on nodes 0-1 (leaf 0), stage 1 on nodes 2-3 (leaf 1).
json two_leaves() {
  return json::parse(R"({
    "cluster": {"node": "dgx-a100", "nodes": 4, "network": {
      "kind": "custom",
      "switches": [{"name": "leaf{n/2}"}, {"name": "spine"}],
      "links": [
        {"from": "node{n}.nic{i}", "to": "leaf{n/2}", "gbit_per_s": 200},
        {"from": "leaf{n/2}", "to": "spine", "gbit_per_s": 400, "latency_us": 0.5}
      ]}},
    "model": "gpt-1.7b",
    "parallel": {"tp": 8, "pp": 2, "dp": 2, "microbatch_size": 4, "global_batch": 64}
  })");
}

std::string error_of(const json& doc, const std::vector<std::string>& overrides = {}) {
  return testing::load_error(doc, overrides);
}

json& network(json& doc) { return doc["cluster"]["network"]; }

}  // namespace

TEST_CASE("a custom network is read with its placeholders filled") {
  const Scenario s = load_document(two_leaves(), "test.json", ".");
  const auto& net = s.cluster.network;
  CHECK(net.kind == trainsim::hw::NetworkKind::kCustom);
  CHECK(net.custom.switches == std::vector<std::string>{"leaf0", "leaf1", "spine"});
  // 4 nodes x 8 NICs to their leaves, then one up-link per leaf.
  REQUIRE(net.custom.links.size() == 34);
  CHECK(net.custom.links[9].from == "node1.nic1");
  CHECK(net.custom.links[9].to == "leaf0");
  CHECK(net.custom.links[9].gbit_per_s == 200);
  CHECK(net.custom.links[9].latency_us == 0);  // latency_us defaults to 0
  CHECK(net.custom.links[17].to == "leaf1");
  CHECK(net.custom.links[33].from == "leaf1");
  CHECK(net.custom.links[33].to == "spine");
  CHECK(net.custom.links[33].latency_us == 0.5);
}

TEST_CASE("a custom link needs a positive bandwidth and a latency >= 0") {
  json doc = two_leaves();
  network(doc)["links"][1]["gbit_per_s"] = -1;
  CHECK(error_of(doc) == "test.json: cluster.network.links[1].gbit_per_s: expected a positive number, got -1");
  network(doc)["links"][1]["gbit_per_s"] = 0;
  CHECK(error_of(doc) == "test.json: cluster.network.links[1].gbit_per_s: expected a positive number, got 0");
  network(doc)["links"][1].erase("gbit_per_s");
  CHECK(error_of(doc) == "test.json: cluster.network.links[1].gbit_per_s: is missing (expected a positive number)");
  doc = two_leaves();
  network(doc)["links"][1]["latency_us"] = -0.5;
  CHECK(error_of(doc) == "test.json: cluster.network.links[1].latency_us: expected a number >= 0, got -0.5");
  doc = two_leaves();
  network(doc)["links"][0]["gbits_per_s"] = 100;
  CHECK(error_of(doc) == "test.json: cluster.network.links[0].gbits_per_s: unknown key (did you mean "
                         "\"gbit_per_s\"?); known keys here: from, to, gbit_per_s, latency_us");
}

TEST_CASE("a custom link naming no vertex is refused with the closest name") {
  json doc = two_leaves();
  network(doc)["links"][1]["to"] = "spin";
  CHECK(error_of(doc) == "test.json: cluster.network.links[1].to: no switch or node vertex named \"spin\" (did you "
                         "mean \"spine\"?); switches: leaf0, leaf1, spine; node vertices: gpu0 to gpu31, "
                         "node0.nvswitch to node3.nvswitch, node0.nic0 to node3.nic7");
  // A placeholder that runs past the switches: nodes 2 and 3 give leaf2.
  doc = two_leaves();
  network(doc)["links"][0]["to"] = "leaf{n}";
  CHECK(error_of(doc).rfind("test.json: cluster.network.links[0].to: no switch or node vertex named \"leaf2\" "
                            "(\"leaf{n}\" with n = 2) (did you mean \"leaf0\"?)",
                            0) == 0);
  doc = two_leaves();
  network(doc)["links"][0]["from"] = "node{n}.nic8";
  CHECK(error_of(doc).rfind("test.json: cluster.network.links[0].from: no switch or node vertex named \"node0.nic8\"",
                            0) == 0);
  doc = two_leaves();
  network(doc)["links"][0]["to"] = "leaf{x}";
  CHECK(error_of(doc) == "test.json: cluster.network.links[0]: unknown placeholder \"{x}\" in \"leaf{x}\" "
                         "(placeholders are {n} for a node and {i} for a NIC index, optionally {n/2} or {i%4})");
}

TEST_CASE("switches have names of their own, each listed once; cables are listed once") {
  json doc = two_leaves();
  network(doc)["switches"].push_back({{"name", "spine"}});
  CHECK(error_of(doc) == "test.json: cluster.network.switches[2].name: switch \"spine\" is already listed at "
                         "cluster.network.switches[1].name");
  doc = two_leaves();
  network(doc)["switches"].push_back({{"name", "gpu3"}});
  CHECK(error_of(doc) == "test.json: cluster.network.switches[2].name: \"gpu3\" is the name of a node's vertex; a "
                         "switch needs a name of its own");
  doc = two_leaves();
  network(doc)["links"].push_back({{"from", "spine"}, {"to", "leaf0"}, {"gbit_per_s", 100}});
  CHECK(error_of(doc) == "test.json: cluster.network.links[2]: spine and leaf0 are already joined by "
                         "cluster.network.links[1] (give one link with the bandwidth of both)");
  doc = two_leaves();
  network(doc)["links"].push_back({{"from", "spine"}, {"to", "spine"}, {"gbit_per_s", 100}});
  CHECK(error_of(doc) == "test.json: cluster.network.links[2]: a link from \"spine\" to itself");
}

TEST_CASE("custom keys and built-in keys do not mix") {
  json doc = two_leaves();
  network(doc)["oversubscription"] = 2;
  CHECK(error_of(doc) == "test.json: cluster.network.oversubscription: not used by a custom network (each of its "
                         "links gives its own gbit_per_s and latency_us)");
  CHECK(error_of(two_leaves(), {"cluster.network.kind=fat-tree"}) ==
        "test.json: cluster.network.switches: only read when cluster.network.kind is \"custom\"");
  doc = two_leaves();
  network(doc).erase("links");
  CHECK(error_of(doc) == "test.json: cluster.network.links: is missing (expected a list of objects)");
}

TEST_CASE("GPUs that must talk but have no path between them are named") {
  // Without the up-links the leaves are apart: stage 0 (GPU 0, node 0) cannot
  // send to stage 1 (GPU 16 = gpu_of(stage 1, replica 0, tensor 0), node 2).
  json doc = two_leaves();
  network(doc)["links"].erase(1);
  CHECK(error_of(doc) == "test.json: cluster.network.links: GPU 0 and GPU 16 must talk (pipeline neighbours: stages "
                         "0 and 1) but no path of links joins them (GPU 0 uses node0.nic0, GPU 16 uses node2.nic0)");
  // One stage, four replicas of 8 GPUs (one per node): GPU 0 and GPU 16 are
  // data-parallel peers. Replicas 0 and 1 share leaf 0, so the first pair
  // apart is (0, 16).
  CHECK(error_of(doc, {"parallel.pp=1", "parallel.dp=4"}) ==
        "test.json: cluster.network.links: GPU 0 and GPU 16 must talk (data-parallel peers in stage 0) but no path of "
        "links joins them (GPU 0 uses node0.nic0, GPU 16 uses node2.nic0)");
  // On two nodes (one leaf) every GPU meets every other: no up-link needed.
  CHECK(error_of(doc, {"cluster.nodes=2", "parallel.dp=1"}) == "");
}

}  // namespace config_custom_network_test
