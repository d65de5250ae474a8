#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "core/engine.hpp"
#include "hw/custom_network.hpp"
#include "hw/topology.hpp"
#include "transfers.hpp"

// The file's own names, kept apart from other test files' where the build
// merges files (TRAINSIM_UNITY_BUILD).
namespace hw_custom_network_test {

using namespace trainsim;
using core::Time;

namespace {

// Nodes of 8 GPUs with one 80 Gb/s (10 GB/s) NIC each, no latency inside a
// node, joined by the given custom network.
hw::ClusterSpec cluster(int nodes, hw::CustomNetwork custom) {
  hw::ClusterSpec c;
  c.nodes = nodes;
  c.node.gpus_per_node = 8;
  c.node.nvlink_gb_per_s = 100;
  c.node.nvlink_latency_us = 0;
  c.node.nics_per_node = 1;
  c.node.nic_gbit_per_s = 80;
  c.node.nic_latency_us = 0;
  c.network.kind = hw::NetworkKind::kCustom;
  c.network.custom = std::move(custom);
  return c;
}

// Four nodes, two per leaf: each NIC on its leaf at 80 Gb/s and 0.5 us; the
// leaves joined by one thin cable of 8 Gb/s (1 GB/s) and 2 us.
hw::ClusterSpec two_leaves() {
  hw::CustomNetwork net;
  net.switches = {"leaf0", "leaf1"};
  for (int n = 0; n < 4; ++n) {
    net.links.push_back({"node" + std::to_string(n) + ".nic0", n < 2 ? "leaf0" : "leaf1", 80, 0.5});
  }
  net.links.push_back({"leaf0", "leaf1", 8, 2});
  return cluster(4, net);
}

std::vector<std::string> route_names(const hw::ClusterSpec& c, int from, int to) {
  hw::FlowNetwork net;
  hw::Topology topo(c, net);
  std::vector<std::string> names;
  for (hw::LinkId l : topo.route_links(from, to)) names.push_back(topo.link_name(l));
  return names;
}

using test::transfers;

}  // namespace

TEST_CASE("a custom network has the nodes' own cables and the listed ones") {
  const hw::ClusterSpec c = two_leaves();
  hw::FlowNetwork net;
  hw::Topology topo(c, net);
  // Per node 8 GPU-NVSwitch and 8 GPU-NIC cables: 64; listed: 4 NIC-leaf and
  // 1 leaf-leaf. Each cable is two links: 2 x 69.
  CHECK(net.link_count() == 138);
  // Vertices: 2 switches, and per node 8 GPUs, an NVSwitch and a NIC.
  CHECK(boost::num_vertices(topo.graph()) == 2 + 4 * 10);
  std::vector<std::string> listed;
  for (hw::LinkId l = 0; l < net.link_count(); ++l) {
    const std::string name = topo.link_name(l);
    if (name.find("leaf") != std::string::npos) listed.push_back(name);
  }
  CHECK(listed == std::vector<std::string>{"node0.nic0->leaf0", "leaf0->node0.nic0", "node1.nic0->leaf0",
                                           "leaf0->node1.nic0", "node2.nic0->leaf1", "leaf1->node2.nic0",
                                           "node3.nic0->leaf1", "leaf1->node3.nic0", "leaf0->leaf1", "leaf1->leaf0"});
}

TEST_CASE("routes on a custom network follow its cables, and keep every cable in the route") {
  const hw::ClusterSpec c = two_leaves();
  // Same leaf: NIC, leaf, NIC.
  CHECK(route_names(c, 0, 8) ==
        std::vector<std::string>{"gpu0->node0.nic0", "node0.nic0->leaf0", "leaf0->node1.nic0", "node1.nic0->gpu8"});
  // Across: the thin cable stays in the route (nothing says it cannot limit a flow).
  CHECK(route_names(c, 0, 16) == std::vector<std::string>{"gpu0->node0.nic0", "node0.nic0->leaf0", "leaf0->leaf1",
                                                          "leaf1->node2.nic0", "node2.nic0->gpu16"});
  // Inside a node: the NVSwitch, as on every network.
  CHECK(route_names(c, 0, 1) == std::vector<std::string>{"gpu0->node0.nvswitch", "node0.nvswitch->gpu1"});
  hw::FlowNetwork net;
  hw::Topology topo(c, net);
  // Latency: 0.5 (NIC-leaf) + 2 (leaf-leaf) + 0.5 (leaf-NIC) = 3 us.
  CHECK(net.route(topo.route(0, 16)).latency == Time::microseconds(3));
  CHECK(topo.link_class(topo.route_links(0, 16)[1]) == hw::LinkClass::kNic);
  CHECK(topo.link_class(topo.route_links(0, 16)[2]) == hw::LinkClass::kUplink);
}

TEST_CASE("a transfer across a thin cable takes bytes / its bandwidth + the route's latency") {
  const hw::ClusterSpec c = two_leaves();
  // Across leaves: 1e6 B at 1 GB/s = 1000 us, + 3 us of latency.
  CHECK(transfers(c, {{0, 16}})[0] == doctest::Approx(1003).scale(0));
  // Two at once share the cable: 0.5 GB/s each, 2000 + 3 us.
  for (double end : transfers(c, {{0, 16}, {8, 24}})) CHECK(end == doctest::Approx(2003).scale(0));
  // Inside a leaf the NICs limit: 1e6 B at 10 GB/s = 100 us, + 1 us.
  CHECK(transfers(c, {{0, 8}})[0] == doctest::Approx(101).scale(0));
}

TEST_CASE("routes may cross another node's NIC, so every node is built") {
  // A chain without switches: node0.nic0 - node1.nic0 - node2.nic0.
  hw::CustomNetwork chain;
  chain.links = {{"node0.nic0", "node1.nic0", 80, 0}, {"node1.nic0", "node2.nic0", 80, 0}};
  const hw::ClusterSpec c = cluster(3, chain);
  hw::FlowNetwork net;
  hw::Topology topo(c, net, {0, 16});  // node 1 holds neither GPU, yet carries the route
  std::vector<std::string> names;
  for (hw::LinkId l : topo.route_links(0, 16)) names.push_back(topo.link_name(l));
  CHECK(names == std::vector<std::string>{"gpu0->node0.nic0", "node0.nic0->node1.nic0", "node1.nic0->node2.nic0",
                                          "node2.nic0->gpu16"});
}

TEST_CASE("GPUs a custom network leaves apart cannot reach each other") {
  hw::ClusterSpec c = two_leaves();
  c.network.custom.links.pop_back();  // no leaf-leaf cable
  hw::FlowNetwork net;
  hw::Topology topo(c, net);
  const hw::GpuReach reach(topo);
  CHECK(reach.connected(0, 1));   // same node: the NVSwitch
  CHECK(reach.connected(0, 8));   // same leaf
  CHECK(reach.connected(8, 0));
  CHECK_FALSE(reach.connected(0, 16));
  CHECK_FALSE(reach.connected(31, 15));
  CHECK_THROWS_AS(topo.route(0, 16), std::runtime_error);
  // With the cable back, all meet.
  hw::FlowNetwork net2;
  hw::Topology whole(two_leaves(), net2);
  CHECK(hw::GpuReach(whole).connected(0, 16));
}

TEST_CASE("a GPU forwards no traffic when reach is judged") {
  // gpu0 has a cable of its own to leaf0; node 1's NIC is on leaf0. gpu1
  // (same node as gpu0) cannot borrow gpu0's cable: only gpu0 reaches node 1.
  hw::CustomNetwork net;
  net.switches = {"leaf0"};
  net.links = {{"gpu0", "leaf0", 80, 0}, {"node1.nic0", "leaf0", 80, 0}};
  hw::FlowNetwork flows;
  hw::Topology topo(cluster(2, net), flows);
  const hw::GpuReach reach(topo);
  CHECK(reach.connected(0, 8));
  CHECK_FALSE(reach.connected(1, 8));
}

TEST_CASE("a custom network that names what does not exist is refused") {
  hw::ClusterSpec c = two_leaves();
  hw::FlowNetwork net;
  c.network.custom.links.push_back({"leaf0", "leaf9", 8, 0});
  CHECK_THROWS_AS((void)hw::Topology(c, net), std::invalid_argument);
  c = two_leaves();
  c.network.custom.switches.push_back("leaf0");
  CHECK_THROWS_AS((void)hw::Topology(c, net), std::invalid_argument);
  c = two_leaves();
  c.network.custom.links[0].gbit_per_s = 0;
  CHECK_THROWS_AS((void)hw::Topology(c, net), std::invalid_argument);
  c = two_leaves();
  c.network.custom.links[0].latency_us = -1;
  CHECK_THROWS_AS((void)hw::Topology(c, net), std::invalid_argument);
}

TEST_CASE("node vertex names read back as Topology spells them") {
  const hw::ClusterSpec c = two_leaves();
  hw::FlowNetwork net;
  hw::Topology topo(c, net);
  int checked = 0;
  for (std::size_t v = 0; v < boost::num_vertices(topo.graph()); ++v) {
    const hw::Topology::Vertex& x = topo.graph()[v];
    if (x.kind == hw::VertexKind::kSwitch) {
      CHECK_FALSE(hw::node_vertex(topo.vertex_name(v), c));
      continue;
    }
    const auto back = hw::node_vertex(topo.vertex_name(v), c);
    REQUIRE(back);
    CHECK(back->kind == x.kind);
    CHECK(back->a == x.a);
    CHECK(back->b == x.b);
    ++checked;
  }
  CHECK(checked == 40);
  for (const char* wrong : {"gpu32", "gpu03", "gpu", "gpu-1", "node4.nic0", "node0.nic1", "node0.nvswitch2", "node0",
                            "gpu99999999999"}) {
    CAPTURE(wrong);
    CHECK_FALSE(hw::node_vertex(wrong, c));
  }
  CHECK(hw::node_vertex_ranges(c) == "gpu0 to gpu31, node0.nvswitch to node3.nvswitch, node0.nic0 to node3.nic0");
  CHECK(hw::node_vertex_names(c, 1).size() == 10);
}

TEST_CASE("placeholders repeat an entry over nodes and NICs") {
  // 4 nodes x 2 NICs, leaf by node pair.
  const auto f = hw::fill_placeholders({"node{n}.nic{i}", "leaf{n/2}"}, 4, 2, 100);
  REQUIRE(f.size() == 8);
  CHECK(f[0].texts == std::vector<std::string>{"node0.nic0", "leaf0"});
  CHECK(f[1].texts == std::vector<std::string>{"node0.nic1", "leaf0"});
  CHECK(f[5].texts == std::vector<std::string>{"node2.nic1", "leaf1"});
  CHECK(f[5].node == 2);
  CHECK(f[5].nic == 1);
  // Each leaf's up-link once, though four nodes name two leaves.
  const auto up = hw::fill_placeholders({"leaf{n/2}", "spine"}, 4, 2, 100);
  REQUIRE(up.size() == 2);
  CHECK(up[1].texts == std::vector<std::string>{"leaf1", "spine"});
  CHECK(up[1].nic == -1);
  // Modulo: rails by NIC index; no placeholder: one filling.
  CHECK(hw::fill_placeholders({"rail{i%2}"}, 4, 4, 100).size() == 2);
  CHECK(hw::fill_placeholders({"leaf0", "leaf1"}, 4, 4, 100).size() == 1);
  for (const char* bad : {"leaf{k}", "leaf{n/0}", "leaf{n", "leaf}", "leaf{}", "leaf{n*2}", "leaf{n/2x}"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(hw::fill_placeholders({bad}, 4, 2, 100), std::invalid_argument);
  }
  CHECK_THROWS_AS(hw::fill_placeholders({"node{n}.nic{i}"}, 64, 8, 100), std::invalid_argument);
}

}  // namespace hw_custom_network_test
